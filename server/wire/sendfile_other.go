//go:build !linux

package wire

import (
	"sync/atomic"
	"syscall"
)

// sendfileRegions stays 0: there is no sendfile path here.
var sendfileRegions atomic.Int64

// sendFileRegion is not available off Linux; regions are copied instead.
func sendFileRegion(syscall.RawConn, FileRegion) (handled bool, err error) {
	return false, nil
}

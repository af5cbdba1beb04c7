//go:build !linux

package wire

import "syscall"

// sendFileRegion is not available off Linux; regions are copied instead.
func sendFileRegion(syscall.RawConn, FileRegion, regionCount) (handled bool, err error) {
	return false, nil
}

//go:build !unix

package wire

import (
	"errors"
	"syscall"
)

// bindEphemeral is not done here: the Client's connections count as any
// client's.
func bindEphemeral(string, syscall.RawConn) (int, error) {
	return 0, errors.ErrUnsupported
}

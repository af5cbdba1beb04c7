package wire

import (
	"fmt"
	"syscall"
)

// sendFileRegion sends r to the socket behind raw with sendfile(2), passing
// an explicit offset so the file's shared position is neither used nor moved
// (concurrent senders of one file stay independent). It waits for the socket
// to become writable through the runtime poller, so the connection's write
// deadline applies. handled is false, with nothing sent, if the file has no usable descriptor or
// the kernel cannot sendfile from it.
func sendFileRegion(raw syscall.RawConn, r FileRegion, count regionCount) (handled bool, err error) {
	fraw, err := r.File.SyscallConn()
	if err != nil {
		return false, nil
	}
	off, left := r.Offset, r.Length
	var sendErr error
	var fallback bool
	ctlErr := fraw.Control(func(ffd uintptr) {
		werr := raw.Write(func(sfd uintptr) bool {
			for left > 0 {
				n, err := syscall.Sendfile(int(sfd), int(ffd), &off, int(min(left, 1<<30)))
				count.sendfileCall()
				if n > 0 {
					left -= int64(n)
				}
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					return false // socket buffer full: wait for writability
				case err != nil && left == r.Length && (err == syscall.EINVAL || err == syscall.ENOSYS || err == syscall.EOPNOTSUPP):
					fallback = true // this file cannot be sent with sendfile; copy it
					return true
				case err != nil:
					sendErr = fmt.Errorf("sendfile: %w", err)
					return true
				case n == 0:
					sendErr = fmt.Errorf("file region %s [%d, %d) ends past the end of the file", r.File.Name(), r.Offset, r.Offset+r.Length)
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = werr
		}
	})
	if ctlErr != nil {
		return true, ctlErr
	}
	if fallback {
		return false, nil
	}
	count.sent(r.Length - left)
	return true, sendErr
}

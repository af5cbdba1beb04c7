//go:build unix

package wire

import "syscall"

// bindEphemeral binds a socket not yet connected to the wildcard address
// and an ephemeral port of network's family, and returns the port.
func bindEphemeral(network string, rc syscall.RawConn) (port int, err error) {
	var sa syscall.Sockaddr = &syscall.SockaddrInet4{}
	if network == "tcp6" {
		sa = &syscall.SockaddrInet6{}
	}
	cerr := rc.Control(func(fd uintptr) {
		if err = syscall.Bind(int(fd), sa); err != nil {
			return
		}
		var got syscall.Sockaddr
		if got, err = syscall.Getsockname(int(fd)); err != nil {
			return
		}
		switch a := got.(type) {
		case *syscall.SockaddrInet4:
			port = a.Port
		case *syscall.SockaddrInet6:
			port = a.Port
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return port, err
}

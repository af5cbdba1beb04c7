package wire

import (
	"context"
	"net"
	"sync"
	"syscall"
)

// The lab's own connections: a Client dialing with the default dialer (a
// follower fetching from its leader, the lab reading a partition) binds its
// socket to an ephemeral port before it connects and records that port
// here, so the listener it reaches knows the connection for this process's
// own from its first moment. A listener admits them past
// max.connections.per.ip and while the process is short of descriptors:
// they are the brokers' reserve, as Kafka exempts its inter-broker listener
// from max.connections. A port bound explicitly is the host's alone (no
// other socket may bind or connect from it while it is held), so no other
// process can pass for one of these connections.
var ownPorts = struct {
	sync.Mutex
	m map[int]int
}{m: map[int]int{}}

func markOwn(port int, add int) {
	ownPorts.Lock()
	if ownPorts.m[port] += add; ownPorts.m[port] <= 0 {
		delete(ownPorts.m, port)
	}
	ownPorts.Unlock()
}

// isOwn reports whether a connection from remote was dialed by this
// process's Client: a loopback address from a port it recorded.
func isOwn(remote net.Addr) bool {
	a, ok := remote.(*net.TCPAddr)
	if !ok || !a.IP.IsLoopback() {
		return false
	}
	ownPorts.Lock()
	defer ownPorts.Unlock()
	return ownPorts.m[a.Port] > 0
}

// ownConn forgets its port when closed.
type ownConn struct {
	net.Conn
	port int
	once sync.Once
}

func (c *ownConn) Close() error {
	c.once.Do(func() { markOwn(c.port, -1) })
	return c.Conn.Close()
}

// dialOwn is the Client's default dialer: net.Dialer, the socket bound to
// an ephemeral port (recorded) before it connects. When no port can be
// bound (the host out of them), it dials as net.Dialer does and the
// connection counts as any client's.
func dialOwn(ctx context.Context, network, addr string) (net.Conn, error) {
	var mu sync.Mutex
	var ports []int // one per attempt (an address may resolve to several)
	d := net.Dialer{ControlContext: func(_ context.Context, network, _ string, rc syscall.RawConn) error {
		if port, err := bindEphemeral(network, rc); err == nil {
			markOwn(port, 1)
			mu.Lock()
			ports = append(ports, port)
			mu.Unlock()
		}
		return nil
	}}
	c, err := d.DialContext(ctx, network, addr)
	mu.Lock()
	defer mu.Unlock()
	kept := 0
	if err == nil {
		if a, ok := c.LocalAddr().(*net.TCPAddr); ok {
			kept = a.Port
		}
	}
	own := false
	for _, p := range ports {
		if p == kept && !own {
			own = true
			continue
		}
		markOwn(p, -1)
	}
	if err != nil || !own {
		return c, err
	}
	return &ownConn{Conn: c, port: kept}, nil
}

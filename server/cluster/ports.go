package cluster

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// freeListenAddr picks a loopback address for a broker when the lab was
// given no port: a free port below the host's ephemeral range. A crashed
// broker restarts on the port it had, and while it is down any outgoing
// connection (a follower's fetch, a client) may be given that very port if
// it lies in the ephemeral range; below it only an explicit bind can take
// it. Without such a port it lets the kernel choose.
func freeListenAddr() string {
	lo, hi := 20000, ephemeralLow()
	if hi-lo < 1000 {
		return "127.0.0.1:0"
	}
	for range 64 {
		addr := "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	return "127.0.0.1:0"
}

// ephemeralLow is the first port of the host's ephemeral range (Linux's
// default 32768 where the kernel does not say; other systems start higher).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

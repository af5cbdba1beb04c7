package cluster

import (
	"sort"
	"sync"
	"time"
)

// ControllerNode is the controller's id in network links: a link between a
// broker and node 0 is the broker's link to the controller.
const ControllerNode int32 = 0

// Link is a directed link between two nodes.
type Link struct {
	From int32 `json:"from"`
	To   int32 `json:"to"`
}

// Network is the lab's simulated network between brokers and the controller.
// The bytes still travel over real TCP on loopback; a cut link makes senders
// drop what would cross it, a delay makes them wait before sending.
type Network struct {
	mu     sync.Mutex
	cut    map[Link]bool
	delays map[Link]time.Duration
}

// NewNetwork returns a network with every link up.
func NewNetwork() *Network {
	return &Network{cut: map[Link]bool{}, delays: map[Link]time.Duration{}}
}

// Allowed reports whether traffic from one node reaches another.
func (n *Network) Allowed(from, to int32) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.cut[Link{from, to}]
}

// Delay returns how long a request from one node to another waits first.
func (n *Network) Delay(from, to int32) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.delays[Link{from, to}]
}

// Cut cuts the link from→to, and to→from as well unless oneWay.
func (n *Network) Cut(from, to int32, oneWay bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[Link{from, to}] = true
	if !oneWay {
		n.cut[Link{to, from}] = true
	}
}

// SetDelay makes requests from→to wait d before they are sent (0 removes it).
func (n *Network) SetDelay(from, to int32, d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d <= 0 {
		delete(n.delays, Link{from, to})
	} else {
		n.delays[Link{from, to}] = d
	}
}

// DelayLink makes messages from→to, and to→from as well unless oneWay,
// wait d of lab time (0 removes the delay); Heal removes it too.
// INVALID_REQUEST for a node the lab does not have.
func (c *Cluster) DelayLink(from, to int32, d time.Duration, oneWay bool) error {
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	c.network.SetDelay(from, to, d)
	if !oneWay {
		c.network.SetDelay(to, from, d)
	}
	return nil
}

// Heal restores every link and removes every delay.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = map[Link]bool{}
	n.delays = map[Link]time.Duration{}
}

// Cuts lists the links that are cut, sorted.
func (n *Network) Cuts() []Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Link, 0, len(n.cut))
	for l := range n.cut {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].From < out[j].From || out[i].From == out[j].From && out[i].To < out[j].To
	})
	return out
}

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
	// cuts counts each link's cuts (Heal keeps them): a message in flight
	// on a delayed link is lost if its link was cut since it left, even if
	// healed again before it arrives (departure, arrives).
	cuts map[Link]uint64
}

// NewNetwork returns a network with every link up.
func NewNetwork() *Network {
	return &Network{cut: map[Link]bool{}, delays: map[Link]time.Duration{}, cuts: map[Link]uint64{}}
}

// departure is a message leaving over a link: the link and how many times
// it had been cut then.
type departure struct {
	link Link
	cuts uint64
}

// depart records a message leaving from→to now; false if the link is cut
// (the message is lost at once).
func (n *Network) depart(from, to int32) (departure, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l := Link{from, to}
	return departure{l, n.cuts[l]}, !n.cut[l]
}

// arrives reports whether a message that left at d reaches the other end
// now: its link is up and was not cut meanwhile.
func (n *Network) arrives(d departure) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.cut[d.link] && n.cuts[d.link] == d.cuts
}

// delayed reports whether any link has a delay.
func (n *Network) delayed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.delays) > 0
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
	n.cuts[Link{from, to}]++
	if !oneWay {
		n.cut[Link{to, from}] = true
		n.cuts[Link{to, from}]++
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

// carry sends a message from→to over the lab's links: arrive runs when it
// reaches the other end, the link's delay of lab time later (the delay
// line), with ok false if the link was cut when it left or since (it is
// lost); on a link without a delay at once, in the caller.
func (c *Cluster) carry(from, to int32, arrive func(ok bool)) {
	if c.network.Delay(from, to) <= 0 || !c.sendDelayed(from, to, arrive) {
		arrive(c.network.Allowed(from, to))
	}
}

// sendDelayed puts a message from→to on the delay line for the link's
// delay (none: the next delivery): arrive runs when it arrives, with ok
// false if the link was cut meanwhile. False, and arrive never runs, if
// the link is cut now.
func (c *Cluster) sendDelayed(from, to int32, arrive func(ok bool)) bool {
	dep, ok := c.network.depart(from, to)
	if !ok {
		return false
	}
	c.linkDelays.add(c.network.Delay(from, to), dep.link, func() { arrive(c.network.arrives(dep)) })
	return true
}

// MessagesInFlight counts the messages on their way over delayed links
// (Raft, pipeline, stepped fetches, controller calls): a paused lab's
// steps deliver them.
func (c *Cluster) MessagesInFlight() int { return c.linkDelays.inFlight() }

// InFlightBetween reports whether anything is on its way over a delayed
// link between nodes a and b, either way.
func (c *Cluster) InFlightBetween(a, b int32) bool { return c.linkDelays.between(a, b) }

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

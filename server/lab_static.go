package server

import (
	"net"
	"strconv"
	"sync"

	"tidemark/events"
)

// staticLab is a TEMPORARY stand-in for the broker cluster, so the web UI and
// its websocket work end to end before the cluster exists. It holds the
// Snapshot a fresh cluster would show (brokers up, topic demo with 3
// partitions) and a Bus; publish changes both under one lock, the contract
// web.Lab asks of the real cluster. Delete it when the cluster lands.
type staticLab struct {
	mu   sync.Mutex // guards snap; held across Publish so Seq and state agree
	snap events.Snapshot
	bus  *events.Bus
}

func newStaticLab(cfg config) *staticLab {
	s := events.Snapshot{Controller: 1}
	for i := 1; i <= cfg.brokers; i++ {
		s.Brokers = append(s.Brokers, events.Broker{
			ID:       int32(i),
			State:    events.BrokerUp,
			Listener: net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.kafkaPort+i-1)),
		})
	}
	// Topic demo: 3 partitions, replication factor min(3, brokers), leaders
	// spread round-robin as Kafka's default assignment does.
	rf := min(3, cfg.brokers)
	t := events.Topic{Name: "demo", Configs: map[string]string{"min.insync.replicas": strconv.Itoa(min(2, rf))}}
	for p := range 3 {
		part := events.Partition{Partition: int32(p), LeaderEpoch: 0}
		for r := range rf {
			id := int32((p+r)%cfg.brokers + 1)
			part.Replicas = append(part.Replicas, id)
			part.ReplicaLogs = append(part.ReplicaLogs, events.Replica{Broker: id})
		}
		part.Leader = part.Replicas[0]
		part.ISR = append([]int32(nil), part.Replicas...)
		t.Partitions = append(t.Partitions, part)
	}
	s.Topics = []events.Topic{t}
	return &staticLab{snap: s, bus: events.NewBus(events.BusOptions{})}
}

// Snapshot returns a copy of the current state.
func (l *staticLab) Snapshot() events.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap.Clone()
}

// Bus returns the lab's event bus.
func (l *staticLab) Bus() *events.Bus { return l.bus }

// publish publishes e and applies it to the snapshot, atomically.
func (l *staticLab) publish(e events.Event) events.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	e = l.bus.Publish(e)
	l.snap.Apply(e)
	return e
}

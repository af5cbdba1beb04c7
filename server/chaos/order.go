package chaos

import (
	"tidemark/events"
	"tidemark/invariant"
)

// Disorder is an event that came out of the order its replica made it in:
// a leader's HW lower than one it reported earlier in the same leadership
// (Kind "hw-backwards"), or a replica's event published after a later one
// of the same replica (Kind "out-of-order", Order its place and Previous
// the later event's).
type Disorder struct {
	Kind      string `json:"kind"`
	Seq       uint64 `json:"seq"`
	Broker    int32  `json:"broker"`
	Partition int32  `json:"partition"`
	// LeaderEpoch is the leadership's epoch (hw-backwards).
	LeaderEpoch int32 `json:"leader_epoch,omitempty"`
	// From and To are the HW before and after (hw-backwards).
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
	// Order and Previous are the replica's sequence of this event and of
	// the one published before it (out-of-order).
	Order    uint64 `json:"order,omitempty"`
	Previous uint64 `json:"previous,omitempty"`
}

// The kinds of Disorder.
const (
	DisorderHWBackwards = "hw-backwards"
	DisorderOutOfOrder  = "out-of-order"
)

// EventOrder checks one topic's event stream as it is published: within a
// leadership (from the controller's election of a leader to the next
// election of the partition), the leader's hw events never go back, unless
// the leader stopped or truncated its log meanwhile; and each replica's
// events (Event.Order, given by the replica under its lock) come in the
// order it made them. Feed it every event in bus order with Add.
type EventOrder struct {
	Topic string
	// Found is every disorder seen so far, in bus order.
	Found []Disorder

	leaders invariant.Leaderships
	order   map[replicaKey]uint64 // the last Order seen of each replica
}

// Add takes in events in the order the bus published them.
func (o *EventOrder) Add(evs ...events.Event) {
	if o.order == nil {
		o.order = map[replicaKey]uint64{}
	}
	for i := range evs {
		e := &evs[i]
		if e.Topic == "" {
			if e.Kind == events.KindFault && e.Broker != events.NoBroker {
				o.leaders.Forget(e.Broker) // a stopped or restarted broker's HW starts again from its checkpoint
			}
			continue
		}
		if e.Topic != o.Topic {
			continue
		}
		k := replicaKey{e.Broker, e.Partition}
		if e.Order != 0 {
			if last := o.order[k]; e.Order < last {
				o.Found = append(o.Found, Disorder{Kind: DisorderOutOfOrder, Seq: e.Seq, Broker: e.Broker, Partition: e.Partition, Order: e.Order, Previous: last})
			} else {
				o.order[k] = e.Order
			}
		}
		switch e.Kind {
		case events.KindTopic:
			o.leaders.Reset()
		case events.KindElection:
			if e.Leader != nil {
				o.leaders.Elected(e.Partition, e.Leader.Leader, e.Leader.LeaderEpoch)
			}
		case events.KindTruncation:
			o.leaders.Truncated(e.Broker, e.Partition)
		case events.KindHW:
			if e.Offsets == nil {
				continue
			}
			if back, last, epoch := o.leaders.HW(e.Broker, e.Partition, e.Offsets.HW); back {
				o.Found = append(o.Found, Disorder{Kind: DisorderHWBackwards, Seq: e.Seq, Broker: e.Broker, Partition: e.Partition,
					LeaderEpoch: epoch, From: last, To: e.Offsets.HW})
			}
		}
	}
}

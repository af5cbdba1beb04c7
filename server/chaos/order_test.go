package chaos

import (
	"testing"

	"tidemark/events"
)

func hwEvent(seq uint64, broker int32, hw int64, order uint64) events.Event {
	return events.Event{Seq: seq, Kind: events.KindHW, Broker: broker, Topic: "t", Offsets: &events.Offsets{HW: hw}, Order: order}
}

func electionEvent(seq uint64, leader, epoch int32) events.Event {
	return events.Event{Seq: seq, Kind: events.KindElection, Broker: events.NoBroker, Topic: "t",
		Leader: &events.Leadership{Leader: leader, LeaderEpoch: epoch}}
}

func TestEventOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		evs  []events.Event
		want []Disorder
	}{
		{name: "leader's HW goes back in its leadership",
			evs:  []events.Event{electionEvent(1, 2, 3), hwEvent(2, 2, 1598, 0), hwEvent(3, 2, 1597, 0)},
			want: []Disorder{{Kind: DisorderHWBackwards, Seq: 3, Broker: 2, LeaderEpoch: 3, From: 1598, To: 1597}}},
		{name: "a new leadership starts again",
			evs: []events.Event{electionEvent(1, 2, 3), hwEvent(2, 2, 1598, 0), electionEvent(3, 2, 4), hwEvent(4, 2, 1590, 0)}},
		{name: "a follower's HW is not checked",
			evs: []events.Event{electionEvent(1, 1, 3), hwEvent(2, 2, 1598, 0), hwEvent(3, 2, 1597, 0)}},
		{name: "a leader that stopped starts from its checkpoint",
			evs: []events.Event{electionEvent(1, 2, 3), hwEvent(2, 2, 1598, 0),
				{Seq: 3, Kind: events.KindFault, Broker: 2, Fault: &events.Fault{Kind: events.FaultPowerLoss}}, hwEvent(4, 2, 1500, 0)}},
		{name: "a replica's events out of its order",
			evs:  []events.Event{hwEvent(1, 1, 5, 10), hwEvent(2, 1, 6, 12), hwEvent(3, 1, 5, 11), hwEvent(4, 2, 5, 9)},
			want: []Disorder{{Kind: DisorderOutOfOrder, Seq: 3, Broker: 1, Order: 11, Previous: 12}}},
		{name: "another topic is not this one's",
			evs: []events.Event{electionEvent(1, 2, 3), hwEvent(2, 2, 1598, 0), {Seq: 3, Kind: events.KindHW, Broker: 2, Topic: "u", Offsets: &events.Offsets{HW: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := EventOrder{Topic: "t"}
			for _, e := range tc.evs {
				o.Add(e)
			}
			if len(o.Found) != len(tc.want) {
				t.Fatalf("found %+v, want %+v", o.Found, tc.want)
			}
			for i := range tc.want {
				if o.Found[i] != tc.want[i] {
					t.Fatalf("found %+v, want %+v", o.Found[i], tc.want[i])
				}
			}
			if c := Check(Input{Disorders: o.Found}).Counts(); c.EventsOutOfOrder != len(tc.want) || c.Violations() != len(tc.want) {
				t.Fatalf("counts %+v: want %d events out of order, as violations", c, len(tc.want))
			}
		})
	}
}

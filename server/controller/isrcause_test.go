package controller

import (
	"slices"
	"testing"

	"tidemark/events"
	"tidemark/replication"
)

// lastISRChanges returns the causes of the last ISR event since seq.
func lastISRChanges(t *testing.T, l *lab, seq uint64) []events.ISRChange {
	t.Helper()
	evs := l.eventsSince(seq)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == events.KindISR {
			return evs[i].ISRChanges
		}
	}
	t.Fatalf("no ISR event in %+v", evs)
	return nil
}

// TestISRCausesFromTheController: the controller's ISR events carry why
// a replica left: fenced on request, a new incarnation of its broker
// (KIP-903), into the ELR below min.insync.replicas and out of it when
// the ISR is back (KIP-966), an unclean restart; a leader's proposal
// carries the rules' own causes through.
func TestISRCausesFromTheController(t *testing.T) {
	l := newRuleLab(t, FencingKRaftELR)
	l.start(1, 2, 3)
	l.create("t", 1, 3, map[string]string{"min.insync.replicas": "2"})

	seq := l.bus.LastSeq()
	l.c.FenceBroker(3)
	if got := lastISRChanges(t, l, seq); !slices.Equal(got, []events.ISRChange{{Cause: events.ISRFenced, Broker: 3}}) {
		t.Errorf("fenced: %+v", got)
	}
	seq = l.bus.LastSeq()
	l.c.FenceBroker(2) // the ISR falls below min.insync.replicas: 2 joins the ELR
	if got := lastISRChanges(t, l, seq); !slices.Equal(got, []events.ISRChange{{Cause: events.ISRFenced, Broker: 2, ToELR: true}}) {
		t.Errorf("fenced into the ELR: %+v", got)
	}

	// Broker 1 restarts within its session: a new incarnation leaves
	// the ISR (its last member, under kraft-elr) until it catches up.
	seq = l.bus.LastSeq()
	ep, err := l.c.Register(Registration{ID: 1, Listener: "x", CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	l.epochs[1] = ep
	var restarted []events.ISRChange
	for _, e := range l.eventsSince(seq) {
		restarted = append(restarted, e.ISRChanges...)
	}
	if !slices.ContainsFunc(restarted, func(c events.ISRChange) bool { return c.Cause == events.ISRRestarted && c.Broker == 1 }) {
		t.Errorf("restarted: changes %+v, want broker 1 restarted", restarted)
	}

	// A leader's proposal: the rules' causes reach the event as they are.
	l2 := newRuleLab(t, FencingKRaft)
	l2.start(1, 2, 3)
	l2.create("t", 1, 3, nil)
	p := l2.part("t", 0)
	lag := []events.ISRChange{{Cause: events.ISRLagged, Broker: 3, LagMs: 30500, MaxLagMs: 30000}}
	seq = l2.bus.LastSeq()
	resp := l2.c.AlterPartition("t", 0, p.Leader, l2.epochs[p.Leader], replication.AlterPartitionRequest{
		BrokerID: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2}, Changes: lag})
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	if got := lastISRChanges(t, l2, seq); !slices.Equal(got, lag) {
		t.Errorf("proposal: %+v, want %+v", got, lag)
	}
}

package lessons

import (
	"slices"

	"tidemark/invariant"
)

// The durability checker (package invariant's Final, which the chaos
// checker uses too) as a scenario's second judge: at each expect line and
// at the end of a run it compares what the producers were told with what
// a consumer of the leader reads and what every replica holds, and names
// what it finds as expect lines do. It sees what the watchers do not: a
// value written twice (duplicated), one found at another offset
// (wrong-offset), one acknowledged but unreadable without being lost (the
// partition offline, or the leader's HW below it).

// findings runs the checker and names its findings: "lost m2",
// "duplicated m1", "wrong-offset m1", "unreadable m1", "diverged 1".
func (d Durable) findings() []string {
	f := invariant.Final{Snapshot: invariant.Snapshot{Topic: d.Topic, NowMs: d.NowMs, Writes: d.Writes, Replicas: d.Replicas}, Offline: d.Leader < 0}
	for _, r := range d.Replicas {
		if r.Leader {
			for _, x := range r.Records {
				if x.Offset < r.HW {
					f.Consumed = append(f.Consumed, x)
				}
			}
		}
	}
	var out []string
	for _, w := range d.Writes {
		j := f.Judge(w)
		if j.Duplicated {
			out = append(out, invariant.Duplicated+" "+w.Value)
		}
		if j.Kind != "" {
			out = append(out, j.Kind+" "+w.Value)
		}
	}
	for _, v := range f.Diverged() {
		out = append(out, v.Key())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// durableOf is a topic's state on the lab cluster.
func (e *Env) durableOf(topic string) Durable {
	s := e.snapshot(topic)
	d := Durable{Leader: -1, Topic: s.Topic, NowMs: s.NowMs, Writes: s.Writes}
	m := e.Meta(topic)
	d.LeaderEpoch, d.ISR, d.Assigned = m.LeaderEpoch, m.ISR, m.Replicas
	for _, id := range e.c.BrokerIDs() {
		st, ok := e.Status(id, topic)
		recs, readable := e.readRecords(id, topic, 0)
		if !ok || !readable {
			continue
		}
		r := invariant.Replica{Broker: id, Leader: id == m.Leader, LogStart: st.LogStartOffset, HW: st.HighWatermark, LEO: st.LogEndOffset, Records: recs}
		if r.Leader {
			d.Leader = id
		}
		d.Replicas = append(d.Replicas, r)
	}
	for _, r := range d.Replicas {
		if r.Leader && len(e.txns) > 0 { // a read_committed fetch at the HW answers the LSO
			if _, _, lso, err := e.fetchIsolated(topic, r.HW, true); err == nil {
				d.LSO, d.HasLSO = lso, true
			}
		}
	}
	return d
}

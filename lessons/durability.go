package lessons

import (
	"fmt"
	"slices"
	"strings"

	"tidemark/server/chaos"
)

// The chaos durability checker (server/chaos) as a scenario's second
// judge: at each expect line and at the end of a run it compares what the
// producers were told with what a consumer of the leader reads and what
// every replica holds, and names what it finds as expect lines do. It sees
// what the watchers do not: a value written twice (duplicated), one found
// at another offset (wrong-offset), one acknowledged but unreadable
// without being lost (the partition offline, or the leader's HW below it).

// findings runs the checker and names its findings: "lost m2",
// "duplicated m1", "wrong-offset m1", "unreadable m1", "diverged 1".
func (d Durable) findings() []string {
	final := chaos.Final{Consumed: map[int32][]chaos.Rec{}, Replicas: map[int32][]chaos.ReplicaLog{0: d.Replicas}}
	if d.Leader < 0 {
		final.Offline = []int32{0}
	}
	for _, r := range d.Replicas {
		if r.Leader {
			for _, x := range r.Records {
				if x.Offset < r.HW {
					final.Consumed[0] = append(final.Consumed[0], x)
				}
			}
		}
	}
	rep := chaos.Check(chaos.Input{Writes: d.Writes, Final: final, Topic: d.Topic, NowMs: d.NowMs})
	var out []string
	for _, l := range append(rep.Lost, rep.UnsyncedLost...) {
		out = append(out, "lost "+l.Write.Value)
	}
	for _, x := range rep.Duplicated {
		out = append(out, "duplicated "+x.Write.Value)
	}
	for _, x := range rep.WrongOffset {
		out = append(out, "wrong-offset "+x.Write.Value)
	}
	for _, w := range rep.Unreadable {
		out = append(out, "unreadable "+w.Value)
	}
	for _, x := range rep.ReplicasDiffer {
		out = append(out, fmt.Sprintf("diverged %d", x.Offset))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// durableOf is a topic's state on the lab cluster.
func (e *Env) durableOf(topic string) Durable {
	d := Durable{Leader: -1, Topic: e.topicConfig(topic), NowMs: e.c.Clock().Now().UnixMilli()}
	for key := range e.results {
		v, ok := strings.CutPrefix(key, topic+"/")
		if !ok {
			continue
		}
		r, _ := e.result(topic, v)
		acked := r.answered && r.err == nil && r.offset >= 0
		w := chaos.Write{Value: v, Acked: acked, Offset: -1, Key: r.key, Tombstone: r.tombstone, Timestamp: r.sentMs}
		if acked {
			w.Offset = r.offset
		}
		d.Writes = append(d.Writes, w)
	}
	m := e.Meta(topic)
	d.LeaderEpoch, d.ISR, d.Assigned = m.LeaderEpoch, m.ISR, m.Replicas
	for _, id := range e.c.BrokerIDs() {
		st, ok := e.Status(id, topic)
		recs, readable := e.readRecords(id, topic, 0)
		if !ok || !readable {
			continue
		}
		rl := chaos.ReplicaLog{Broker: id, Leader: id == m.Leader, HW: st.HighWatermark}
		for _, x := range recs {
			rl.Records = append(rl.Records, chaos.Rec{Offset: x.Offset, LeaderEpoch: x.Epoch, Value: x.Value, Key: x.Key, Tombstone: x.Tombstone, Timestamp: x.Timestamp})
		}
		if rl.Leader {
			d.Leader = id
		}
		d.Replicas = append(d.Replicas, rl)
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

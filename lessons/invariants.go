package lessons

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/invariant"
	"tidemark/replication"
	"tidemark/server/wire"
)

type eventsTruncated = events.TruncatedRecord

// watcher checks a scenario's invariants on the lab cluster after every
// action and every fetch, with the one checker (package invariant): it
// reads the controller's view and every running replica's log and status
// and hands them over. Structural invariants broken fail the run at once
// (with the replication state agreeing with the log, which only the lab
// can check); the ones a setting may legitimately break are collected as
// named violations (see Expect) for the scenario to state.
type watcher struct {
	topics map[string]*topicWatch
}

// topicWatch is what the watcher remembers of one topic.
type topicWatch struct {
	watch  invariant.Watch
	synced map[int32]int32 // follower → leader epoch it had a clean fetch in
}

func newWatcher() *watcher { return &watcher{topics: map[string]*topicWatch{}} }

func (w *watcher) topic(t string) *topicWatch {
	tw := w.topics[t]
	if tw == nil {
		tw = &topicWatch{synced: map[int32]int32{}}
		w.topics[t] = tw
	}
	return tw
}

// violations lists topic's violations so far, sorted.
func (w *watcher) violations(topic string) []string { return w.topic(topic).watch.Keys() }

// fetched notes a fetch round of broker id: a follower whose round brought
// no truncation and no error is done truncating in its epoch.
func (w *watcher) fetched(e *Env, id int32, evs []events.Event, err error) {
	for _, t := range e.topics {
		clean := err == nil
		for _, ev := range evs {
			if ev.Broker == id && ev.Topic == t && (ev.Kind == events.KindTruncation || ev.Kind == events.KindFetch && (ev.Error != "" || ev.Message != "")) {
				clean = false
			}
		}
		if st, ok := e.Status(id, t); clean && ok && st.Role == replication.RoleFollower {
			w.topic(t).synced[id] = st.LeaderEpoch
		}
	}
}

// check runs the invariants on every topic the scenario created.
func (w *watcher) check(e *Env) error {
	for _, t := range e.topics {
		if err := w.checkTopic(e, t); err != nil {
			return fmt.Errorf("invariant broken on %s: %w", t, err)
		}
	}
	return nil
}

func (w *watcher) checkTopic(e *Env, topic string) error {
	tw := w.topic(topic)
	m := e.Meta(topic)
	if len(m.ISR) == 0 && m.Leader >= 0 {
		return fmt.Errorf("controller: empty ISR with leader %d", m.Leader)
	}
	if err := invariant.Controller(m.Leader, m.ISR); err != nil {
		return err
	}
	s := e.snapshot(topic)
	leads := false
	for _, id := range e.c.BrokerIDs() {
		st, ok := e.Status(id, topic)
		l := e.Log(id, topic)
		recs, readable := e.readRecords(id, topic, 0)
		if !ok || l == nil || !readable {
			continue // down, or its disk failed: it halts
		}
		if leo := l.LogEndOffset(); leo != st.LogEndOffset {
			return fmt.Errorf("b%d: replication LEO %d, log LEO %d", id, st.LogEndOffset, leo)
		}
		if es := l.Epochs(); !slices.Equal(es, st.EpochCache) {
			return fmt.Errorf("b%d: replication epoch cache %v, log's %v", id, st.EpochCache, es)
		}
		r := invariant.Replica{Broker: id, LogStart: st.LogStartOffset, HW: st.HighWatermark, LEO: st.LogEndOffset, Records: recs, Epochs: st.EpochCache}
		if st.Role == replication.RoleLeader {
			r.ISR = append([]int32{}, st.ISR...)
		}
		if err := invariant.Structure(r, s.Topic); err != nil {
			return err
		}
		// Only a leader that knows it leads at the controller's epoch is
		// held to the rest, and followers done truncating in that epoch.
		r.Leader = id == m.Leader && st.Role == replication.RoleLeader && st.LeaderEpoch == m.LeaderEpoch
		r.Synced = id != m.Leader && tw.synced[id] == m.LeaderEpoch && st.LeaderEpoch == m.LeaderEpoch
		leads = leads || r.Leader
		s.Replicas = append(s.Replicas, r)
	}
	if !leads {
		return nil
	}
	// A leader going away (its disk failed, it halts) may reset the
	// connection: no HW seen then.
	if hw, ok, err := e.visibleHW(topic, m.Leader); err == nil && ok {
		s.VisibleHW, s.HasVisibleHW = hw, true
	}
	tw.watch.Check(s)
	return nil
}

// snapshot is topic's configs, the lab time and every write sent to it,
// for the checker; the caller adds the replicas.
func (e *Env) snapshot(topic string) invariant.Snapshot {
	s := invariant.Snapshot{Topic: e.topicConfig(topic), NowMs: e.c.Clock().Now().UnixMilli()}
	for key := range e.results {
		v, ok := strings.CutPrefix(key, topic+"/")
		if !ok {
			continue
		}
		r, _ := e.result(topic, v)
		w := invariant.Write{Value: v, Key: r.key, Tombstone: r.tombstone, Timestamp: r.sentMs, Offset: -1}
		if r.answered && r.err == nil && r.offset >= 0 {
			w.Acked, w.Offset = true, r.offset
		}
		s.Writes = append(s.Writes, w)
	}
	slices.SortFunc(s.Writes, func(a, b invariant.Write) int { return strings.Compare(a.Value, b.Value) })
	return s
}

// topicConfig is what the checks need of topic's configs.
func (e *Env) topicConfig(topic string) invariant.Topic {
	t, ok := e.c.Controller().Topic(topic)
	if !ok {
		return invariant.Topic{}
	}
	cfg := t.Config()
	return invariant.Topic{Compact: cfg.Compact(), DeleteRetentionMs: cfg.Storage().DeleteRetention.Milliseconds()}
}

// visibleHW asks the leader for the latest offset as a consumer does
// (ListOffsets over its Kafka listener); false while the leader answers
// OFFSET_NOT_AVAILABLE because its HW has not reached the start of its
// leader epoch yet (KIP-207).
func (e *Env) visibleHW(topic string, leader int32) (int64, bool, error) {
	b := e.c.Broker(leader)
	if b == nil {
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "scenario-consumer")
	if err != nil {
		return 0, false, fmt.Errorf("dial b%d: %w", leader, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.Request(ctx, req)
	if err != nil {
		return 0, false, fmt.Errorf("ListOffsets to b%d: %w", leader, err)
	}
	p := raw.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(p.ErrorCode); {
	case err == nil:
		return p.Offset, true, nil
	case errors.Is(err, kerr.OffsetNotAvailable):
		return 0, false, nil
	default:
		return 0, false, fmt.Errorf("ListOffsets to b%d: %w", leader, err)
	}
}

// sameLogs reports whether every running replica of topic holds the same
// records in the same batches: followers copy the leader's batches byte
// for byte, so identical logs have identical checksums.
func (e *Env) sameLogs(topic string) bool {
	var first []string
	seen := false
	for _, id := range e.c.BrokerIDs() {
		l := e.Log(id, topic)
		if l == nil {
			continue
		}
		bs, err := l.ReadBatches(l.LogStartOffset(), l.LogEndOffset(), 1<<20)
		if err != nil {
			return false
		}
		var got []string
		for _, b := range bs {
			got = append(got, fmt.Sprintf("%d/e%d/%08x", b.Header.BaseOffset, b.Header.PartitionLeaderEpoch, b.Header.CRC))
			for _, x := range b.Records {
				got = append(got, fmt.Sprintf("%d:%s", x.Offset, x.Value))
			}
		}
		if seen && !slices.Equal(first, got) {
			return false
		}
		first, seen = got, true
	}
	return true
}

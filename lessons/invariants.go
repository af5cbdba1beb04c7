package lessons

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
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
// action and every fetch. Structural ones (the controller's leader in its
// ISR, log start ≤ HW ≤ LEO, offsets increasing, epochs never decreasing,
// the replication state agreeing with the log) fail the run at once; the
// ones a setting may legitimately break are collected as named violations
// (see Expect) for the scenario to state.
type watcher struct {
	topics map[string]*topicWatch
}

// topicWatch is what the watcher remembers of one topic.
type topicWatch struct {
	maxHW  int64           // highest consumer-visible HW seen
	seen   map[int64]Rec   // records a consumer could read
	synced map[int32]int32 // follower → leader epoch it had a clean fetch in
	found  map[string]bool // violations seen: "lost m2", "hw-back"…
}

func newWatcher() *watcher { return &watcher{topics: map[string]*topicWatch{}} }

func (w *watcher) topic(t string) *topicWatch {
	tw := w.topics[t]
	if tw == nil {
		tw = &topicWatch{seen: map[int64]Rec{}, synced: map[int32]int32{}, found: map[string]bool{}}
		w.topics[t] = tw
	}
	return tw
}

// violations lists topic's violations so far, sorted.
func (w *watcher) violations(topic string) []string {
	var out []string
	for k := range w.topic(topic).found {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

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
	if m.Leader >= 0 && !slices.Contains(m.ISR, m.Leader) {
		return fmt.Errorf("controller: leader %d not in ISR %v", m.Leader, m.ISR)
	}
	logs := map[int32][]Rec{}
	cfg := e.topicConfig(topic)
	compacting := cfg.Compact
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
		if !(st.LogStartOffset <= st.HighWatermark && st.HighWatermark <= st.LogEndOffset) {
			return fmt.Errorf("b%d: log start %d ≤ HW %d ≤ LEO %d broken", id, st.LogStartOffset, st.HighWatermark, st.LogEndOffset)
		}
		if st.Role == replication.RoleLeader && !slices.Contains(st.ISR, id) {
			return fmt.Errorf("b%d leads with ISR %v", id, st.ISR)
		}
		for i := 1; i < len(recs); i++ {
			if recs[i].Offset <= recs[i-1].Offset || recs[i].Epoch < recs[i-1].Epoch {
				return fmt.Errorf("b%d: %v follows %v", id, recs[i], recs[i-1])
			}
		}
		// The cleaner may remove a compacted log's last record (a
		// tombstone past delete.retention.ms), never move one.
		if n := len(recs); n > 0 && (recs[n-1].Offset > st.LogEndOffset-1 || recs[n-1].Offset < st.LogEndOffset-1 && !compacting) {
			return fmt.Errorf("b%d: last record at %d, LEO %d", id, recs[n-1].Offset, st.LogEndOffset)
		}
		for i := 1; i < len(st.EpochCache); i++ {
			if st.EpochCache[i].Epoch <= st.EpochCache[i-1].Epoch || st.EpochCache[i].StartOffset < st.EpochCache[i-1].StartOffset {
				return fmt.Errorf("b%d: epoch cache %v not increasing", id, st.EpochCache)
			}
		}
		logs[id] = recs
	}
	// The rest needs a leader that knows it leads.
	if _, running := logs[m.Leader]; m.Leader < 0 || !running {
		return nil
	}
	lst, _ := e.Status(m.Leader, topic)
	if lst.Role != replication.RoleLeader || lst.LeaderEpoch != m.LeaderEpoch {
		return nil
	}
	at := map[int64]Rec{}
	for _, x := range logs[m.Leader] {
		at[x.Offset] = x
	}
	// What the log cleaner of a compacted topic may have removed: records
	// a later acknowledged write or held record of their key supersedes.
	cleaned := invariant.NewCompaction(cfg, e.c.Clock().Now().UnixMilli())
	acked := map[string]*result{}
	for key, r := range e.results {
		v, ok := strings.CutPrefix(key, topic+"/")
		if !ok {
			continue
		}
		if _, err := e.result(topic, v); err != nil || !r.answered || r.err != nil || r.offset < 0 {
			continue
		}
		acked[v] = r
		cleaned.Saw(r.key, r.offset)
	}
	for _, recs := range logs {
		for _, x := range recs {
			cleaned.Saw(x.Key, x.Offset)
		}
	}
	for v, r := range acked {
		x, ok := at[r.offset]
		switch {
		case !ok && cleaned.Removable(r.key, r.offset, r.tombstone, r.sentMs):
		case !ok, r.tombstone && (!x.Tombstone || x.Key != r.key), !r.tombstone && x.Value != v:
			tw.found["lost "+v] = true
		}
	}
	// A leader going away (its disk failed, it halts) may reset the
	// connection: no HW seen then.
	if hw, ok, err := e.visibleHW(topic, m.Leader); err == nil && ok {
		if hw < tw.maxHW {
			tw.found["hw-back"] = true
		}
		tw.maxHW = max(tw.maxHW, hw)
		for off, s := range tw.seen {
			x, ok := at[off]
			if !ok && cleaned.Removable(s.Key, off, s.Tombstone, s.Timestamp) {
				continue
			}
			if !ok || x != s {
				tw.found[fmt.Sprintf("seen-gone %d", off)] = true
			}
		}
		for _, x := range logs[m.Leader] {
			if _, ok := tw.seen[x.Offset]; x.Offset < hw && !ok {
				tw.seen[x.Offset] = x
			}
		}
	}
	// Replicas done truncating agree below the smaller HW.
	for id, recs := range logs {
		if id == m.Leader || tw.synced[id] != m.LeaderEpoch {
			continue
		}
		st, _ := e.Status(id, topic)
		if st.LeaderEpoch != m.LeaderEpoch {
			continue
		}
		below := min(st.HighWatermark, lst.HighWatermark)
		for _, x := range recs {
			y, ok := at[x.Offset]
			if !ok && cleaned.Removable(x.Key, x.Offset, x.Tombstone, x.Timestamp) {
				continue // the leader cleaned it first
			}
			if x.Offset < below && y != x {
				tw.found[fmt.Sprintf("diverged %d", x.Offset)] = true
			}
		}
	}
	return nil
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

package cluster

// Issue 3's scenarios, played on the real cluster: real segment files, real
// TCP between followers and leaders, the controller on badger. The clock is
// paused; every fetch is one explicit StepFetch round and every passage of
// time one Step, so each scenario runs the same way every time. The same
// scenarios at the rules level, with their checked expected outcomes, are in
// replication/testdata; these show the runtime reaches the same outcomes.
//
// After every operation the lab checks the invariants. Structural ones (ISR
// never empty, leader ∈ ISR, log start ≤ HW ≤ LEO, offsets strictly
// increasing, epochs never decreasing, a leader in its own ISR) fail the test
// at once. The ones a setting may legitimately break are collected as named
// violations, and each scenario states exactly which it expects, so a
// scenario says both "this setting loses m2" and "that one does not":
//
//	acked-lost:V   an acknowledged record V is not in the current leader's log
//	seen-gone@N    a record a consumer could read at offset N is gone or changed
//	hw-back        the consumer-visible HW (ListOffsets latest) went backwards
//	disagree@N     two replicas done truncating differ at offset N below both HWs
//	logs-differ    once quiet, the live replicas' whole logs are not identical

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/server/broker"
	"tidemark/server/controller"
	"tidemark/server/wire"
	"tidemark/storage"
)

const scenarioTopic = "lab"

// failover is one step long enough for the controller to fence a broker that
// stopped heartbeating (session timeout 2s) and short of
// replica.lag.time.max.ms (3s), so no ISR shrinks on the side.
const failover = 2100 * time.Millisecond

// rec is one record as a lane shows it.
type rec struct {
	offset int64
	epoch  int32
	value  string
}

func (r rec) String() string { return fmt.Sprintf("%d:%s/e%d", r.offset, r.value, r.epoch) }

type ackedRecord struct {
	value  string
	offset int64
}

// lab is a paused cluster with one single-partition topic and the
// invariant bookkeeping of one scenario.
type lab struct {
	t     *testing.T
	c     *Cluster
	n     int32
	start uint64 // the bus sequence when the scenario began

	acked      []ackedRecord
	maxHW      int64           // highest consumer-visible HW seen
	seen       map[int64]rec   // records a consumer could read
	synced     map[int32]int32 // follower → leader epoch it had a clean fetch in
	violations map[string]bool
}

// labOptions tune a lab: topic configs and the HW checkpoint interval (by
// default an hour, so that only explicit checkpoints write it).
type labOptions struct {
	brokers    int
	configs    map[string]string
	checkpoint time.Duration
	// fencing is the controller's fencing rule; the zero value here is the
	// ZooKeeper-era rule these KIP-101 stories were told under.
	fencing *controller.FencingRule
}

func newLab(t *testing.T, o labOptions) *lab {
	t.Helper()
	if o.checkpoint == 0 {
		o.checkpoint = time.Hour
	}
	if o.fencing == nil {
		zk := controller.FencingZooKeeper
		o.fencing = &zk
	}
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: o.brokers, Paused: true, FencingRule: o.fencing,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Broker: broker.Config{HighWatermarkCheckpointInterval: o.checkpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.CreateTopic(scenarioTopic, 1, int16(o.brokers), o.configs); err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, c: c, n: int32(o.brokers), start: c.Bus().LastSeq(), seen: map[int64]rec{},
		synced: map[int32]int32{}, violations: map[string]bool{}}
	l.check()
	return l
}

// --- reading state ---

func (l *lab) replica(id int32) *broker.Replica {
	b := l.c.Broker(id)
	if b == nil {
		return nil
	}
	return b.Replica(scenarioTopic, 0)
}

func (l *lab) status(id int32) replication.Status {
	l.t.Helper()
	r := l.replica(id)
	if r == nil {
		l.fatalf("broker %d has no running replica", id)
	}
	return r.Status()
}

func (l *lab) meta() (leader, epoch int32, isr []int32) {
	t, ok := l.c.Controller().Topic(scenarioTopic)
	if !ok {
		l.t.Fatal("topic gone")
	}
	p := t.Partitions[0]
	return p.Leader, p.LeaderEpoch, p.ISR
}

// records reads a replica's whole log.
func (l *lab) records(id int32) []rec {
	l.t.Helper()
	r := l.replica(id)
	if r == nil {
		return nil
	}
	lg := r.Log()
	batches, err := lg.ReadBatches(lg.LogStartOffset(), lg.LogEndOffset(), 1<<20)
	if err != nil {
		l.fatalf("reading broker %d's log: %v", id, err)
	}
	var out []rec
	for _, b := range batches {
		for _, x := range b.Records {
			out = append(out, rec{x.Offset, b.Header.PartitionLeaderEpoch, string(x.Value)})
		}
	}
	return out
}

// batches lists a replica's batches as base offset, leader epoch and CRC:
// followers copy the leader's batches byte for byte, so identical logs have
// identical checksums.
func (l *lab) batches(id int32) []string {
	l.t.Helper()
	lg := l.replica(id).Log()
	bs, err := lg.ReadBatches(lg.LogStartOffset(), lg.LogEndOffset(), 1<<20)
	if err != nil {
		l.fatalf("reading broker %d's log: %v", id, err)
	}
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = fmt.Sprintf("%d/e%d/%08x", b.Header.BaseOffset, b.Header.PartitionLeaderEpoch, b.Header.CRC)
	}
	return out
}

func (l *lab) values(id int32) []string {
	var out []string
	for _, r := range l.records(id) {
		out = append(out, r.value)
	}
	return out
}

// lanes prints every replica: role, epoch, LEO, HW, ISR, its records and its
// epoch cache, and the controller's view.
func (l *lab) lanes() string {
	var b strings.Builder
	for id := int32(1); id <= l.n; id++ {
		r := l.replica(id)
		if r == nil {
			fmt.Fprintf(&b, "b%d down\n", id)
			continue
		}
		st := r.Status()
		fmt.Fprintf(&b, "b%d %-8s e%d LEO=%d HW=%d", id, st.Role, st.LeaderEpoch, st.LogEndOffset, st.HighWatermark)
		if st.Role == replication.RoleLeader {
			fmt.Fprintf(&b, " ISR=%v", st.ISR)
			if st.PendingISR != nil {
				fmt.Fprintf(&b, " pending=%v", st.PendingISR)
			}
		}
		b.WriteString(" |")
		for _, x := range l.records(id) {
			b.WriteString(" " + x.String())
		}
		b.WriteString(" | epochs")
		for _, e := range st.EpochCache {
			fmt.Fprintf(&b, " %d@%d", e.Epoch, e.StartOffset)
		}
		b.WriteString("\n")
	}
	leader, epoch, isr := l.meta()
	fmt.Fprintf(&b, "controller: leader=%d epoch=%d ISR=%v\nviolations: %v", leader, epoch, isr, l.violationList())
	return b.String()
}

func (l *lab) fatalf(format string, a ...any) {
	l.t.Helper()
	l.t.Fatalf(format+"\n%s", append(a, l.lanes())...)
}

func (l *lab) violationList() []string {
	out := make([]string, 0, len(l.violations))
	for v := range l.violations {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// --- invariants ---

// check verifies the invariants after an operation: structural ones fail at
// once, the ones settings may break are recorded as violations.
func (l *lab) check() {
	l.t.Helper()
	leader, epoch, isr := l.meta()
	if len(isr) == 0 && leader >= 0 {
		l.fatalf("controller: empty ISR with leader %d", leader)
	}
	if leader >= 0 && !slices.Contains(isr, leader) {
		l.fatalf("controller: leader %d not in ISR %v", leader, isr)
	}
	logs := map[int32][]rec{}
	for id := int32(1); id <= l.n; id++ {
		r := l.replica(id)
		if r == nil {
			continue
		}
		st := r.Status()
		if leo := r.Log().LogEndOffset(); leo != st.LogEndOffset {
			l.fatalf("b%d: replication LEO %d, log LEO %d", id, st.LogEndOffset, leo)
		}
		if es := r.Log().Epochs(); !slices.Equal(es, st.EpochCache) {
			l.fatalf("b%d: replication epoch cache %v, log's %v", id, st.EpochCache, es)
		}
		if !(st.LogStartOffset <= st.HighWatermark && st.HighWatermark <= st.LogEndOffset) {
			l.fatalf("b%d: log start %d ≤ HW %d ≤ LEO %d broken", id, st.LogStartOffset, st.HighWatermark, st.LogEndOffset)
		}
		if st.Role == replication.RoleLeader && (len(st.ISR) == 0 || !slices.Contains(st.ISR, id)) {
			l.fatalf("b%d leads with ISR %v", id, st.ISR)
		}
		recs := l.records(id)
		for i := 1; i < len(recs); i++ {
			if recs[i].offset <= recs[i-1].offset || recs[i].epoch < recs[i-1].epoch {
				l.fatalf("b%d: %v follows %v", id, recs[i], recs[i-1])
			}
		}
		if n := len(recs); n > 0 && recs[n-1].offset != st.LogEndOffset-1 {
			l.fatalf("b%d: last record %v, LEO %d", id, recs[n-1], st.LogEndOffset)
		}
		for i := 1; i < len(st.EpochCache); i++ {
			if st.EpochCache[i].Epoch <= st.EpochCache[i-1].Epoch || st.EpochCache[i].StartOffset < st.EpochCache[i-1].StartOffset {
				l.fatalf("b%d: epoch cache %v not increasing", id, st.EpochCache)
			}
		}
		logs[id] = recs // nil for an empty log, but present
	}
	// The rest needs a leader that knows it leads.
	if _, running := logs[leader]; leader < 0 || !running {
		return
	}
	lst := l.status(leader)
	if lst.Role != replication.RoleLeader || lst.LeaderEpoch != epoch {
		return
	}
	at := map[int64]rec{}
	for _, x := range logs[leader] {
		at[x.offset] = x
	}
	for _, a := range l.acked {
		if x, ok := at[a.offset]; !ok || x.value != a.value {
			l.violations["acked-lost:"+a.value] = true
		}
	}
	if hw, ok := l.visibleHW(leader); ok {
		if hw < l.maxHW {
			l.violations["hw-back"] = true
		}
		l.maxHW = max(l.maxHW, hw)
		for off, s := range l.seen {
			if x, ok := at[off]; !ok || x != s {
				l.violations[fmt.Sprintf("seen-gone@%d", off)] = true
			}
		}
		for _, x := range logs[leader] {
			if x.offset < hw {
				if _, ok := l.seen[x.offset]; !ok {
					l.seen[x.offset] = x
				}
			}
		}
	}
	// Replicas done truncating agree below the smaller HW.
	for id, recs := range logs {
		if id == leader || l.synced[id] != epoch {
			continue
		}
		st := l.status(id)
		if st.LeaderEpoch != epoch {
			continue
		}
		below := min(st.HighWatermark, lst.HighWatermark)
		for _, x := range recs {
			if x.offset < below && at[x.offset] != x {
				l.violations[fmt.Sprintf("disagree@%d", x.offset)] = true
			}
		}
	}
}

// visibleHW asks the leader for the latest offset as a consumer does
// (ListOffsets over its Kafka listener); false while the leader answers
// OFFSET_NOT_AVAILABLE because its HW has not reached the start of its
// leader epoch yet (KIP-207).
func (l *lab) visibleHW(leader int32) (int64, bool) {
	l.t.Helper()
	b := l.c.Broker(leader)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "scenario-consumer")
	if err != nil {
		l.fatalf("dial b%d: %v", leader, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = scenarioTopic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.Request(ctx, req)
	if err != nil {
		l.fatalf("ListOffsets to b%d: %v", leader, err)
	}
	p := raw.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	switch err := kerr.ErrorForCode(p.ErrorCode); {
	case err == nil:
		return p.Offset, true
	case errors.Is(err, kerr.OffsetNotAvailable):
		return 0, false
	default:
		l.fatalf("ListOffsets to b%d: %v", leader, err)
	}
	return 0, false
}

// finish lets every live follower fetch until nothing changes, requires the
// live replicas' whole logs to be identical unless the scenario expects
// "logs-differ", and compares the violations seen with the expected ones.
func (l *lab) finish(expected ...string) {
	l.t.Helper()
	l.settle()
	var first []rec
	firstID := int32(0)
	for id := int32(1); id <= l.n; id++ {
		if l.replica(id) == nil {
			continue
		}
		recs := l.records(id)
		if firstID == 0 {
			first, firstID = recs, id
		} else if !slices.Equal(first, recs) || !slices.Equal(l.batches(firstID), l.batches(id)) {
			l.violations["logs-differ"] = true
		}
	}
	slices.Sort(expected)
	if got := l.violationList(); !slices.Equal(got, expected) {
		l.fatalf("violations %v, want %v", got, expected)
	}
}

// --- operations (each followed by check) ---

// fetch makes each broker's followers send one Fetch and apply the answer.
func (l *lab) fetch(ids ...int32) {
	l.t.Helper()
	for _, id := range ids {
		if err := l.tryFetch(id); err != nil {
			l.fatalf("fetch round of b%d: %v", id, err)
		}
	}
}

// tryFetch is one fetch round that may fail (a cut link). A follower whose
// round brought no truncation and no error is done truncating in its epoch.
func (l *lab) tryFetch(id int32) error {
	l.t.Helper()
	before := l.c.Bus().LastSeq()
	err := l.c.StepFetch(context.Background(), id)
	evs, _ := l.c.Bus().Since(before, 0)
	clean := err == nil
	for _, e := range evs {
		if e.Broker == id && (e.Kind == events.KindTruncation || e.Kind == events.KindFetch && (e.Error != "" || e.Message != "")) {
			clean = false
		}
	}
	if r := l.replica(id); clean && r != nil {
		if st := r.Status(); st.Role == replication.RoleFollower {
			l.synced[id] = st.LeaderEpoch
		}
	}
	l.check()
	return err
}

// settle lets every live broker fetch until no LEO, HW or ISR changes.
func (l *lab) settle() {
	l.t.Helper()
	state := func() string {
		var b strings.Builder
		for id := int32(1); id <= l.n; id++ {
			if r := l.replica(id); r != nil {
				st := r.Status()
				fmt.Fprintf(&b, "%d:%d/%d/%v/%d ", id, st.LogEndOffset, st.HighWatermark, st.ISR, st.LeaderEpoch)
			}
		}
		return b.String()
	}
	for range 10 {
		l.c.propagate() // brokers learn metadata changes (their heartbeats)
		before := state()
		for id := int32(1); id <= l.n; id++ {
			if l.c.Broker(id) != nil {
				l.fetch(id)
			}
		}
		if state() == before {
			return
		}
	}
	l.fatalf("replicas did not settle in 10 fetch rounds")
}

func (l *lab) step(d time.Duration) {
	l.t.Helper()
	if err := l.c.Step(d); err != nil {
		l.fatalf("step %v: %v", d, err)
	}
	l.check()
}

func (l *lab) crash(ids ...int32) {
	l.t.Helper()
	for _, id := range ids {
		if err := l.c.Crash(id); err != nil {
			l.fatalf("crash b%d: %v", id, err)
		}
		delete(l.synced, id)
	}
	l.check()
}

func (l *lab) powerLoss(ids ...int32) {
	l.t.Helper()
	for _, id := range ids {
		if _, err := l.c.PowerLoss(id); err != nil {
			l.fatalf("power loss of b%d: %v", id, err)
		}
		delete(l.synced, id)
	}
	l.check()
}

func (l *lab) restart(id int32) {
	l.t.Helper()
	if err := l.c.Restart(id); err != nil {
		l.fatalf("restart b%d: %v", id, err)
	}
	l.check()
}

// checkpoint writes the brokers' HW checkpoints now, as the periodic
// replica.high.watermark.checkpoint would.
func (l *lab) checkpoint(ids ...int32) {
	for _, id := range ids {
		l.c.Broker(id).CheckpointHighWatermarks()
	}
}

// flush fsyncs the brokers' logs.
func (l *lab) flush(ids ...int32) {
	l.t.Helper()
	for _, id := range ids {
		if err := l.replica(id).Log().Flush(); err != nil {
			l.fatalf("flush b%d: %v", id, err)
		}
	}
}

func (l *lab) alter(key, value string) {
	l.t.Helper()
	if _, err := l.c.AlterConfigs(scenarioTopic, map[string]*string{key: &value}); err != nil {
		l.fatalf("alter %s=%s: %v", key, value, err)
	}
	l.check()
}

func batchOf(value string) []byte {
	return storage.NewBatch([]storage.Record{{Value: []byte(value)}})
}

// produce sends one record to the controller's leader and waits for the
// answer; acks=all callers must expect an immediate answer (an error before
// the append, or an ISR that is the leader alone).
func (l *lab) produce(value string, acks int16) (int64, error) {
	l.t.Helper()
	res, err := l.c.Produce(context.Background(), scenarioTopic, 0, acks, []Record{{Value: []byte(value)}}, 30*time.Second)
	if err == nil && acks != 0 {
		l.acked = append(l.acked, ackedRecord{value, res.BaseOffset})
	}
	l.check()
	return res.BaseOffset, err
}

// mustProduce is produce that must succeed at offset want.
func (l *lab) mustProduce(value string, acks int16, want int64) {
	l.t.Helper()
	off, err := l.produce(value, acks)
	if err != nil || off != want {
		l.fatalf("produce %s acks=%d: offset %d, %v; want offset %d", value, acks, off, err, want)
	}
}

// pending is an acks=all produce waiting in another goroutine.
type pending struct {
	l     *lab
	value string
	done  chan ProduceResult
	err   chan error
}

// produceAsync starts an acks=all produce to the controller's leader and
// returns once the leader appended it (or answered).
func (l *lab) produceAsync(value string) *pending {
	l.t.Helper()
	leader, _, _ := l.meta()
	return l.produceTo(leader, value, -1, 30*time.Second)
}

// produceTo is produceAsync to a given broker, as a client with stale
// metadata would send it.
func (l *lab) produceTo(id int32, value string, acks int16, timeout time.Duration) *pending {
	l.t.Helper()
	b := l.c.Broker(id)
	r := l.replica(id)
	before := r.Status().LogEndOffset
	p := &pending{l: l, value: value, done: make(chan ProduceResult, 1), err: make(chan error, 1)}
	go func() {
		res := b.Produce(context.Background(), scenarioTopic, 0, acks, batchOf(value), timeout)
		p.done <- ProduceResult{Partition: 0, Leader: id, BaseOffset: res.BaseOffset, LastOffset: res.LastOffset}
		p.err <- res.Err
	}()
	// A bounded wait for the hand-off: the append, or an early answer.
	deadline := time.Now().Add(5 * time.Second)
	for r.Status().LogEndOffset <= before && len(p.done) == 0 {
		if time.Now().After(deadline) {
			l.fatalf("produce %s to b%d neither appended nor answered", value, id)
		}
		time.Sleep(time.Millisecond)
	}
	l.check()
	return p
}

// waiting requires that the produce has not been answered yet.
func (p *pending) waiting() {
	p.l.t.Helper()
	if len(p.done) > 0 {
		res, err := <-p.done, <-p.err
		p.l.fatalf("produce %s answered early: %+v %v", p.value, res, err)
	}
}

// result waits (bounded) for the answer; success makes the record acked.
func (p *pending) result() (int64, error) {
	p.l.t.Helper()
	select {
	case res := <-p.done:
		err := <-p.err
		if err == nil {
			p.l.acked = append(p.l.acked, ackedRecord{p.value, res.BaseOffset})
		}
		p.l.check()
		return res.BaseOffset, err
	case <-time.After(10 * time.Second):
		p.l.fatalf("produce %s not answered", p.value)
	}
	return 0, nil
}

func (p *pending) ok(want int64) {
	p.l.t.Helper()
	if off, err := p.result(); err != nil || off != want {
		p.l.fatalf("produce %s: offset %d, %v; want OK at %d", p.value, off, err, want)
	}
}

func (p *pending) fails(want error) {
	p.l.t.Helper()
	if _, err := p.result(); !errors.Is(err, want) {
		p.l.fatalf("produce %s: %v, want %v", p.value, err, want)
	}
}

// --- assertions ---

// want compares a replica's LEO, HW and values.
func (l *lab) want(id int32, leo, hw int64, values ...string) {
	l.t.Helper()
	st := l.status(id)
	if got := l.values(id); st.LogEndOffset != leo || st.HighWatermark != hw || !slices.Equal(got, values) {
		l.fatalf("b%d: LEO %d HW %d %v; want LEO %d HW %d %v", id, st.LogEndOffset, st.HighWatermark, got, leo, hw, values)
	}
}

// wantLeader compares the controller's leader, leader epoch and ISR, and
// requires the leader to know it.
func (l *lab) wantLeader(leader, epoch int32, isr ...int32) {
	l.t.Helper()
	gl, ge, gi := l.meta()
	if gl != leader || ge != epoch || !slices.Equal(gi, isr) {
		l.fatalf("controller: leader %d epoch %d ISR %v; want leader %d epoch %d ISR %v", gl, ge, gi, leader, epoch, isr)
	}
	if leader >= 0 {
		st := l.status(leader)
		if st.Role != replication.RoleLeader || st.LeaderEpoch != epoch || !slices.Equal(st.ISR, isr) {
			l.fatalf("b%d: %s at epoch %d ISR %v; want leader at epoch %d ISR %v", leader, st.Role, st.LeaderEpoch, st.ISR, epoch, isr)
		}
	}
}

// wantMeta compares the controller's leader, leader epoch and ISR only
// (brokers learn changes at their next heartbeat).
func (l *lab) wantMeta(leader, epoch int32, isr ...int32) {
	l.t.Helper()
	gl, ge, gi := l.meta()
	if gl != leader || ge != epoch || !slices.Equal(gi, isr) {
		l.fatalf("controller: leader %d epoch %d ISR %v; want leader %d epoch %d ISR %v", gl, ge, gi, leader, epoch, isr)
	}
}

// consume reads what a consumer of the leader can read.
func (l *lab) consume() []string {
	l.t.Helper()
	recs, _, err := l.c.Consume(scenarioTopic, 0, 0, 100)
	if err != nil {
		l.fatalf("consume: %v", err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

func (l *lab) wantConsume(values ...string) {
	l.t.Helper()
	if got := l.consume(); !slices.Equal(got, values) {
		l.fatalf("consumer reads %v, want %v", got, values)
	}
}

// truncated returns what broker id's truncation events since the scenario
// began removed.
func (l *lab) truncated(id int32) []events.TruncatedRecord {
	evs, _ := l.c.Bus().Since(l.start, 0)
	var out []events.TruncatedRecord
	for _, e := range evs {
		if e.Kind == events.KindTruncation && e.Broker == id && e.Topic == scenarioTopic {
			out = append(out, e.Truncated...)
		}
	}
	return out
}

// wantTruncated requires broker id's truncations to have removed exactly
// these records (offset, epoch and the digest of the value).
func (l *lab) wantTruncated(id int32, recs ...rec) {
	l.t.Helper()
	var want []events.TruncatedRecord
	for _, r := range recs {
		want = append(want, events.TruncatedRecord{Offset: r.offset, LeaderEpoch: r.epoch, Digest: events.Digest(nil, []byte(r.value))})
	}
	same := func(a, b events.TruncatedRecord) bool {
		return a.Offset == b.Offset && a.LeaderEpoch == b.LeaderEpoch && a.Digest == b.Digest
	}
	if got := l.truncated(id); !slices.EqualFunc(got, want, same) {
		l.fatalf("b%d truncated %+v, want %+v", id, got, want)
	}
}

func rules() []string { return []string{"high-watermark", "leader-epoch"} }

// --- the scenarios ---

// TestScenario1KIP101HWTruncation: KIP-101 scenario 1, a follower truncates
// to its own (stale) HW and is elected before it fetches again. m2 is
// acknowledged with acks=all; under high-watermark it is lost, under
// leader-epoch it is kept.
//
// "restart": the classic steps on two brokers. The follower comes back with
// the HW of its last checkpoint (1, while the leader's is 2) before its
// session expired, so it keeps its ISR place, and is elected cleanly when
// the leader dies before it fetches again.
//
// "leader-change": the same hazard with clean elections only. On three
// brokers the leader dies; the new leader's follower becomes a follower of a
// new epoch and (under high-watermark) truncates to its HW 1; then the new
// leader dies before that follower fetches, and it is elected cleanly.
func TestScenario1KIP101HWTruncation(t *testing.T) {
	for _, rule := range rules() {
		t.Run("restart/"+rule, func(t *testing.T) {
			l := newLab(t, labOptions{brokers: 2, configs: map[string]string{"truncation.rule": rule}})
			p := l.produceAsync("m1")
			l.fetch(2, 2)
			p.ok(0)
			l.fetch(2) // b2 learns HW 1
			l.checkpoint(1, 2)
			p = l.produceAsync("m2")
			l.fetch(2, 2)
			p.ok(1)
			l.want(1, 2, 2, "m1", "m2")
			l.want(2, 2, 1, "m1", "m2")

			// b2 restarts before the controller notices: HW 1 from its checkpoint.
			l.crash(2)
			l.restart(2)
			if rule == "high-watermark" {
				l.want(2, 1, 1, "m1")
				l.wantTruncated(2, rec{1, 0, "m2"})
			} else {
				l.want(2, 2, 1, "m1", "m2")
				l.wantTruncated(2)
			}
			l.wantMeta(1, 0, 1, 2) // back within its session: b2 keeps its ISR place

			// The leader dies before b2 fetches again: b2 is elected cleanly.

			l.crash(1)
			l.step(failover)
			l.wantLeader(2, 1, 2)
			if rule == "high-watermark" {
				l.want(2, 1, 1, "m1")
			} else {
				l.want(2, 2, 2, "m1", "m2")
			}
			l.restart(1)
			if rule == "high-watermark" {
				l.finish("acked-lost:m2", "hw-back", "seen-gone@1")
				l.want(1, 1, 1, "m1")
			} else {
				l.finish()
				l.want(1, 2, 2, "m1", "m2")
			}
		})
		t.Run("leader-change/"+rule, func(t *testing.T) {
			l := newLab(t, labOptions{brokers: 3, configs: map[string]string{"truncation.rule": rule}})
			p := l.produceAsync("m1")
			l.settle()
			p.ok(0)
			l.checkpoint(1, 2, 3)
			p = l.produceAsync("m2")
			l.fetch(2, 3, 2, 3)
			p.ok(1)
			l.want(1, 2, 2, "m1", "m2")
			l.want(2, 2, 1, "m1", "m2")
			l.want(3, 2, 1, "m1", "m2")

			l.crash(1)
			l.step(failover)
			l.wantLeader(2, 1, 2, 3)
			if rule == "high-watermark" {
				l.want(3, 1, 1, "m1") // became follower of epoch 1: truncated to its HW
				l.wantTruncated(3, rec{1, 0, "m2"})
			} else {
				l.want(3, 2, 1, "m1", "m2")
				l.wantTruncated(3)
			}
			// b2 dies before b3 fetches; b3 is in the ISR: a clean election.
			l.crash(2)
			l.step(failover)
			l.wantLeader(3, 2, 3)
			l.restart(1)
			l.restart(2)
			if rule == "high-watermark" {
				l.finish("acked-lost:m2", "hw-back", "seen-gone@1")
				l.want(3, 1, 1, "m1")
			} else {
				l.finish()
				l.want(3, 2, 2, "m1", "m2")
			}
		})
	}
}

// TestScenario2KIP101PowerLoss: KIP-101 scenario 2. Both replicas lose
// power; m2 was acknowledged but only b1 had fsynced it. b2 comes back
// first (the last ISR member, a clean election), leads and takes m3 at
// offset 1. Under high-watermark b1 keeps m2 where b2 has m3 and the logs
// diverge for good below the HW; under leader-epoch b1 truncates m2 and the
// logs end identical. m2 itself is lost either way: Kafka does not promise
// survival of a simultaneous power loss without fsync.
func TestScenario2KIP101PowerLoss(t *testing.T) {
	for _, rule := range rules() {
		t.Run(rule, func(t *testing.T) {
			l := newLab(t, labOptions{brokers: 2, configs: map[string]string{"truncation.rule": rule}})
			p := l.produceAsync("m1")
			l.settle()
			p.ok(0)
			l.flush(1, 2)
			l.checkpoint(1, 2)
			p = l.produceAsync("m2")
			l.fetch(2, 2)
			p.ok(1)
			l.flush(1) // b1 fsyncs m2 and HW 2; b2 has m2 only in the page cache
			l.checkpoint(1)
			l.want(2, 2, 1, "m1", "m2")

			l.powerLoss(1, 2)
			l.step(failover)
			l.wantMeta(-1, 1, 2) // offline; b2 is the last ISR member
			l.restart(2)
			l.wantLeader(2, 2, 2)
			l.want(2, 1, 1, "m1") // m2 was not fsynced
			l.mustProduce("m3", -1, 1)
			l.restart(1)
			if rule == "high-watermark" {
				l.want(1, 2, 2, "m1", "m2") // its own HW is 2: nothing to truncate
				l.finish("acked-lost:m2", "hw-back", "seen-gone@1", "disagree@1", "logs-differ")
				l.want(1, 2, 2, "m1", "m2")
				l.want(2, 2, 2, "m1", "m3")
				l.wantLeader(2, 2, 1, 2) // b1 is even back in the ISR
				l.wantTruncated(1)
			} else {
				l.finish("acked-lost:m2", "hw-back", "seen-gone@1")
				l.want(1, 2, 2, "m1", "m3")
				l.wantLeader(2, 2, 1, 2)
				l.wantTruncated(1, rec{1, 0, "m2"})
			}
		})
	}
}

// TestScenario3KIP279: repeated unclean elections between two brokers; each
// leads an epoch alone that the other never sees (b1 epoch 2: a, b2 epoch
// 4: b, b1 epoch 6: c). When b2 follows again it asks about epoch 4, which
// b1 never had; b1 answers with epoch 2 ending at 2; b2 has no epoch 2
// either, so it cuts to the end of its largest epoch below it (epoch 0,
// ending at 1) and asks again (KIP-279). Under leader-epoch the logs end
// identical, offsets, epochs and checksums; under high-watermark b2 keeps b
// at offset 1.
func TestScenario3KIP279(t *testing.T) {
	for _, rule := range rules() {
		t.Run(rule, func(t *testing.T) {
			l := newLab(t, labOptions{brokers: 2, configs: map[string]string{
				"truncation.rule": rule, "unclean.leader.election.enable": "true"}})
			p := l.produceAsync("m1")
			l.settle()
			p.ok(0)
			l.crash(2)
			l.step(failover)
			l.wantLeader(1, 0, 1)
			l.crash(1)
			l.step(failover)
			l.wantMeta(-1, 1, 1)
			l.restart(1)
			l.wantLeader(1, 2, 1)
			l.mustProduce("a", 1, 1)
			l.checkpoint(1)
			l.crash(1)
			l.step(failover)
			l.restart(2) // unclean: b2 is not in the ISR [1]
			l.wantLeader(2, 4, 2)
			l.mustProduce("b", 1, 1)
			l.checkpoint(2)
			l.crash(2)
			l.step(failover)
			l.restart(1) // unclean again
			l.wantLeader(1, 6, 1)
			l.mustProduce("c", 1, 2)
			l.restart(2)
			if rule == "high-watermark" {
				l.finish("acked-lost:a", "acked-lost:b", "hw-back", "seen-gone@1", "disagree@1", "logs-differ")
				l.want(2, 3, 3, "m1", "b", "c")
				return
			}
			l.settle()
			l.want(1, 3, 3, "m1", "a", "c")
			l.want(2, 3, 3, "m1", "a", "c")
			l.wantTruncated(2, rec{1, 4, "b"})
			if a, b := l.status(1).EpochCache, l.status(2).EpochCache; !slices.Equal(a, b) || len(a) != 3 {
				l.fatalf("epoch caches %v and %v, want the same three entries", a, b)
			}
			// One more round: b2 leads epoch 7 cleanly after b1 dies, b1 follows.
			l.crash(1)
			l.step(failover)
			l.wantLeader(2, 7, 2)
			l.mustProduce("d", 1, 3)
			l.restart(1)
			l.finish("acked-lost:a", "acked-lost:b", "hw-back", "seen-gone@1")
			l.want(1, 4, 4, "m1", "a", "c", "d")
		})
	}
}

// TestScenario4ISRShrinkThenLeaderDies: b2 stops fetching after m1 and
// leaves the ISR after replica.lag.time.max.ms; then the leader b1 dies.
// min ISR 1 acknowledges m2 with the leader alone: with unclean election off
// the partition is offline until b1 returns (nothing lost), with it on b2
// leads without m2 (an acknowledged record lost). min ISR 2 refuses m2
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND) and then m3 (NOT_ENOUGH_REPLICAS), so
// nothing acknowledged can be lost either way.
func TestScenario4ISRShrinkThenLeaderDies(t *testing.T) {
	for _, minISR := range []string{"1", "2"} {
		for _, unclean := range []string{"false", "true"} {
			t.Run("min.insync.replicas="+minISR+"/unclean="+unclean, func(t *testing.T) {
				l := newLab(t, labOptions{brokers: 2, configs: map[string]string{
					"min.insync.replicas": minISR, "unclean.leader.election.enable": unclean}})
				p := l.produceAsync("m1")
				l.settle()
				p.ok(0)
				p = l.produceAsync("m2") // b2 fetches no more
				p.waiting()
				l.step(3001 * time.Millisecond)
				l.wantLeader(1, 0, 1)
				l.checkpoint(1) // the periodic HW checkpoint
				if minISR == "1" {
					p.ok(1)
					l.want(1, 2, 2, "m1", "m2")
				} else {
					p.fails(kerr.NotEnoughReplicasAfterAppend)
					if _, err := l.produce("m3", -1); !errors.Is(err, kerr.NotEnoughReplicas) {
						l.fatalf("m3: %v, want NOT_ENOUGH_REPLICAS", err)
					}
					l.want(1, 2, 1, "m1", "m2")
				}
				l.crash(1)
				l.step(failover)
				switch {
				case unclean == "false":
					l.wantMeta(-1, 1, 1)
					if _, _, err := l.c.Consume(scenarioTopic, 0, 0, 10); !errors.Is(err, kerr.LeaderNotAvailable) {
						l.fatalf("consume from an offline partition: %v", err)
					}
					l.restart(1)
					l.wantLeader(1, 2, 1)
					if minISR == "1" {
						l.wantConsume("m1", "m2")
					} else {
						l.wantConsume("m1") // b1 alone is below min ISR: its HW stays
					}
					l.finish()
				case minISR == "1":
					l.wantLeader(2, 1, 2)
					l.wantConsume("m1")
					l.restart(1)
					l.finish("acked-lost:m2", "hw-back", "seen-gone@1")
					l.want(1, 1, 1, "m1")
					l.wantTruncated(1, rec{1, 0, "m2"})
				default:
					l.wantLeader(2, 1, 2)
					if _, err := l.produce("m3", -1); !errors.Is(err, kerr.NotEnoughReplicas) {
						l.fatalf("m3 to b2: %v, want NOT_ENOUGH_REPLICAS", err)
					}
					l.wantConsume("m1")
					l.restart(1)
					l.finish() // m2 was never acknowledged
					l.want(1, 1, 1, "m1")
				}
			})
		}
	}
}

// TestScenario5Acks: acks=1 with a leader crash before replication loses an
// acknowledged record; acks=all with min.insync.replicas=2 loses none, and
// the new leader (alone below min ISR) exposes nothing until b3 is back.
func TestScenario5Acks(t *testing.T) {
	t.Run("acks=1", func(t *testing.T) {
		l := newLab(t, labOptions{brokers: 3, configs: map[string]string{"min.insync.replicas": "2"}})
		l.mustProduce("m1", 1, 0)
		l.crash(1)
		l.step(failover)
		l.wantLeader(2, 1, 2, 3)
		l.want(2, 0, 0)
		l.restart(1)
		l.finish("acked-lost:m1")
		l.want(1, 0, 0)
		l.wantTruncated(1, rec{0, 0, "m1"})
	})
	t.Run("acks=all", func(t *testing.T) {
		l := newLab(t, labOptions{brokers: 3, configs: map[string]string{"min.insync.replicas": "2"}})
		p := l.produceAsync("m1")
		l.fetch(2, 2) // b3 is silent
		p.waiting()
		l.step(3001 * time.Millisecond)
		l.wantLeader(1, 0, 1, 2)
		p.ok(0)
		l.crash(1)
		l.step(failover)
		l.wantLeader(2, 1, 2)
		l.want(2, 1, 0, "m1") // learned HW 0 a fetch late; alone it is below min ISR
		l.wantConsume()
		l.fetch(3, 3)
		l.wantLeader(2, 1, 2, 3)
		l.want(2, 1, 1, "m1")
		l.wantConsume("m1")
		l.restart(1)
		l.finish()
	})
}

// TestScenario6RetryDuplicate: a retry after NOT_ENOUGH_REPLICAS_AFTER_APPEND
// writes the value twice. The first attempt was appended; once b2 is back it
// is replicated and committed though its producer was told it failed.
func TestScenario6RetryDuplicate(t *testing.T) {
	l := newLab(t, labOptions{brokers: 2, configs: map[string]string{"min.insync.replicas": "2"}})
	p := l.produceAsync("m1")
	p.waiting()
	l.step(3001 * time.Millisecond)
	p.fails(kerr.NotEnoughReplicasAfterAppend)
	if _, err := l.produce("m1", -1); !errors.Is(err, kerr.NotEnoughReplicas) {
		l.fatalf("immediate retry: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	l.fetch(2) // b2 fetches m1 and rejoins the ISR (LEO 0 ≥ HW 0)
	l.wantLeader(1, 0, 1, 2)
	l.fetch(2)
	l.want(1, 1, 1, "m1")
	p = l.produceAsync("m1") // the retry that succeeds
	l.settle()
	p.ok(1)
	l.wantConsume("m1", "m1")
	l.finish()
}

// TestScenario7Zombie: a leader cut off from the controller and its
// followers (a zombie) cannot advance its HW with acks=all: its ISR proposal
// never reaches the controller, so its HW keeps waiting for followers that
// no longer fetch from it. A new leader is elected; the zombie's write z1
// is never visible, times out, and is truncated away when the zombie rejoins.
// min.insync.replicas=1 on purpose: the fencing alone protects the data.
func TestScenario7Zombie(t *testing.T) {
	l := newLab(t, labOptions{brokers: 3})
	p := l.produceAsync("m1")
	l.settle()
	p.ok(0)
	for _, to := range []int32{ControllerNode, 2, 3} {
		if err := l.c.Cut(1, to, false); err != nil {
			t.Fatal(err)
		}
	}
	l.step(failover)
	l.wantLeader(2, 1, 2, 3)
	if st := l.status(1); st.Role != replication.RoleLeader || st.LeaderEpoch != 0 {
		l.fatalf("b1 should still believe it leads epoch 0")
	}
	// A client with stale metadata still writes to b1.
	z := l.produceTo(1, "z1", -1, 5*time.Second)
	p = l.produceAsync("m2")
	l.settle()
	p.ok(1)
	l.step(3001 * time.Millisecond) // b1 wants to drop b2 and b3 but cannot tell the controller
	st := l.status(1)
	if !slices.Equal(st.ISR, []int32{1, 2, 3}) || !slices.Equal(st.PendingISR, []int32{1}) {
		l.fatalf("b1: ISR %v pending %v; want ISR [1 2 3] with [1] in flight", st.ISR, st.PendingISR)
	}
	l.want(1, 2, 1, "m1", "z1")
	z.waiting()
	l.step(2000 * time.Millisecond)
	z.fails(kerr.RequestTimedOut)
	l.want(1, 2, 1, "m1", "z1")
	// Asked directly, the zombie still serves only below its HW 1.
	if hw, ok := l.visibleHW(1); !ok || hw != 1 {
		l.fatalf("b1 answers ListOffsets %d %v, want 1", hw, ok)
	}
	l.wantConsume("m1", "m2")

	l.c.Heal()
	l.step(100 * time.Millisecond) // b1 heartbeats again and learns epoch 1
	if st := l.status(1); st.Role != replication.RoleFollower || st.LeaderEpoch != 1 {
		l.fatalf("b1 did not learn it follows b2 at epoch 1")
	}
	l.fetch(1, 1, 1)
	l.wantTruncated(1, rec{1, 0, "z1"})
	l.wantLeader(2, 1, 1, 2, 3)
	l.wantConsume("m1", "m2")
	l.finish()
	l.want(1, 2, 2, "m1", "m2")
}

// TestScenario8EpochStart: a follower does not rejoin the ISR before its LEO
// reaches the start offset of the current leader epoch (KAFKA-7128), and the
// consumer-visible HW never goes backwards (KIP-207). b4 is out of the ISR
// with m1 only; b2 and b3 have m1..m3 but learned HW 1 while b1's is 3. After
// b1 dies b2 leads with HW 1 below its epoch start 3: a consumer is told
// OFFSET_NOT_AVAILABLE, not an end offset of 1, and reads nothing new
// rather than an error. b4 at LEO 1 ≥ HW 1 stays out until it reaches 3.
func TestScenario8EpochStart(t *testing.T) {
	l := newLab(t, labOptions{brokers: 4})
	p := l.produceAsync("m1")
	l.settle()
	p.ok(0)
	l.mustProduce("m2", 1, 1)
	l.mustProduce("m3", 1, 2)
	l.fetch(2, 2, 3, 3)
	l.step(3001 * time.Millisecond)
	l.wantLeader(1, 0, 1, 2, 3)
	l.want(1, 3, 3, "m1", "m2", "m3")
	l.wantConsume("m1", "m2", "m3")
	l.checkpoint(1, 2, 3, 4)

	l.crash(1)
	l.step(failover)
	l.wantLeader(2, 1, 2, 3)
	l.want(2, 3, 1, "m1", "m2", "m3")
	if st := l.status(2); st.EpochStartOffset != 3 {
		l.fatalf("b2's epoch 1 starts at %d, want 3", st.EpochStartOffset)
	}
	if _, ok := l.visibleHW(2); ok {
		l.fatalf("b2 exposes its HW 1 below its epoch start 3")
	}
	if recs, hw, err := l.c.Consume(scenarioTopic, 0, 3, 10); err != nil || len(recs) != 0 || hw != 1 {
		l.fatalf("a consumer at offset 3 reads %v, HW %d, %v; want nothing, HW 1, no error", recs, hw, err)
	}
	l.fetch(4) // LEO 1 ≥ HW 1 but below the epoch start 3: no ISR change
	l.want(4, 3, 1, "m1", "m2", "m3")
	l.wantLeader(2, 1, 2, 3)
	l.fetch(4) // at 3 now
	l.wantLeader(2, 1, 2, 3, 4)
	l.want(2, 3, 1, "m1", "m2", "m3") // waits for b3's LEO
	l.fetch(3)
	l.want(2, 3, 3, "m1", "m2", "m3")
	if hw, ok := l.visibleHW(2); !ok || hw != 3 {
		l.fatalf("b2 ListOffsets %d %v, want 3", hw, ok)
	}
	l.wantConsume("m1", "m2", "m3")
	l.restart(1)
	l.finish()
}

// TestScenario9ISRTiming: replica.lag.time.max.ms=3000 on a stepped clock.
// b2 fetches every second and stays; b3 never fetches and leaves after
// 3000 ms, and then the HW advances and the acks=all produce completes. A
// steady stream keeps b2 in the ISR (each fetch reaches the leader's LEO as
// of its previous fetch); once it goes quiet with the leader one record
// ahead, it leaves 3001 ms after the fetch it last caught up as of.
func TestScenario9ISRTiming(t *testing.T) {
	l := newLab(t, labOptions{brokers: 3})
	p := l.produceAsync("m1")
	l.step(time.Second)
	l.fetch(2, 2)
	l.step(time.Second)
	l.fetch(2)
	l.step(time.Second) // 3000 ms: still within the limit
	l.wantLeader(1, 0, 1, 2, 3)
	p.waiting()
	l.step(time.Millisecond)
	l.wantLeader(1, 0, 1, 2)
	p.ok(0)
	l.fetch(2)
	l.want(2, 1, 1, "m1")
	values := []string{"m1"}
	for i, v := range []string{"m2", "m3", "m4", "m5"} {
		l.mustProduce(v, 1, int64(i+1))
		values = append(values, v)
		l.step(time.Second)
		l.fetch(2)
	}
	l.wantLeader(1, 0, 1, 2) // 7001 ms, b2 always one record behind, still in
	l.want(1, 5, 4, values...)
	l.want(2, 5, 3, values...)
	l.mustProduce("m6", 1, 5)
	values = append(values, "m6")
	l.step(time.Second)
	l.step(time.Second)
	l.wantLeader(1, 0, 1, 2) // 9001 ms
	l.want(1, 6, 4, values...)
	l.step(time.Millisecond)
	l.wantLeader(1, 0, 1) // 9002 ms: out, and the HW moves to the LEO
	l.want(1, 6, 6, values...)
	l.finish()
}

// TestScenario10HWUnderMinISR: the HW does not advance while the ISR is
// smaller than min.insync.replicas, even for acks=1 writes; lowering the
// setting at run time lets it move, and a follower rejoining lets it move
// again under the old setting.
func TestScenario10HWUnderMinISR(t *testing.T) {
	l := newLab(t, labOptions{brokers: 3, configs: map[string]string{"min.insync.replicas": "2"}})
	p := l.produceAsync("m1")
	l.settle()
	p.ok(0)
	l.mustProduce("m2", 1, 1)
	l.step(3001 * time.Millisecond)
	l.wantLeader(1, 0, 1)
	l.mustProduce("m3", 1, 2)
	if _, err := l.produce("m4", -1); !errors.Is(err, kerr.NotEnoughReplicas) {
		l.fatalf("m4: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	l.want(1, 3, 1, "m1", "m2", "m3")
	l.wantConsume("m1")
	l.alter("min.insync.replicas", "1")
	l.want(1, 3, 3, "m1", "m2", "m3")
	l.wantConsume("m1", "m2", "m3")
	l.alter("min.insync.replicas", "2")
	l.fetch(2, 2)
	l.wantLeader(1, 0, 1, 2)
	p = l.produceAsync("m5")
	l.fetch(2, 2)
	p.ok(3)
	l.want(1, 4, 4, "m1", "m2", "m3", "m5")
	l.wantConsume("m1", "m2", "m3", "m5")
	l.finish()
}

// TestScenario11Recovery: crash and power-loss recovery restore LEO, HW
// (from replication-offset-checkpoint, written by the periodic checkpoint)
// and the leader-epoch cache from disk. A crash keeps everything written; a
// power loss keeps what was fsynced, and recovery reports the rest as lost.
func TestScenario11Recovery(t *testing.T) {
	for _, fault := range []string{"crash", "power-loss"} {
		t.Run(fault, func(t *testing.T) {
			l := newLab(t, labOptions{brokers: 3, checkpoint: 5 * time.Second})
			for i, v := range []string{"m1", "m2"} {
				p := l.produceAsync(v)
				l.settle()
				p.ok(int64(i))
			}
			l.crash(1)
			l.step(failover)
			l.wantLeader(2, 1, 2, 3)
			p := l.produceAsync("m3")
			l.settle()
			p.ok(2)
			l.restart(1)
			l.settle()
			l.wantLeader(2, 1, 1, 2, 3)
			epochs := []replication.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}
			values := []string{"m1", "m2", "m3"}
			leo := int64(3)
			if fault == "power-loss" {
				l.flush(1, 2, 3)
				p := l.produceAsync("m4")
				l.settle()
				p.ok(3)
			}
			l.step(5 * time.Second) // the periodic HW checkpoint
			for id := int32(1); id <= 3; id++ {
				if hw, _ := l.c.Broker(id).LogDir().HighWatermark(storage.TopicPartition{Topic: scenarioTopic}); hw != l.status(id).HighWatermark {
					l.fatalf("b%d checkpointed HW %d, its HW is %d", id, hw, l.status(id).HighWatermark)
				}
			}
			if fault == "crash" {
				l.crash(3)
			} else {
				l.powerLoss(3) // m4 was never fsynced on b3
			}
			l.restart(3)
			// Before any fetch: what came back from disk alone.
			st := l.status(3)
			if st.LogEndOffset != leo || st.HighWatermark != leo || !slices.Equal(st.EpochCache, epochs) || !slices.Equal(l.values(3), values) {
				l.fatalf("b3 recovered LEO %d HW %d epochs %v %v; want LEO %d HW %d epochs %v %v",
					st.LogEndOffset, st.HighWatermark, st.EpochCache, l.values(3), leo, leo, epochs, values)
			}
			if fault == "power-loss" {
				l.wantTruncated(3, rec{3, 1, "m4"}) // recovery reports what it lost
			} else {
				l.wantTruncated(3)
			}
			l.finish()
			if fault == "power-loss" {
				values = append(values, "m4") // fetched back from the leader
			}
			l.want(3, int64(len(values)), int64(len(values)), values...)
		})
	}
}

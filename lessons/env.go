package lessons

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"tidemark/events"
	"tidemark/invariant"
	"tidemark/replication"
	"tidemark/server/chaos"
	"tidemark/server/cluster"
	"tidemark/server/controller"
	"tidemark/storage"
)

// Env is what a step works with: the run's cluster, the operations a
// learner has in the API (each one a sub-action, paced by the run's speed),
// readers for the real state, and the reporting of what happened.
// A run's steps execute one at a time, so Env needs no lock of its own.
type Env struct {
	ctx   context.Context
	c     *cluster.Cluster
	start uint64 // bus Seq when the run's first step began
	pause func() time.Duration

	// What the script's actions left for its queries, from one step to
	// the next: what each producer heard ("topic/value"), every value sent
	// (to name truncated records), producer ids, what consumers read, the
	// last offset lookup and time lookup, and marked times.
	results     map[string]*result
	sent        map[string]bool
	pids        map[string]int64
	consumed    map[string][]string
	consumeErr  map[string]error
	consumedHW  map[string]int64
	lookup      *storage.LookupTrace
	lookupAt    int32
	lookupTopic string
	timeOffset  int64
	times       map[string]int64
	fetched     *fetchRegions     // the last fetch-regions
	compared    *chaos.Comparison // the last compare (compare.go)
	topics      []string          // created by the script, in order
	txns        map[string]*txnProducer
	txnAnswers  map[string]func() error // EndTxn answers not yet collected (vocab_txn.go)
	// powerLost is what each broker's last power loss cut: unsynced bytes
	// by file, relative to its log dir.
	powerLost map[int32]map[string]int64
	// reopen opens the run's cluster again on its data dir (scenario
	// runs only: restart-lab); nil in a lesson.
	reopen func() (*cluster.Cluster, error)

	// watch checks the invariants after every action and fetch (scenario
	// runs only; nil in a lesson).
	watch *watcher

	wg  sync.WaitGroup // pending produces
	out Outcome
}

func newEnv(ctx context.Context, c *cluster.Cluster, pause func() time.Duration) *Env {
	return &Env{ctx: ctx, c: c, pause: pause, results: map[string]*result{}, sent: map[string]bool{}, pids: map[string]int64{},
		consumed: map[string][]string{}, consumeErr: map[string]error{}, consumedHW: map[string]int64{}, times: map[string]int64{},
		txns: map[string]*txnProducer{}, txnAnswers: map[string]func() error{}}
}

// Cluster returns the run's cluster.
func (e *Env) Cluster() *cluster.Cluster { return e.c }

// wait paces sub-actions: the live panel sees one change at a time.
func (e *Env) wait() {
	d := e.pause()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.ctx.Done():
	}
}

// --- reporting ---

// Say adds a sentence to the step's outcome.
func (e *Env) Say(t Text) { e.out.Says = append(e.out.Says, t) }

// Point adds a pointer to the step's outcome.
func (e *Env) Point(p Pointer) { e.out.Pointers = append(e.out.Pointers, p) }

// PointLog points at every record of a replica's log and its LEO and HW.
func (e *Env) PointLog(id int32, topic string) {
	st, ok := e.Status(id, topic)
	if !ok {
		e.Point(Pointer{Kind: "replica", Broker: id, Topic: topic})
		return
	}
	for _, r := range e.Records(id, topic) {
		e.Point(Pointer{Kind: "record", Broker: id, Topic: topic, Offset: r.Offset, Value: r.Value, Note: fmt.Sprintf("e%d", r.Epoch)})
	}
	e.Point(Pointer{Kind: "leo", Broker: id, Topic: topic, Offset: st.LogEndOffset})
	e.Point(Pointer{Kind: "hw", Broker: id, Topic: topic, Offset: st.HighWatermark})
}

// --- operations (sub-actions) ---

// CreateTopic creates a topic; every broker knows it on return.
func (e *Env) CreateTopic(name string, partitions int32, rf int16, configs map[string]string) error {
	_, err := e.c.CreateTopic(name, partitions, rf, configs)
	if err == nil {
		e.topics = append(e.topics, name)
	}
	e.wait()
	return err
}

// Produce sends one record to partition 0 with acks (0, 1 or -1) and
// waits for the answer; acks=all only answers at once when no follower
// has to fetch (an error before the append, or an ISR of the leader alone).
func (e *Env) Produce(topic, value string, acks int16) (int64, error) {
	res, err := e.c.Produce(e.ctx, topic, 0, acks, []cluster.Record{{Value: []byte(value)}}, 30*time.Second)
	e.wait()
	return res.BaseOffset, err
}

// ProduceKey sends one keyed record with acks=1 to the partition Kafka's
// default partitioner (murmur2 of the key) picks.
func (e *Env) ProduceKey(topic, key, value string) (cluster.ProduceResult, error) {
	res, err := e.c.Produce(e.ctx, topic, -1, 1, []cluster.Record{{Key: []byte(key), Value: []byte(value)}}, 30*time.Second)
	e.wait()
	return res, err
}

// Pending is an acks=all produce waiting for its answer.
type Pending struct {
	Value  string
	done   chan struct{}
	offset int64
	err    error
}

// ProduceAsync sends one record to partition 0's leader with acks=all and
// returns once the leader appended it (or answered): the answer comes when
// followers fetch or time passes.
func (e *Env) ProduceAsync(topic, value string) (*Pending, error) {
	return e.produceBytes(topic, value, storage.NewBatch([]storage.Record{{Value: []byte(value), Timestamp: e.c.Clock().Now().UnixMilli()}}))
}

// ProduceSettled produces value with acks=all, lets the followers fetch
// until the replicas agree, and returns the offset the produce was
// acknowledged at (or its error).
func (e *Env) ProduceSettled(topic, value string) (int64, error) {
	p, err := e.ProduceAsync(topic, value)
	if err != nil {
		return 0, err
	}
	if err := e.Settle(); err != nil {
		return 0, err
	}
	return p.Wait()
}

func (e *Env) produceBytes(topic, value string, batch []byte) (*Pending, error) {
	return e.produceBytesTo(e.Meta(topic).Leader, topic, value, batch, 30*time.Second)
}

// produceBytesTo sends an acks=all produce to broker leader, whether or not
// it still leads, and returns once it appended or answered.
func (e *Env) produceBytesTo(leader int32, topic, value string, batch []byte, timeout time.Duration) (*Pending, error) {
	b := e.c.Broker(leader)
	if b == nil {
		return nil, fmt.Errorf("produce %s: partition 0 of %s has no running leader (%d)", value, topic, leader)
	}
	r := b.Replica(topic, 0)
	if r == nil {
		return nil, fmt.Errorf("produce %s: broker %d has no replica of %s", value, leader, topic)
	}
	st := r.Status()
	before, waiting := st.LogEndOffset, st.WaitingProduces
	p := &Pending{Value: value, done: make(chan struct{})}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		res := b.Produce(e.ctx, topic, 0, -1, batch, timeout)
		p.offset, p.err = res.BaseOffset, res.Err
		close(p.done)
	}()
	// A bounded wait for the hand-off: the append, a produce waiting (a
	// quorum leader appends only once a majority has the entry), or an
	// early answer. A pipeline head's append is not a hand-off: its write
	// goes down the pipeline in the produce's own call, which then waits
	// or is answered.
	if tp, ok := e.c.Controller().Topic(topic); ok && tp.Config().Protocol == controller.ProtocolPipeline {
		before = math.MaxInt64
	}
	deadline := time.Now().Add(5 * time.Second)
	for st := r.Status(); st.LogEndOffset <= before && st.WaitingProduces <= waiting && !p.Done(); st = r.Status() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("produce %s to broker %d: neither appended nor answered", value, leader)
		}
		time.Sleep(time.Millisecond)
	}
	e.wait()
	return p, nil
}

// Done reports whether the produce has been answered.
func (p *Pending) Done() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait returns the answer, waiting at most 10 seconds for it: by the time
// a step waits, the lesson's own steps have made the answer due.
func (p *Pending) Wait() (int64, error) {
	select {
	case <-p.done:
		return p.offset, p.err
	case <-time.After(10 * time.Second):
		return -1, fmt.Errorf("produce %s: no answer", p.Value)
	}
}

// Fetch makes each broker's followers send one Fetch to their leaders.
func (e *Env) Fetch(ids ...int32) error {
	for _, id := range ids {
		before := e.c.Bus().LastSeq()
		err := e.c.StepFetch(e.ctx, id)
		if e.watch != nil {
			evs, _ := e.c.Bus().Since(before, 0)
			e.watch.fetched(e, id, evs, err)
			if cerr := e.watch.check(e); cerr != nil {
				return cerr
			}
		}
		if err != nil {
			return fmt.Errorf("fetch round of broker %d: %w", id, err)
		}
		e.wait()
	}
	return nil
}

// Settle lets the given brokers (every running one if none) fetch until no
// LEO, HW or ISR changes.
func (e *Env) Settle(ids ...int32) error {
	state := func() string {
		var b strings.Builder
		for _, id := range e.c.BrokerIDs() {
			if br := e.c.Broker(id); br != nil {
				for _, l := range br.LogDir().Logs() {
					tp := l.TopicPartition()
					if r := br.Replica(tp.Topic, tp.Partition); r != nil {
						st := r.Status()
						fmt.Fprintf(&b, "%d/%s:%d/%d/%v/%d ", id, tp, st.LogEndOffset, st.HighWatermark, st.ISR, st.LeaderEpoch)
					}
				}
			}
		}
		return b.String()
	}
	for range 10 {
		for _, id := range e.c.BrokerIDs() {
			if b := e.c.Broker(id); b != nil {
				b.Heartbeat() // learn metadata changes now
			}
		}
		before := state()
		for _, id := range e.c.BrokerIDs() {
			if len(ids) > 0 && !slices.Contains(ids, id) || e.c.Broker(id) == nil {
				continue
			}
			if err := e.Fetch(id); err != nil {
				return err
			}
		}
		if state() == before {
			return nil
		}
	}
	return errors.New("the replicas did not settle in 10 fetch rounds")
}

// Step moves the paused lab clock by d.
func (e *Env) Step(d time.Duration) error {
	err := e.c.Step(d)
	e.wait()
	return err
}

// Crash stops brokers as killed processes (the page cache survives).
func (e *Env) Crash(ids ...int32) error {
	for _, id := range ids {
		if err := e.c.Crash(id); err != nil {
			return err
		}
		e.wait()
	}
	return nil
}

// PowerLoss stops brokers and loses what they had not fsynced.
func (e *Env) PowerLoss(ids ...int32) error {
	for _, id := range ids {
		lost, err := e.c.PowerLoss(id)
		if err != nil {
			return err
		}
		if e.powerLost == nil {
			e.powerLost = map[int32]map[string]int64{}
		}
		e.powerLost[id] = lost
		e.wait()
	}
	return nil
}

// Restart starts stopped brokers; each recovers from its log dir.
func (e *Env) Restart(ids ...int32) error {
	for _, id := range ids {
		if err := e.c.Restart(id); err != nil {
			return err
		}
		e.wait()
	}
	return nil
}

// Cut cuts the link between two nodes (0 is the controller), both ways.
func (e *Env) Cut(from, to int32) error {
	err := e.c.Cut(from, to, false)
	e.wait()
	return err
}

// Heal restores every link.
func (e *Env) Heal() {
	e.c.Heal()
	e.wait()
}

// Alter sets one topic config.
func (e *Env) Alter(topic, key, value string) error {
	_, err := e.c.AlterConfigs(topic, map[string]*string{key: &value})
	e.wait()
	return err
}

// Checkpoint writes the brokers' HW checkpoint now, as the periodic
// replica.high.watermark.checkpoint would.
func (e *Env) Checkpoint(ids ...int32) {
	for _, id := range ids {
		if b := e.c.Broker(id); b != nil {
			b.CheckpointHighWatermarks()
		}
	}
}

// Flush fsyncs every log of the brokers.
func (e *Env) Flush(ids ...int32) error {
	for _, id := range ids {
		b := e.c.Broker(id)
		if b == nil {
			return fmt.Errorf("flush: broker %d is not running", id)
		}
		for _, l := range b.LogDir().Logs() {
			if err := l.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// --- reading the real state ---

// Rec is one record as a replica's log holds it (the checker's).
type Rec = invariant.Rec

// Log returns broker id's log of partition 0 of topic; nil when the broker
// is down or has no replica.
func (e *Env) Log(id int32, topic string) *storage.Log {
	return e.LogOf(id, topic, 0)
}

// LogOf is Log for any partition.
func (e *Env) LogOf(id int32, topic string, partition int32) *storage.Log {
	b := e.c.Broker(id)
	if b == nil {
		return nil
	}
	r := b.Replica(topic, partition)
	if r == nil {
		return nil
	}
	return r.Log()
}

// Status returns broker id's replica status of partition 0 of topic.
func (e *Env) Status(id int32, topic string) (replication.Status, bool) {
	b := e.c.Broker(id)
	if b == nil {
		return replication.Status{}, false
	}
	r := b.Replica(topic, 0)
	if r == nil {
		return replication.Status{}, false
	}
	return r.Status(), true
}

// Records reads a replica's whole log of partition 0 (nil when it is down).
func (e *Env) Records(id int32, topic string) []Rec { return e.RecordsOf(id, topic, 0) }

// RecordsOf is Records for any partition.
func (e *Env) RecordsOf(id int32, topic string, partition int32) []Rec {
	out, _ := e.readRecords(id, topic, partition)
	return out
}

// readRecords is RecordsOf that says whether the log could be read (not
// when the broker is down or its disk failed).
func (e *Env) readRecords(id int32, topic string, partition int32) ([]Rec, bool) {
	l := e.LogOf(id, topic, partition)
	if l == nil {
		return nil, false
	}
	batches, err := l.ReadBatches(l.LogStartOffset(), l.LogEndOffset(), 1<<20)
	if err != nil {
		return nil, false
	}
	var out []Rec
	for _, b := range batches {
		for _, x := range b.Records {
			v := string(x.Value)
			if b.Header.Attributes&controlAttr != 0 {
				v = controlValue(x.Key) // a transaction marker: COMMIT or ABORT
			}
			out = append(out, Rec{Offset: x.Offset, Epoch: b.Header.PartitionLeaderEpoch, Value: v, Key: string(x.Key),
				Tombstone: x.Value == nil, Timestamp: x.Timestamp})
		}
	}
	return out, true
}

// Values lists the values of a replica's log of partition 0.
func (e *Env) Values(id int32, topic string) []string {
	var out []string
	for _, r := range e.Records(id, topic) {
		if r.Tombstone { // as key-values writes it
			r.Value = r.Key + "=" + tombstoneText
		}
		out = append(out, r.Value)
	}
	return out
}

// Has reports whether a replica's log holds value at offset.
func (e *Env) Has(id int32, topic string, offset int64, value string) bool {
	for _, r := range e.Records(id, topic) {
		if r.Offset == offset {
			return r.Value == value
		}
	}
	return false
}

// Meta returns the controller's view of partition 0 of topic.
func (e *Env) Meta(topic string) controller.Partition {
	t, ok := e.c.Controller().Topic(topic)
	if !ok || len(t.Partitions) == 0 {
		return controller.Partition{Leader: -1}
	}
	return t.Partitions[0]
}

// Consume reads partition 0 from the start as a consumer does (only below
// the leader's HW).
func (e *Env) Consume(topic string) ([]string, error) {
	recs, _, err := e.c.Consume(topic, 0, -1, 1000)
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out, err
}

// Truncated returns the records broker id's truncations of partition 0 of
// topic removed since the run began.
func (e *Env) Truncated(id int32, topic string) []events.TruncatedRecord {
	evs, _ := e.c.Bus().Since(e.start, 0)
	var out []events.TruncatedRecord
	for _, ev := range evs {
		if ev.Kind == events.KindTruncation && ev.Broker == id && ev.Topic == topic && ev.Partition == 0 {
			out = append(out, ev.Truncated...)
		}
	}
	return out
}

// TruncatedValue reports whether broker id truncated a record with value
// (matched by digest) from partition 0 of topic.
func (e *Env) TruncatedValue(id int32, topic, value string) bool {
	d := events.Digest(nil, []byte(value))
	for _, r := range e.Truncated(id, topic) {
		if r.Digest == d {
			return true
		}
	}
	return false
}

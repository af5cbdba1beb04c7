package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/server/broker"
	"tidemark/server/controller"
	"tidemark/server/kafkaerr"
	"tidemark/storage"
	"tidemark/storage/vfs/errorfs"
)

// CreateTopic creates a topic through the controller and lets every broker
// learn of it before returning.
func (c *Cluster) CreateTopic(name string, partitions int32, replicationFactor int16, configs map[string]string) (controller.Topic, error) {
	t, err := c.controller.CreateTopic(name, partitions, replicationFactor, configs)
	if err != nil {
		return t, err
	}
	c.propagate()
	return t, nil
}

// DeleteTopic deletes a topic; brokers remove its logs.
func (c *Cluster) DeleteTopic(name string) error {
	if err := c.controller.DeleteTopic(name); err != nil {
		return err
	}
	c.propagate()
	return nil
}

// AlterConfigs changes topic configs (nil value: back to the default).
func (c *Cluster) AlterConfigs(topic string, changes map[string]*string) (controller.Topic, error) {
	t, err := c.controller.AlterConfigs(topic, changes)
	if err != nil {
		return t, err
	}
	c.propagate()
	return t, nil
}

// CreatePartitions grows a topic to count partitions.
func (c *Cluster) CreatePartitions(topic string, count int32) (controller.Topic, error) {
	t, err := c.controller.CreatePartitions(topic, count)
	if err != nil {
		return t, err
	}
	c.propagate()
	return t, nil
}

// propagate makes every running broker fetch the metadata now instead of
// at its next heartbeat, so a change is visible when the call returns. The
// brokers apply it one after another, in broker order: applying is not
// private to a broker (a pipeline head sends its recovery write to its
// successors as it applies, and a successor that has not applied the
// partition yet refuses it, to be retried at the next tick), so brokers
// applying at once made which partitions came up at once depend on
// goroutine scheduling, and a chaos run did not replay exactly.
func (c *Cluster) propagate() {
	for _, b := range c.liveBrokers() {
		b.Heartbeat()
	}
}

// Record is one record to produce.
type Record struct {
	Key   []byte
	Value []byte
}

// ProduceResult is where a produce went and how it ended.
type ProduceResult struct {
	Partition  int32
	Leader     int32
	BaseOffset int64
	LastOffset int64
}

// Produce sends records to a partition's leader, as a producer would, and
// waits as acks says (0, 1 or -1 for all). partition < 0 picks one from the
// first record's key with Kafka's default partitioner (murmur2), or 0
// without a key. The error is a kerr error (NOT_ENOUGH_REPLICAS, …).
func (c *Cluster) Produce(ctx context.Context, topic string, partition int32, acks int16, records []Record, timeout time.Duration) (ProduceResult, error) {
	if len(records) == 0 {
		return ProduceResult{}, fmt.Errorf("%w: no records", kerr.InvalidRequest)
	}
	if acks != 0 && acks != 1 && acks != -1 {
		return ProduceResult{}, kerr.InvalidRequiredAcks
	}
	t, ok := c.controller.Topic(topic)
	if !ok {
		return ProduceResult{}, kerr.UnknownTopicOrPartition
	}
	if partition < 0 {
		partition = 0
		if records[0].Key != nil {
			partition = PartitionForKey(records[0].Key, int32(len(t.Partitions)))
		}
	}
	if int(partition) >= len(t.Partitions) {
		return ProduceResult{}, kerr.UnknownTopicOrPartition
	}
	leader := t.Partitions[partition].Leader
	res := ProduceResult{Partition: partition, Leader: leader, BaseOffset: -1, LastOffset: -1}
	if leader < 0 {
		return res, kerr.LeaderNotAvailable
	}
	b := c.Broker(leader)
	if b == nil {
		return res, kerr.NotLeaderForPartition
	}
	now := c.clock.Now().UnixMilli()
	recs := make([]storage.Record, len(records))
	for i, r := range records {
		recs[i] = storage.Record{Key: r.Key, Value: r.Value, Timestamp: now}
	}
	c.publishMessage(events.KindProduceRequest, leader, events.Wire{From: events.NoBroker, To: leader, Client: UIClientID, Records: len(records)},
		func(e *events.Event) { e.Topic, e.Partition, e.Acks = topic, partition, acksName(acks) })
	out := b.Produce(ctx, topic, partition, acks, storage.NewBatch(recs), timeout)
	res.BaseOffset, res.LastOffset = out.BaseOffset, out.LastOffset
	return res, out.Err
}

// PartitionForKey is Kafka's default partitioner for keyed records:
// murmur2(key) made positive, modulo the partition count.
func PartitionForKey(key []byte, partitions int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % partitions
}

// murmur2 is the hash Kafka's Java client partitions keys with.
func murmur2(data []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[4*n:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// ConsumedRecord is one record a consumer read.
type ConsumedRecord struct {
	Offset      int64
	LeaderEpoch int32
	Key         []byte
	Value       []byte
	Timestamp   int64
}

// Consume reads up to limit records from offset on, as a consumer does: from
// the partition's leader and only below its high watermark. It returns the
// records and the HW. It stops at ConsumeMaxBytes, of batches as stored and,
// apart, of keys and values decompressed.
func (c *Cluster) Consume(topic string, partition int32, offset int64, limit int) ([]ConsumedRecord, int64, error) {
	var out []ConsumedRecord
	decoded := 0 // bytes of the keys and values returned, decompressed
	hw, err := c.ConsumeEach(topic, partition, offset, limit, func(r ConsumedRecord) bool {
		if len(out) > 0 && decoded >= ConsumeMaxBytes {
			return false
		}
		out = append(out, r)
		decoded += len(r.Key) + len(r.Value)
		return true
	})
	if err != nil {
		return nil, hw, err
	}
	return out, hw, nil
}

// ConsumeEach is Consume handing the records to fn one at a time, as it
// decodes each batch, until fn returns false: a caller streaming them
// holds one batch at a time. It stops at limit records and after the batch
// that reaches ConsumeMaxBytes as stored; the bound after decompression is
// fn's. It returns the HW.
func (c *Cluster) ConsumeEach(topic string, partition int32, offset int64, limit int, fn func(ConsumedRecord) bool) (int64, error) {
	t, ok := c.controller.Topic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return 0, kerr.UnknownTopicOrPartition
	}
	leader := t.Partitions[partition].Leader
	if leader < 0 {
		return 0, kerr.LeaderNotAvailable
	}
	b := c.Broker(leader)
	if b == nil {
		return 0, kerr.NotLeaderForPartition
	}
	r := b.Replica(topic, partition)
	if r == nil {
		return 0, kerr.NotLeaderForPartition
	}
	hw := r.Status().HighWatermark
	l := r.Log()
	if offset < 0 {
		offset = l.LogStartOffset()
	}
	// As Kafka's fetch: out of range only outside the log; between the HW
	// and the LEO (a new leader whose HW has not caught up yet) there is
	// nothing to read yet, which is not an error.
	if offset < l.LogStartOffset() || offset > l.LogEndOffset() {
		return hw, kerr.OffsetOutOfRange
	}
	if offset >= hw {
		return hw, nil
	}
	n := 0
	read := 0 // bytes of the batches read, as stored (compressed)
	more := true
	err := l.EachBatch(offset, hw, max(limit, 1), func(bt storage.Batch) bool {
		for _, rec := range bt.Records {
			if rec.Offset >= offset && n < limit && more {
				more = fn(ConsumedRecord{Offset: rec.Offset, LeaderEpoch: bt.Header.PartitionLeaderEpoch, Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp})
				n++
			}
		}
		read += int(bt.Header.Length)
		return more && n < limit && read < ConsumeMaxBytes
	})
	return hw, err
}

// ConsumeMaxBytes bounds what one Consume reads, as Kafka's consumer's
// max.partition.fetch.bytes (1 MiB) does: it stops after the batch that
// reaches it, always returning the first whole, so a partition of
// megabyte records is read a few at a time, not limit at once. It counts
// the batches as stored and, apart, the keys and values returned after
// decompression, stopping at the record that reaches it: a small
// compressed batch may hold many megabytes.
const ConsumeMaxBytes = 1 << 20

// Crash stops a broker as a killed process would: the page cache keeps
// what it wrote. The controller notices when its heartbeats stop.
func (c *Cluster) Crash(id int32) error {
	b, err := c.takeBroker(id)
	if err != nil {
		return err
	}
	err = b.Crash()
	c.publishFault(events.FaultCrash, id, "event.fault.crash", id)
	return err
}

// FailDisk makes broker id's disk fail every write and fsync from now on
// (a dead disk): at its next write its log dir goes offline, clients get
// KAFKA_STORAGE_ERROR, and the broker halts, as Kafka does when its last
// log dir fails; the controller moves its leaderships once it misses its
// session. Restart brings it back on a working disk; what reached the disk
// before the failure (the page cache included) is recovered.
func (c *Cluster) FailDisk(id int32) error {
	c.mu.Lock()
	b, disk := c.brokers[id], c.disks[id]
	c.mu.Unlock()
	if b == nil || disk == nil {
		return fmt.Errorf("%w: broker %d is not running", kerr.BrokerNotAvailable, id)
	}
	fail := func(op errorfs.Op) error {
		if op.Kind == errorfs.OpWrite || op.Kind == errorfs.OpSync {
			return fmt.Errorf("%w: disk failed", errorfs.ErrInjected)
		}
		return nil
	}
	disk.Inject(errorfs.InjectorFunc(fail))
	c.publishFault(events.FaultDiskFailure, id, "event.fault.disk-failure", id)
	return nil
}

// halted takes a broker that halted itself (its log dir went offline, or
// its listener stopped) out of the running set, as a crash would.
func (c *Cluster) halted(id int32, cause error) {
	b, err := c.takeBroker(id)
	if err != nil {
		return // already stopped
	}
	b.Crash()
	why := i18n.Word("event.word.halt.listener") // the cause is in the broker's log
	if errors.Is(cause, kerr.KafkaStorageError) {
		why = i18n.Word("event.word.halt.log-dir")
	}
	c.publishFault(events.FaultCrash, id, "event.fault.halted", id, why)
}

// PowerLoss stops a broker and loses everything it had not fsynced.
func (c *Cluster) PowerLoss(id int32) (map[string]int64, error) {
	b, err := c.takeBroker(id)
	if err != nil {
		return nil, err
	}
	lost, err := b.PowerLoss()
	var total int
	for _, n := range lost {
		total += int(n)
	}
	c.publishFault(events.FaultPowerLoss, id, i18n.Plural("event.fault.power-loss", total), id, total)
	return lost, err
}

func (c *Cluster) takeBroker(id int32) (*broker.Broker, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.brokers[id]
	if !ok {
		if _, known := c.ports[id]; known {
			return nil, fmt.Errorf("%w: broker %d is not running", kerr.BrokerNotAvailable, id)
		}
		return nil, fmt.Errorf("%w: no broker %d", kerr.BrokerNotAvailable, id)
	}
	delete(c.brokers, id)
	close(c.stopped[id])
	delete(c.stopped, id)
	return b, nil
}

// AwaitStopped waits until broker id is not running: at once if it is not;
// else until something stops it (a broker halts on its own goroutine when
// its log dir fails) or ctx ends.
func (c *Cluster) AwaitStopped(ctx context.Context, id int32) error {
	c.mu.Lock()
	_, running := c.brokers[id]
	ch := c.stopped[id]
	c.mu.Unlock()
	if !running {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: broker %d still running: %v", kerr.RequestTimedOut, id, ctx.Err())
	}
}

// publishFault publishes a fault of broker id, its message the catalog
// key with args.
func (c *Cluster) publishFault(kind events.FaultKind, id int32, key string, args ...any) {
	publisher{c}.Publish(i18n.EventMessage(events.Event{Kind: events.KindFault, Broker: id, Fault: &events.Fault{Kind: kind}}, key, args...))
}

// Restart starts a stopped broker on its log dir: it recovers from disk
// (recovery point, HW checkpoint, epoch cache), registers, and rejoins as a
// follower, truncating by its topics' rule. Records its recovery no longer
// has are reported as truncated ("lost").
func (c *Cluster) Restart(id int32) error {
	c.mu.Lock()
	addr, known := c.ports[id]
	_, running := c.brokers[id]
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("cluster closed")
	case !known:
		return fmt.Errorf("%w: no broker %d", kerr.BrokerNotAvailable, id)
	case running:
		return fmt.Errorf("%w: broker %d is already running", kerr.InvalidRequest, id)
	}
	c.publishFault(events.FaultRestart, id, "event.fault.restart", id)
	b, err := c.startBroker(id, addr)
	if err != nil {
		return err
	}
	c.reportRecovery(b)
	b.Heartbeat()
	return nil
}

// reportRecovery publishes, for every log of a restarted broker, what its
// recovery kept: records past the recovered LEO are shown as lost.
func (c *Cluster) reportRecovery(b *broker.Broker) {
	var evs []events.Event
	c.snapMu.Lock()
	for _, l := range b.LogDir().Logs() {
		tp := l.TopicPartition()
		p := c.snap.Partition(tp.Topic, tp.Partition)
		if p == nil {
			continue
		}
		r := p.Replica(b.ID())
		if r == nil {
			continue
		}
		leo := l.LogEndOffset()
		ev := events.Event{Kind: events.KindTruncation, Broker: b.ID(), Topic: tp.Topic, Partition: tp.Partition,
			Offsets: &events.Offsets{Base: leo, Last: r.LEO - 1, LEO: leo, HW: min(r.HW, leo)}}
		rec := l.Recovery()
		if leo >= r.LEO {
			ev.Kind = events.KindLEO
			ev = i18n.EventMessage(ev, "event.recovery.kept", leo, i18n.Count("event.word.segments", len(rec.SegmentsRecovered)), rec.RecoveryPoint)
		} else {
			for _, x := range r.Records {
				if x.Offset >= leo {
					ev.Truncated = append(ev.Truncated, events.TruncatedRecord{Offset: x.Offset, LeaderEpoch: x.LeaderEpoch, Digest: events.RecordDigest(x)})
				}
			}
			ev = i18n.EventMessage(ev, "event.recovery.lost", leo, r.LEO-1, rec.RecoveryPoint, i18n.Count("event.word.torn-bytes", int(rec.BytesTruncated)))
		}
		evs = append(evs, ev)
	}
	c.snapMu.Unlock()
	publisher{c}.Publish(evs...)
}

// Cut cuts the link between two nodes (ControllerNode is the controller),
// both ways unless oneWay.
func (c *Cluster) Cut(from, to int32, oneWay bool) error {
	if err := c.checkLink(from, to); err != nil {
		return err
	}
	c.network.Cut(from, to, oneWay)
	dir := i18n.Word("event.word.dir.both")
	if oneWay {
		dir = i18n.Word("event.word.dir.one")
	}
	publisher{c}.Publish(i18n.EventMessage(events.Event{Kind: events.KindFault, Broker: events.NoBroker,
		Fault: &events.Fault{Kind: events.FaultCut, From: from, To: to, OneWay: oneWay}},
		"event.link.cut", nodeName(from), nodeName(to), dir))
	return nil
}

// Heal restores every link.
func (c *Cluster) Heal() {
	c.network.Heal()
	publisher{c}.Publish(i18n.EventMessage(events.Event{Kind: events.KindFault, Broker: events.NoBroker,
		Fault: &events.Fault{Kind: events.FaultHeal}}, "event.link.heal"))
}

// SlowFetches delays every fetch the follower sends to the leader by d (0 removes it).
func (c *Cluster) SlowFetches(follower, leader int32, d time.Duration) error {
	if err := c.checkNode(follower); err != nil {
		return err
	}
	if err := c.checkNode(leader); err != nil {
		return err
	}
	c.network.SetDelay(follower, leader, d)
	return nil
}

// checkLink refuses a link between nodes the lab does not have, or from a
// node to itself (INVALID_REQUEST).
func (c *Cluster) checkLink(from, to int32) error {
	if err := c.checkNode(from); err != nil {
		return err
	}
	if err := c.checkNode(to); err != nil {
		return err
	}
	if from == to {
		return kafkaerr.WithKey(fmt.Errorf("%w: a link needs two different nodes", kerr.InvalidRequest), "control.link-same-node")
	}
	return nil
}

func (c *Cluster) checkNode(id int32) error {
	if id == ControllerNode || id >= 1 && id <= int32(c.opts.Brokers) {
		return nil
	}
	return kafkaerr.WithKey(fmt.Errorf("%w: no node %d (0 is the controller, brokers are 1..%d)", kerr.InvalidRequest, id, c.opts.Brokers),
		"control.no-node", strconv.Itoa(int(id)), strconv.Itoa(c.opts.Brokers))
}

// nodeName names a node in a message: a word (i18n.Word) that each page
// translates.
func nodeName(id int32) string {
	if id == ControllerNode {
		return i18n.Word("event.word.node.controller")
	}
	return i18n.Word("event.word.node.broker", id)
}

// Pause stops the lab clock.
func (c *Cluster) Pause() {
	if c.clock.Pause() {
		publisher{c}.Publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockPause}})
	}
}

// Resume lets the lab clock run again.
func (c *Cluster) Resume() {
	if c.clock.Resume() {
		c.linkDelays.resume() // what a paused lab's steps left on its way arrives on time
		publisher{c}.Publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockResume}})
	}
}

// Step moves the paused clock by d and runs what that time brings (runTime).
//
// While a link is delayed, or something is on its way over one, the clock
// moves one grain (stepToEventGrain) at a time, so what arrives in a grain
// (a fetch, a heartbeat, an AlterPartition, a Raft or pipeline message) is
// handled at the grain's time, and the brokers heartbeat and the
// controller fences as a running lab's timers would (liveGrain): with a
// heartbeat on its way for a while, heartbeats at the step's end alone
// would leave a whole step without one, and a session that expired within
// the step would be renewed by the late heartbeat arriving before the
// controller looked. Otherwise the clock moves all at once, as before
// delays acted on fetches and controller calls, so such steps replay
// unchanged.
func (c *Cluster) Step(d time.Duration) error {
	start := c.clock.Now()
	fine := c.network.delayed() || c.linkDelays.inFlight() > 0
	moved := d
	if fine {
		moved = min(stepToEventGrain, d)
	}
	if !c.clock.Step(moved) {
		return fmt.Errorf("%w: step needs a paused clock and a positive duration", kerr.InvalidRequest)
	}
	publisher{c}.Publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: d.Milliseconds()}})
	// Raft counts its timeouts in ticks: give every broker in turn the
	// ticks the step skips, one grain at a time (runTime gives the last).
	// What a grain's ticks send on a delayed link leaves at the grain's
	// time, even when the clock already reads the step's end.
	for t := stepToEventGrain; t < d; t += stepToEventGrain {
		at := start.Add(t)
		if fine && t > moved && c.clock.Step(t-moved) {
			moved = t
		}
		c.linkDelays.deliverDue(at) // messages on delayed links arrive
		if fine {
			c.liveGrain(t, at)
		}
		c.linkDelays.sendingAt(at, func() {
			for _, b := range c.liveBrokers() {
				b.TickRaft(at)
			}
		})
	}
	if moved < d {
		c.clock.Step(d - moved)
	}
	c.linkDelays.deliverDue(c.clock.Now())
	c.runTime()
	return nil
}

// liveGrain runs at a grain of a step, t into it (lab time at), what a
// running lab's timers would: each broker heartbeats every heartbeat
// interval of the step (none while one is on its way; runTime sends one
// at every step's end), and the controller fences the brokers whose
// session expired. The interval counts from the step's start, not on the
// running lab's grid of lab time: a lab's clock starts at the real time
// it opened, and a replay must not depend on it.
func (c *Cluster) liveGrain(t time.Duration, at time.Time) {
	for _, b := range c.liveBrokers() {
		if hb := b.HeartbeatInterval(); t%hb < stepToEventGrain {
			b.Heartbeat()
		}
	}
	if expiry, ok := c.controller.NextSessionExpiry(); ok && !expiry.After(at) {
		c.controller.Tick()
	}
}

// runTime runs what a step of the clock brings, in order: running brokers
// heartbeat, the controller fences the silent ones and elects, brokers
// learn the result and tick their partitions (ISR shrink, timeouts,
// flush.ms, retention, the HW checkpoint).
func (c *Cluster) runTime() {
	bs := c.liveBrokers()
	for _, b := range bs {
		b.Heartbeat()
	}
	c.controller.Tick()
	for _, b := range bs {
		b.Heartbeat()
		b.Tick()
	}
}

// MaxStepToEvent is how far StepToEvent moves the clock, at most, looking
// for the next event.
const MaxStepToEvent = time.Minute

// stepToEventGrain is StepToEvent's step: a broker's tick (its default
// TickInterval), the finest grain at which the lab's timers fire.
const stepToEventGrain = 50 * time.Millisecond

// StepToEvent moves the paused clock stepToEventGrain at a time, running
// what each step brings as Step does, until an event the event list shows
// is published (not a message in flight, not late record values), or until
// limit (at most MaxStepToEvent; 0 means it) has passed. It returns how far
// the clock moved and the listed events the last step published: usually
// one, but one instant can bring several (a fencing and the elections it
// causes). None means nothing happened within limit; then the clock event
// says how far it went. The messages of the steps that brought nothing
// (heartbeats every step) are dropped, so the stage shows only those that
// led to the event, right after it.
func (c *Cluster) StepToEvent(limit time.Duration) (time.Duration, []events.Event, error) {
	if limit <= 0 || limit > MaxStepToEvent {
		limit = MaxStepToEvent
	}
	c.stepMu.Lock()
	defer c.stepMu.Unlock()
	if !c.clock.Paused() {
		return 0, nil, fmt.Errorf("%w: stepping to the next event needs a paused clock", kerr.InvalidRequest)
	}
	c.messages.hold()
	var moved time.Duration
	for moved < limit {
		d := min(stepToEventGrain, limit-moved)
		seq := c.bus.LastSeq()
		if !c.clock.Step(d) {
			c.messages.release()
			return moved, nil, fmt.Errorf("%w: the clock was resumed while stepping to the next event", kerr.InvalidRequest)
		}
		moved += d
		c.linkDelays.deliverDue(c.clock.Now()) // messages on delayed links arrive
		c.runTime()
		if evs := listedSince(c.bus, seq); len(evs) > 0 {
			if msgs := c.messages.release(); len(msgs) > 0 {
				publisher{c}.Publish(msgs...)
			}
			return moved, evs, nil
		}
		c.messages.drop()
	}
	c.messages.release()
	publisher{c}.Publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: moved.Milliseconds()}})
	return moved, nil, nil
}

// listedSince returns the events after seq that the event list shows.
func listedSince(bus *events.Bus, seq uint64) []events.Event {
	evs, _ := bus.Since(seq, 0)
	out := evs[:0]
	for _, e := range evs {
		if !e.Kind.Unlisted() {
			out = append(out, e)
		}
	}
	return out
}

// SetRate makes the lab clock run at rate: RateQuarter, RateOne or RateFour
// lab seconds per real second (INVALID_REQUEST otherwise). Paused, the
// clock stays paused and runs at rate once resumed.
func (c *Cluster) SetRate(rate float64) error {
	changed, err := c.clock.SetRate(rate)
	if err != nil {
		return err
	}
	if changed {
		publisher{c}.Publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockRate, Rate: rate}})
	}
	return nil
}

// StepFetch makes one broker's followers send one Fetch each to their
// leaders and apply the answers.
func (c *Cluster) StepFetch(ctx context.Context, id int32) error {
	b := c.Broker(id)
	if b == nil {
		return fmt.Errorf("%w: broker %d is not running", kerr.BrokerNotAvailable, id)
	}
	return b.FetchRound(ctx)
}

// FencingRule returns the name of the controller's fencing rule.
func (c *Cluster) FencingRule() string { return c.controller.FencingRule().String() }

// SetFencingRule switches the controller's fencing rule (kraft-elr, kraft,
// zookeeper, zookeeper-pre-2.2 or kraft-elr-recovery; INVALID_CONFIG
// otherwise); brokers learn it at once.
func (c *Cluster) SetFencingRule(name string) error {
	r, err := controller.ParseFencingRule(name)
	if err != nil {
		return err
	}
	if err := c.controller.SetFencingRule(r); err != nil {
		return err
	}
	c.propagate()
	return nil
}

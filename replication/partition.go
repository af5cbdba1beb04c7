package replication

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// Role is what a replica currently is for its partition; the zero value
// RoleNone means no LeaderAndIsr has arrived yet.
type Role int

const (
	// RoleNone means no LeaderAndIsr has arrived yet (a freshly started replica).
	RoleNone Role = iota
	// RoleLeader means this replica takes produce requests and serves fetches.
	RoleLeader
	// RoleFollower means this replica fetches from the leader (or waits for one
	// when the partition is offline).
	RoleFollower
)

// String returns "none", "leader" or "follower".
func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// NoLeader is the leader id of an offline partition (-1).
const NoLeader int32 = -1

// PartitionState is the controller's view of a partition, as a
// LeaderAndIsr request (or a KRaft partition record) carries it.
type PartitionState struct {
	// Leader is the leader's broker id; NoLeader when offline.
	Leader int32
	// LeaderEpoch increments at every leader election.
	LeaderEpoch int32
	// PartitionEpoch increments at every change of leader or ISR; ISR
	// proposals must carry the current one.
	PartitionEpoch int32
	// Replicas is the assignment (AR), in preference order.
	Replicas []int32
	// ISR is the in-sync replica set; empty only while there is no leader
	// (KIP-966 lets the last member leave).
	ISR []int32
}

func (st PartitionState) validate() error {
	if len(st.Replicas) == 0 {
		return errors.New("replication: partition state has no replicas")
	}
	if len(st.ISR) == 0 && st.Leader != NoLeader {
		return errors.New("replication: partition state has a leader and an empty ISR")
	}
	for _, r := range st.ISR {
		if !slices.Contains(st.Replicas, r) {
			return fmt.Errorf("replication: ISR member %d is not in replicas %v", r, st.Replicas)
		}
	}
	if st.Leader != NoLeader && !slices.Contains(st.ISR, st.Leader) {
		return fmt.Errorf("replication: leader %d is not in ISR %v", st.Leader, st.ISR)
	}
	if st.LeaderEpoch < 0 || st.PartitionEpoch < 0 {
		return fmt.Errorf("replication: negative epoch (leader epoch %d, partition epoch %d)", st.LeaderEpoch, st.PartitionEpoch)
	}
	return nil
}

// LogState is what a replica's log holds when the Partition is created (at
// start or after recovery): offsets, the checkpointed HW and the leader-epoch
// cache.
type LogState struct {
	LogStartOffset int64
	LogEndOffset   int64
	// HighWatermark is the value from replication-offset-checkpoint; it is
	// clamped into [LogStartOffset, LogEndOffset].
	HighWatermark int64
	EpochCache    []EpochEntry
}

// Batch is a run of records the runtime appended: offsets BaseOffset through
// LastOffset, all stamped with leader epoch Epoch.
type Batch struct {
	BaseOffset int64
	LastOffset int64
	Epoch      int32
}

// ProduceRequest describes one partition's batch of a produce request after
// the runtime appended it.
type ProduceRequest struct {
	// ID is the runtime's handle; it comes back in ProduceResult.
	ID uint64
	// Acks is 0, 1 or -1 (all).
	Acks  int16
	Batch Batch
	// DeadlineMs is when an acks=all request fails with REQUEST_TIMED_OUT
	// (the produce request's timeout added to the append time); 0 waits
	// forever.
	DeadlineMs int64
}

// ProduceResult is a produce request that is done. Err is nil on success,
// else a kerr error. For acks=0 the runtime sends no response at all.
type ProduceResult struct {
	ID         uint64
	Acks       int16
	BaseOffset int64
	LastOffset int64
	Err        error
}

// FetchRequest is a follower's Fetch for this partition.
type FetchRequest struct {
	ReplicaID   int32
	FetchOffset int64
	// CurrentLeaderEpoch is the epoch the follower believes is current; -1
	// skips the check (old clients).
	CurrentLeaderEpoch int32
	// LastFetchedEpoch is the epoch of the follower's last record; -1 when
	// unknown or when the follower uses RuleHighWatermark.
	LastFetchedEpoch int32
	// ReplicaEpoch is the follower's broker epoch (Fetch v15's
	// ReplicaState.ReplicaEpoch); -1 when unknown. An ISR proposal carries
	// it, so the controller can refuse a member whose fetches came from an
	// earlier incarnation (KIP-903).
	ReplicaEpoch int64
}

// FetchResult is the leader's answer to a follower's Fetch. On a follower it
// is the decoded response, passed to HandleFetchResponse.
type FetchResult struct {
	// Err is nil or FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
	// NOT_LEADER_OR_FOLLOWER, REPLICA_NOT_AVAILABLE or OFFSET_OUT_OF_RANGE.
	Err error
	// DivergingEpoch, when set, tells the follower its log has gone past the
	// end of its last fetched epoch on the leader; no records are returned.
	DivergingEpoch *EpochEndOffset
	// HighWatermark is the leader's HW as of before this fetch was counted
	// (Kafka reads, then updates), so a follower learns an HW one round late.
	HighWatermark int64
	// LogStartOffset and LogEndOffset are the leader's. On the leader, the
	// runtime returns records from FetchOffset up to LogEndOffset. A
	// follower runtime that gets OFFSET_OUT_OF_RANGE fills LogEndOffset from a
	// ListOffsets(latest) request, as Kafka's fetcher does.
	LogStartOffset int64
	LogEndOffset   int64
}

// AlterPartitionRequest is an ISR proposal for the controller.
type AlterPartitionRequest struct {
	// Proposal numbers this Partition's proposals 1, 2, … (never reused);
	// the runtime hands the request back with its answer
	// (Partition.AlterPartitionResponse), so an answer is applied only to
	// the proposal it answers, as Kafka's Partition checks that its
	// pending state is still the one it proposed. It is not sent on the wire.
	Proposal       uint64
	BrokerID       int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
	// NewISRBrokerEpochs holds, for each member of NewISR in order, the
	// broker epoch its last fetch carried (AlterPartition v3's
	// NewIsrWithEpochs, KIP-903); -1 for the leader itself and for a
	// member not heard from in this leadership.
	NewISRBrokerEpochs []int64
	// Changes says which replicas the proposal drops or adds and why
	// (events.ISRLagged with the lag and replica.lag.time.max.ms,
	// events.ISRCaughtUp with the offset reached): the rules decide it, so
	// the controller's ISR event carries the cause rather than guessing
	// it. It is not sent on the wire; nil for a proposal that only resends
	// the ISR.
	Changes []events.ISRChange
}

// AlterPartitionResponse is the controller's answer. Err is nil when the
// proposal was accepted; then ISR and PartitionEpoch are the new committed
// state. A stale proposal is answered with INVALID_UPDATE_VERSION or
// FENCED_LEADER_EPOCH.
type AlterPartitionResponse struct {
	Err            error
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// TruncationCause says which rule chose a truncation point.
type TruncationCause int

const (
	// TruncateToHighWatermark is RuleHighWatermark on becoming follower, or a
	// diverging-epoch answer without an end offset.
	TruncateToHighWatermark TruncationCause = iota
	// TruncateDivergingEpoch means the leader reported a diverging epoch.
	TruncateDivergingEpoch
	// TruncateLeaderEndOffset means OFFSET_OUT_OF_RANGE and the leader's log
	// ends below ours (what happened after unclean elections before 0.11).
	TruncateLeaderEndOffset
	// TruncateFullyAndStartAt means OFFSET_OUT_OF_RANGE and the leader's log
	// starts after ours ends; the whole log goes.
	TruncateFullyAndStartAt
	// TruncateBatchBoundary means the leader's fetched batch starts inside
	// this replica's last batch.
	TruncateBatchBoundary
)

// String names the cause.
func (c TruncationCause) String() string {
	switch c {
	case TruncateToHighWatermark:
		return "high-watermark"
	case TruncateDivergingEpoch:
		return "diverging-epoch"
	case TruncateLeaderEndOffset:
		return "leader-end-offset"
	case TruncateFullyAndStartAt:
		return "truncate-fully"
	case TruncateBatchBoundary:
		return "batch-boundary"
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// Truncation tells the runtime to cut its log: records at offsets
// ≥ ToOffset (up to FromOffset, the old LEO) go. For TruncateFullyAndStartAt
// every record goes and the log restarts empty at ToOffset.
type Truncation struct {
	FromOffset int64
	ToOffset   int64
	Rule       Rule
	Cause      TruncationCause
	// ReasonKey and ReasonArgs say why, as a catalog key and its
	// arguments: the reporter renders them (the rules know no language).
	ReasonKey  string
	ReasonArgs []any
}

// Ready is what the runtime must act on, in this order: Truncations and
// EpochCache (persist before sending anything), HighWatermark, then
// AlterPartition and Completed. The zero Ready has nothing to do.
type Ready struct {
	Truncations []Truncation
	// EpochCacheChanged says EpochCache is the new leader-epoch cache to
	// write to leader-epoch-checkpoint.
	EpochCacheChanged bool
	EpochCache        []EpochEntry
	// HighWatermarkChanged says HighWatermark is the new HW.
	HighWatermarkChanged bool
	HighWatermark        int64
	// AlterPartition, when set, is an ISR proposal to send to the controller.
	AlterPartition *AlterPartitionRequest
	// Completed are produce requests that are done, in offset order.
	Completed []ProduceResult
}

// Empty reports whether r holds nothing to act on.
func (r Ready) Empty() bool {
	return len(r.Truncations) == 0 && !r.EpochCacheChanged && !r.HighWatermarkChanged &&
		r.AlterPartition == nil && len(r.Completed) == 0
}

type followerState struct {
	brokerEpoch        int64 // of its last fetch; -1 until then
	leo                int64 // -1 until its first fetch under this leader
	lastFetchLeaderLEO int64
	lastFetchMs        int64
	lastCaughtUpMs     int64
}

// caughtUp is Kafka's ReplicaState.isCaughtUp.
func (f *followerState) caughtUp(leaderLEO, nowMs, lagMs int64) bool {
	return f.leo == leaderLEO || nowMs-f.lastCaughtUpMs <= lagMs
}

type waiter struct {
	id         uint64
	base, last int64
	deadlineMs int64
}

// Partition is one broker's replication state machine for one partition.
// Use it from one goroutine; it has no locks.
type Partition struct {
	id  int32
	cfg Config
	now int64

	role           Role
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32

	logStart, leo, hw int64
	epochs            []EpochEntry

	// Leader only.
	epochStart int64 // start offset of the current leader epoch
	followers  map[int32]*followerState
	inflight   *AlterPartitionRequest
	isrFenced  bool   // a proposal was rejected as stale: wait for new state
	proposals  uint64 // the last AlterPartitionRequest.Proposal made
	waiters    []waiter

	ready Ready
}

// New returns the state machine for broker id with the given config, log
// contents and current time; it has RoleNone until LeaderAndIsr.
func New(id int32, cfg Config, log LogState, nowMs int64) (*Partition, error) {
	if err := cfg.Validate(0); err != nil {
		return nil, err
	}
	if log.LogStartOffset < 0 || log.LogEndOffset < log.LogStartOffset {
		return nil, fmt.Errorf("replication: bad log offsets: start %d, end %d", log.LogStartOffset, log.LogEndOffset)
	}
	for i, e := range log.EpochCache {
		if e.Epoch < 0 || e.StartOffset < 0 || (i > 0 && (e.Epoch <= log.EpochCache[i-1].Epoch || e.StartOffset < log.EpochCache[i-1].StartOffset)) {
			return nil, fmt.Errorf("replication: epoch cache not increasing at entry %d: %v", i, log.EpochCache)
		}
	}
	p := &Partition{
		id: id, cfg: cfg, now: nowMs,
		leader: NoLeader, leaderEpoch: -1, partitionEpoch: -1,
		logStart: log.LogStartOffset, leo: log.LogEndOffset,
		hw:     min(max(log.HighWatermark, log.LogStartOffset), log.LogEndOffset),
		epochs: slices.Clone(log.EpochCache),
	}
	// Entries past the log end belong to records that are gone (power loss).
	if e, ok := truncateEpochsFromEnd(p.epochs, p.leo); ok {
		p.setEpochs(e)
	}
	return p, nil
}

// SetConfig changes the topic settings at run time. A new rule applies to
// the next truncation decision; a higher min.insync.replicas freezes the HW
// (waiting acks=all requests then wait for the ISR to grow, or time out);
// a lower one may let the HW advance.
func (p *Partition) SetConfig(cfg Config) error {
	if err := cfg.Validate(0); err != nil {
		return err
	}
	p.cfg = cfg
	if p.role == RoleLeader {
		p.maybeIncrementHW()
	}
	return nil
}

// Tick tells the state machine the time (milliseconds, the runtime's clock);
// time never goes backwards, an older value is ignored. It fails acks=all
// requests past their deadline with REQUEST_TIMED_OUT and, on a leader,
// proposes to drop followers that have not caught up for
// replica.lag.time.max.ms. Other inputs are stamped with the last Tick's
// time, so call Tick before them when their time matters.
func (p *Partition) Tick(nowMs int64) {
	if nowMs > p.now {
		p.now = nowMs
	}
	kept := p.waiters[:0]
	for _, w := range p.waiters {
		if w.deadlineMs > 0 && w.deadlineMs <= p.now {
			p.complete(w, -1, kerr.RequestTimedOut)
			continue
		}
		kept = append(kept, w)
	}
	p.waiters = kept
	p.maybeShrinkIsr()
}

// NextTickMs returns the earliest time (milliseconds, the runtime's clock)
// at which Tick could decide something: an acks=all request's deadline, or
// when an ISR follower that is behind the LEO stops counting as caught up
// (replica.lag.time.max.ms after it last was). It is math.MaxInt64 when no
// Tick would change anything until another input arrives (an append can
// put followers behind), so a runtime may sleep until then.
func (p *Partition) NextTickMs() int64 {
	next := int64(math.MaxInt64)
	for _, w := range p.waiters {
		if w.deadlineMs > 0 {
			next = min(next, w.deadlineMs)
		}
	}
	if p.canPropose() {
		for _, r := range p.isr {
			if f := p.followers[r]; r != p.id && f != nil && f.leo != p.leo {
				next = min(next, f.lastCaughtUpMs+p.cfg.ReplicaLagTimeMaxMs+1)
			}
		}
	}
	return next
}

// Ready returns the decisions made since the last call and forgets them.
func (p *Partition) Ready() Ready {
	r := p.ready
	p.ready = Ready{}
	return r
}

// LeaderAndIsr applies the controller's view. A higher leader epoch makes
// this replica leader (recording the epoch's start offset in the epoch cache)
// or follower (truncating by RuleHighWatermark at once, or by RuleLeaderEpoch
// at its next fetch); pending produce requests then fail with
// NOT_LEADER_OR_FOLLOWER. The same leader epoch with a higher partition epoch
// only updates the ISR. An older leader epoch is FENCED_LEADER_EPOCH; a
// duplicate is ignored.
func (p *Partition) LeaderAndIsr(st PartitionState) error {
	if err := st.validate(); err != nil {
		return err
	}
	if !slices.Contains(st.Replicas, p.id) {
		return fmt.Errorf("replication: broker %d is not a replica (replicas %v)", p.id, st.Replicas)
	}
	switch {
	case st.LeaderEpoch < p.leaderEpoch:
		return kerr.FencedLeaderEpoch
	case st.LeaderEpoch == p.leaderEpoch:
		if st.PartitionEpoch <= p.partitionEpoch {
			return nil
		}
		if st.Leader != p.leader {
			return fmt.Errorf("replication: leader changed from %d to %d without a new leader epoch (%d)", p.leader, st.Leader, st.LeaderEpoch)
		}
		p.partitionEpoch = st.PartitionEpoch
		p.replicas = slices.Clone(st.Replicas)
		p.isr = slices.Clone(st.ISR)
		if p.role == RoleLeader {
			p.inflight, p.isrFenced = nil, false
			p.syncFollowers()
			p.maybeIncrementHW()
		}
		return nil
	}
	p.leader = st.Leader
	p.leaderEpoch = st.LeaderEpoch
	p.partitionEpoch = st.PartitionEpoch
	p.replicas = slices.Clone(st.Replicas)
	p.isr = slices.Clone(st.ISR)
	p.inflight, p.isrFenced = nil, false
	if st.Leader == p.id {
		p.becomeLeader()
	} else {
		p.becomeFollower()
	}
	return nil
}

func (p *Partition) becomeLeader() {
	p.role = RoleLeader
	p.epochStart = p.leo
	if e, ok := assignEpoch(p.epochs, EpochEntry{Epoch: p.leaderEpoch, StartOffset: p.leo}); ok {
		p.setEpochs(e)
	}
	// A new leader does not know its followers' LEOs; ISR members get a
	// fresh replica.lag.time.max.ms to show up (Kafka's resetReplicaState).
	p.followers = map[int32]*followerState{}
	p.syncFollowers()
	p.maybeIncrementHW()
}

// syncFollowers keeps one followerState per assigned follower.
func (p *Partition) syncFollowers() {
	for _, r := range p.replicas {
		if r == p.id {
			continue
		}
		if _, ok := p.followers[r]; !ok {
			f := &followerState{brokerEpoch: -1, leo: -1, lastFetchLeaderLEO: -1}
			if slices.Contains(p.isr, r) {
				f.lastCaughtUpMs = p.now
			}
			p.followers[r] = f
		}
	}
	for r := range p.followers {
		if !slices.Contains(p.replicas, r) {
			delete(p.followers, r)
		}
	}
}

func (p *Partition) becomeFollower() {
	p.role = RoleFollower
	p.followers = nil
	p.failWaiters(kerr.NotLeaderForPartition)
	if p.leader == NoLeader {
		return // offline: nothing to follow yet; truncate when a leader exists
	}
	if p.cfg.TruncationRule == RuleHighWatermark && p.hw < p.leo {
		p.truncate(p.hw, TruncateToHighWatermark, "event.word.trunc.become-follower", p.leader, p.leaderEpoch, p.hw)
	}
}

// CheckProduce is called before appending a produce batch. It returns the
// leader epoch to stamp on the batch, or NOT_LEADER_OR_FOLLOWER,
// INVALID_REQUIRED_ACKS, or NOT_ENOUGH_REPLICAS (acks=all while the ISR is
// smaller than min.insync.replicas).
func (p *Partition) CheckProduce(acks int16) (int32, error) {
	if p.role != RoleLeader {
		return 0, kerr.NotLeaderForPartition
	}
	if acks != 0 && acks != 1 && acks != -1 {
		return 0, kerr.InvalidRequiredAcks
	}
	if acks == -1 && len(p.isr) < p.cfg.MinInsyncReplicas {
		return 0, kerr.NotEnoughReplicas
	}
	return p.leaderEpoch, nil
}

// ProduceAppended is called after the runtime appended a batch that
// CheckProduce allowed. acks=0 and acks=1 complete at once; acks=all
// completes when the HW passes req.Batch.LastOffset, or with
// REQUEST_TIMED_OUT at the deadline. While the ISR is smaller than
// min.insync.replicas the HW does not move (maybeIncrementHW), so an
// acks=all request waiting then is answered only if the ISR grows back in
// time: Kafka since 3.7 (KAFKA-15583, Partition.maybeIncrementLeaderHW and
// checkEnoughReplicasReachOffset), where it used to be
// NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func (p *Partition) ProduceAppended(req ProduceRequest) error {
	if p.role != RoleLeader {
		return kerr.NotLeaderForPartition
	}
	b := req.Batch
	if b.Epoch != p.leaderEpoch {
		return fmt.Errorf("replication: batch stamped with epoch %d, leader epoch is %d: %w", b.Epoch, p.leaderEpoch, kerr.FencedLeaderEpoch)
	}
	if err := p.appended(b); err != nil {
		return err
	}
	w := waiter{id: req.ID, base: b.BaseOffset, last: b.LastOffset, deadlineMs: req.DeadlineMs}
	if req.Acks != -1 {
		p.complete(w, req.Acks, nil)
	} else {
		// Below min.insync.replicas too (the ISR shrank between
		// CheckProduce and the append): it waits for the frozen HW.
		p.waiters = append(p.waiters, w)
	}
	p.maybeIncrementHW()
	return nil
}

// appended moves the LEO over a batch and records a new epoch's start.
func (p *Partition) appended(b Batch) error {
	if b.BaseOffset != p.leo || b.LastOffset < b.BaseOffset {
		return fmt.Errorf("replication: batch [%d,%d] does not extend the log at LEO %d: %w", b.BaseOffset, b.LastOffset, p.leo, kerr.OffsetOutOfRange)
	}
	if b.Epoch < 0 {
		return fmt.Errorf("replication: batch without a leader epoch (%d)", b.Epoch)
	}
	if e, ok := assignEpoch(p.epochs, EpochEntry{Epoch: b.Epoch, StartOffset: b.BaseOffset}); ok {
		p.setEpochs(e)
	}
	p.leo = b.LastOffset + 1
	return nil
}

// FollowerFetch handles a follower's Fetch on the leader. It checks the
// follower's current leader epoch (FENCED_LEADER_EPOCH if older,
// UNKNOWN_LEADER_EPOCH if newer) and, when LastFetchedEpoch is set, whether
// the follower's log has gone past the end of that epoch on the leader
// (then DivergingEpoch is set and nothing else happens). Otherwise the fetch
// offset becomes the follower's LEO, which may add it to the ISR and move the
// HW. The result's HighWatermark is the HW before this fetch was counted.
func (p *Partition) FollowerFetch(req FetchRequest) FetchResult {
	res := FetchResult{HighWatermark: p.hw, LogStartOffset: p.logStart, LogEndOffset: p.leo}
	if p.role != RoleLeader {
		res.Err = kerr.NotLeaderForPartition
		return res
	}
	f, ok := p.followers[req.ReplicaID]
	if !ok {
		res.Err = kerr.ReplicaNotAvailable
		return res
	}
	if req.CurrentLeaderEpoch >= 0 {
		if req.CurrentLeaderEpoch < p.leaderEpoch {
			res.Err = kerr.FencedLeaderEpoch
			return res
		}
		if req.CurrentLeaderEpoch > p.leaderEpoch {
			res.Err = kerr.UnknownLeaderEpoch
			return res
		}
	}
	if req.LastFetchedEpoch >= 0 {
		end := EndOffsetForEpoch(p.epochs, p.leo, req.LastFetchedEpoch)
		if end.Epoch == UndefinedEpoch || end.EndOffset == UndefinedOffset || req.FetchOffset < p.logStart {
			res.Err = kerr.OffsetOutOfRange
			return res
		}
		if end.Epoch < req.LastFetchedEpoch || end.EndOffset < req.FetchOffset {
			diverging := end // only a diverging fetch pays for a heap copy
			res.DivergingEpoch = &diverging
			return res
		}
	}
	if req.FetchOffset < p.logStart || req.FetchOffset > p.leo {
		res.Err = kerr.OffsetOutOfRange
		return res
	}
	// Kafka's Replica.updateFetchStateOrThrow: caught up if the fetch
	// reaches the leader's LEO now, or the LEO as of the previous fetch.
	switch {
	case req.FetchOffset >= p.leo:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, p.now)
	case req.FetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUpMs = max(f.lastCaughtUpMs, f.lastFetchMs)
	}
	f.leo = req.FetchOffset
	f.brokerEpoch = req.ReplicaEpoch
	f.lastFetchLeaderLEO = p.leo
	f.lastFetchMs = p.now
	p.maybeExpandIsr(req.ReplicaID, f)
	p.maybeIncrementHW()
	return res
}

// NextFetch returns the Fetch a follower should send next; false when this
// replica is not a follower with a leader. Act on Ready first: the fetch
// offset is the LEO after any truncation.
func (p *Partition) NextFetch() (FetchRequest, bool) {
	if p.role != RoleFollower || p.leader == NoLeader {
		return FetchRequest{}, false
	}
	req := FetchRequest{ReplicaID: p.id, FetchOffset: p.leo, CurrentLeaderEpoch: p.leaderEpoch, LastFetchedEpoch: UndefinedEpoch}
	if p.cfg.TruncationRule == RuleLeaderEpoch {
		req.LastFetchedEpoch = LatestEpoch(p.epochs)
	}
	return req, true
}

// CurrentFetch reports whether the answer to req may still be applied: this
// replica is still a follower in the same leader epoch and its LEO has not
// moved since req was made (Kafka's fetcher drops a response whose partition
// fetch state changed meanwhile). A response that is not current must be
// dropped before anything from it is appended: a replica that has just become
// leader must never write its old leader's records.
func (p *Partition) CurrentFetch(req FetchRequest) bool {
	return p.role == RoleFollower && p.leader != NoLeader && p.leaderEpoch == req.CurrentLeaderEpoch && p.leo == req.FetchOffset
}

// TruncateBeforeAppend is called on a follower when the leader's first
// fetched batch starts at base, inside this replica's last batch (the two
// logs cut batches differently after a divergence): the follower truncates
// to base so the leader's batch can be appended whole. Act on Ready before
// appending.
func (p *Partition) TruncateBeforeAppend(base int64) error {
	if p.role != RoleFollower {
		return kerr.NotLeaderForPartition
	}
	if base >= p.leo {
		return nil
	}
	p.truncate(base, TruncateBatchBoundary, "event.word.trunc.batch-boundary", p.leader, base)
	return nil
}

// LogTruncated reports the LEO the runtime's log really has after applying
// a Truncation: storage removes whole batches, so a cut inside a batch ends
// at the batch's base offset, below the Truncation's ToOffset. The rules
// take that LEO (and cut the epoch cache and HW to it); a leo at or above
// the rules' own changes nothing.
func (p *Partition) LogTruncated(leo int64) {
	if leo >= p.leo {
		return
	}
	p.cutTo(max(leo, p.logStart))
}

// LogStartOffsetAdvanced tells the rules that retention (or DeleteRecords)
// moved the log start offset to off; the HW is never below it.
func (p *Partition) LogStartOffsetAdvanced(off int64) {
	if off <= p.logStart {
		return
	}
	p.logStart = min(off, p.leo)
	if p.hw < p.logStart {
		p.setHW(p.logStart)
	}
	// As the log's own cache (Kafka's truncateFromStart): the first epoch
	// left starts at the log start.
	if e, ok := truncateEpochsFromStart(p.epochs, p.logStart); ok {
		p.setEpochs(e)
	}
}

// HandleFetchResponse applies the leader's answer on a follower. appended
// are the batches the runtime already wrote from the response, in order. A
// diverging epoch or OFFSET_OUT_OF_RANGE produces a Truncation; other errors
// change nothing (wait for LeaderAndIsr). Then follower HW =
// min(leader HW, own LEO).
func (p *Partition) HandleFetchResponse(res FetchResult, appended []Batch) error {
	if p.role != RoleFollower {
		return kerr.NotLeaderForPartition
	}
	switch {
	case errors.Is(res.Err, kerr.OffsetOutOfRange):
		return p.handleOutOfRange(res)
	case res.Err != nil:
		return nil
	case res.DivergingEpoch != nil:
		if len(appended) > 0 {
			return errors.New("replication: records appended from a response with a diverging epoch")
		}
		return p.truncateDiverging(*res.DivergingEpoch)
	}
	for _, b := range appended {
		if err := p.appended(b); err != nil {
			return err
		}
	}
	hw := max(min(res.HighWatermark, p.leo), p.logStart)
	if hw != p.hw {
		p.setHW(hw)
	}
	return nil
}

// handleOutOfRange follows Kafka's fetcher: if the leader's log ends below
// ours, cut ours to its end; if it starts after ours ends, start over there.
func (p *Partition) handleOutOfRange(res FetchResult) error {
	switch {
	case res.LogEndOffset >= 0 && res.LogEndOffset < p.leo:
		p.truncate(res.LogEndOffset, TruncateLeaderEndOffset, "event.word.trunc.leader-end", p.leader, res.LogEndOffset, p.leo)
	case res.LogStartOffset > p.leo:
		from := p.leo
		p.logStart, p.leo, p.hw = res.LogStartOffset, res.LogStartOffset, res.LogStartOffset
		p.setHW(p.hw)
		p.setEpochs(nil)
		p.ready.Truncations = append(p.ready.Truncations, truncation(from, res.LogStartOffset, p.cfg.TruncationRule, TruncateFullyAndStartAt,
			"event.word.trunc.leader-start", p.leader, res.LogStartOffset, from))
	default:
		return fmt.Errorf("replication: OFFSET_OUT_OF_RANGE at fetch offset %d but leader log is [%d,%d): %w", p.leo, res.LogStartOffset, res.LogEndOffset, kerr.OffsetOutOfRange)
	}
	return nil
}

// truncateDiverging is Kafka's AbstractFetcherThread.getOffsetTruncationState.
func (p *Partition) truncateDiverging(d EpochEndOffset) error {
	beforeLEO, beforeEpochs := p.leo, len(p.epochs)
	// Every reason starts with what the leader said: its id, the epoch
	// and that epoch's end offset.
	said := []any{p.leader, d.Epoch, d.EndOffset}
	switch {
	case d.EndOffset == UndefinedOffset:
		p.truncate(p.hw, TruncateToHighWatermark, "event.word.trunc.no-epoch-info", append(said, p.hw)...)
	case d.Epoch == UndefinedEpoch:
		p.truncate(min(d.EndOffset, p.leo), TruncateDivergingEpoch, "event.word.trunc.leader-end-offset", said...)
	default:
		own := EndOffsetForEpoch(p.epochs, p.leo, d.Epoch)
		switch {
		case own.EndOffset == UndefinedOffset:
			p.truncate(min(d.EndOffset, p.leo), TruncateDivergingEpoch, "event.word.trunc.unknown-epoch", said...)
		case own.Epoch != d.Epoch:
			// KIP-279: we never had the leader's epoch; cut to the end of our
			// largest epoch below it and ask again with the next fetch.
			p.truncate(min(own.EndOffset, p.leo), TruncateDivergingEpoch,
				"event.word.trunc.kip279", append(said, d.Epoch, own.Epoch, own.EndOffset)...)
		default:
			p.truncate(min(own.EndOffset, d.EndOffset, p.leo), TruncateDivergingEpoch,
				"event.word.trunc.smaller", append(said, own.EndOffset)...)
		}
	}
	if p.leo == beforeLEO && len(p.epochs) == beforeEpochs {
		return fmt.Errorf("replication: diverging epoch %d/%d made no progress at LEO %d, epochs %v", d.Epoch, d.EndOffset, p.leo, p.epochs)
	}
	return nil
}

// truncate cuts the log at to (never below the log start); the epoch cache
// loses the entries starting at or after it, even when no record goes. The
// reason is an i18n catalog key with its arguments.
func (p *Partition) truncate(to int64, cause TruncationCause, reason string, args ...any) {
	to = max(to, p.logStart)
	if to < p.leo {
		p.ready.Truncations = append(p.ready.Truncations, truncation(p.leo, to, p.cfg.TruncationRule, cause, reason, args...))
	}
	p.cutTo(to)
}

// truncation is the Truncation from from to to, its reason the catalog
// key with args.
func truncation(from, to int64, rule Rule, cause TruncationCause, key string, args ...any) Truncation {
	return Truncation{FromOffset: from, ToOffset: to, Rule: rule, Cause: cause, ReasonKey: key, ReasonArgs: args}
}

// cutTo moves the rules' log end down to to (if it is below the LEO): the
// epoch cache loses the entries starting at or after to, even when no
// record goes, and the HW is never above the LEO.
func (p *Partition) cutTo(to int64) {
	if e, ok := truncateEpochsFromEnd(p.epochs, to); ok {
		p.setEpochs(e)
	}
	p.leo = min(p.leo, to)
	if p.hw > p.leo {
		p.setHW(p.leo)
	}
}

// AlterPartitionResponse applies the controller's answer r to req, the
// proposal it answers. An answer to any proposal but the one in flight is
// ignored: a late answer to a proposal that newer state or a newer proposal
// replaced says nothing about the current one (an error for it must not
// fence or reset the current proposal; an acceptance must not install an
// ISR the current proposal replaced, which LeaderAndIsr will bring if it
// was committed). Accepted: the new ISR and partition epoch become current
// (which may move the HW, or fail acks=all waiters if the ISR is now below
// min.insync.replicas). Rejected, as Kafka's
// Partition.handleAlterPartitionError does: INELIGIBLE_REPLICA (a proposed
// member is fenced, or was proposed with an old broker epoch) and
// OPERATION_NOT_ATTEMPTED mean the controller kept the committed state, so
// the leader goes back to it and proposes again at the next fetch or tick;
// FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, NOT_LEADER_OR_FOLLOWER and
// UNKNOWN_TOPIC_OR_PARTITION mean this leader's state is stale, so no new
// proposal is made until LeaderAndIsr brings newer state (which is what
// keeps a zombie from committing alone); any other error (a stale broker
// epoch, a timeout) is retried.
func (p *Partition) AlterPartitionResponse(req AlterPartitionRequest, r AlterPartitionResponse) error {
	if p.role != RoleLeader || p.inflight == nil || req.Proposal != p.inflight.Proposal {
		return nil // an answer to a proposal that newer state or a newer proposal replaced
	}
	if r.Err != nil {
		p.inflight = nil
		p.isrFenced = staleLeaderState(r.Err)
		if !p.isrFenced {
			p.maybeIncrementHW() // the maximal ISR shrank back to the committed one
		}
		return nil
	}
	if r.LeaderEpoch != p.leaderEpoch || r.PartitionEpoch <= p.partitionEpoch {
		return nil
	}
	if len(r.ISR) == 0 || !slices.Contains(r.ISR, p.id) {
		return fmt.Errorf("replication: accepted ISR %v does not contain the leader %d", r.ISR, p.id)
	}
	p.inflight = nil
	p.isr = slices.Clone(r.ISR)
	p.partitionEpoch = r.PartitionEpoch
	p.maybeIncrementHW()
	return nil
}

// staleLeaderState reports whether an AlterPartition error means the leader
// must wait for newer metadata before proposing again.
func staleLeaderState(err error) bool {
	for _, e := range []error{kerr.FencedLeaderEpoch, kerr.InvalidUpdateVersion, kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// maximalIsr is the ISR plus any additions in flight: the set the HW must
// wait for (Kafka's PartitionState.maximalIsr).
func (p *Partition) maximalIsr() []int32 {
	out := slices.Clone(p.isr)
	if p.inflight != nil {
		for _, r := range p.inflight.NewISR {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

func (p *Partition) canPropose() bool {
	return p.role == RoleLeader && p.inflight == nil && !p.isrFenced
}

// propose sends isr to the controller, with changes saying why it differs
// from the current ISR.
func (p *Partition) propose(isr []int32, changes []events.ISRChange) {
	epochs := make([]int64, len(isr))
	for i, r := range isr {
		epochs[i] = -1
		if f := p.followers[r]; f != nil && r != p.id {
			epochs[i] = f.brokerEpoch
		}
	}
	p.proposals++
	req := &AlterPartitionRequest{Proposal: p.proposals, BrokerID: p.id, LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch, NewISR: isr, NewISRBrokerEpochs: epochs, Changes: changes}
	p.inflight = req
	c := *req
	c.NewISR, c.NewISRBrokerEpochs, c.Changes = slices.Clone(isr), slices.Clone(epochs), slices.Clone(changes)
	p.ready.AlterPartition = &c
}

// maybeExpandIsr: Kafka's isFollowerInSync — LEO ≥ HW and ≥ the start of
// the current leader epoch, so a new ISR member holds everything the leader
// may have committed under an earlier epoch.
func (p *Partition) maybeExpandIsr(id int32, f *followerState) {
	if !p.canPropose() || slices.Contains(p.isr, id) {
		return
	}
	if f.leo < p.hw || f.leo < p.epochStart {
		return
	}
	var isr []int32
	for _, r := range p.replicas { // keep assignment order
		if r == id || slices.Contains(p.isr, r) {
			isr = append(isr, r)
		}
	}
	p.propose(isr, []events.ISRChange{{Cause: events.ISRCaughtUp, Broker: id, Joined: true, Offset: f.leo}})
}

func (p *Partition) maybeShrinkIsr() {
	if !p.canPropose() {
		return
	}
	lagging := func(r int32) bool {
		f := p.followers[r]
		return r != p.id && f != nil && !f.caughtUp(p.leo, p.now, p.cfg.ReplicaLagTimeMaxMs)
	}
	// Every tick asks; the answer is almost always no, which must not
	// allocate (an idle lab ticks thousands of leaders 20 times a second).
	if slices.ContainsFunc(p.isr, lagging) {
		// Each dropped follower's figures, so a learner reads how long it
		// had not caught up against the setting it exceeded.
		var changes []events.ISRChange
		for _, r := range p.isr {
			if lagging(r) {
				changes = append(changes, events.ISRChange{Cause: events.ISRLagged, Broker: r,
					LagMs: p.now - p.followers[r].lastCaughtUpMs, MaxLagMs: p.cfg.ReplicaLagTimeMaxMs})
			}
		}
		p.propose(slices.DeleteFunc(slices.Clone(p.isr), lagging), changes)
	}
}

// maybeIncrementHW: HW = min LEO over the maximal ISR, never backwards,
// frozen while the ISR is smaller than min.insync.replicas (Kafka 3.7+,
// KAFKA-15583: Partition.maybeIncrementLeaderHW returns at once while
// isUnderMinIsr). Records appended meanwhile, acks=1 ones included, stay
// above the HW: acknowledged to an acks=1 producer, unreadable by
// consumers until the ISR is back at min.insync.replicas.
func (p *Partition) maybeIncrementHW() {
	// The HW never passes the LEO: at the LEO (an idle partition, each of
	// its followers' fetches) nothing can move it.
	if p.role != RoleLeader || len(p.isr) < p.cfg.MinInsyncReplicas || p.hw >= p.leo {
		return
	}
	hw := p.leo
	for _, r := range p.maximalIsr() {
		if r == p.id {
			continue
		}
		leo := int64(-1)
		if f := p.followers[r]; f != nil {
			leo = f.leo
		}
		hw = min(hw, leo)
	}
	if hw <= p.hw {
		return
	}
	p.setHW(hw)
	kept := p.waiters[:0]
	for _, w := range p.waiters {
		if w.last < p.hw {
			p.complete(w, -1, nil)
			continue
		}
		kept = append(kept, w)
	}
	p.waiters = kept
}

func (p *Partition) failWaiters(err error) {
	for _, w := range p.waiters {
		p.complete(w, -1, err)
	}
	p.waiters = nil
}

func (p *Partition) complete(w waiter, acks int16, err error) {
	p.ready.Completed = append(p.ready.Completed, ProduceResult{ID: w.id, Acks: acks, BaseOffset: w.base, LastOffset: w.last, Err: err})
}

func (p *Partition) setHW(hw int64) {
	p.hw = hw
	p.ready.HighWatermarkChanged = true
	p.ready.HighWatermark = hw
}

func (p *Partition) setEpochs(e []EpochEntry) {
	p.epochs = e
	p.ready.EpochCacheChanged = true
	p.ready.EpochCache = slices.Clone(e)
}

// FollowerStatus is the leader's view of one follower.
type FollowerStatus struct {
	ID int32
	// LogEndOffset is the follower's last fetch offset; -1 before its first
	// fetch under this leader.
	LogEndOffset   int64
	LastCaughtUpMs int64
	// CaughtUp is Kafka's isCaughtUp: at the leader's LEO, or caught up
	// within replica.lag.time.max.ms.
	CaughtUp bool
}

// Status is a snapshot of a Partition for display and tests.
type Status struct {
	BrokerID       int32
	Role           Role
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// PendingISR is the ISR proposal in flight; nil when none.
	PendingISR     []int32
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	// EpochStartOffset is where the current leader epoch starts (leader
	// only; 0 otherwise).
	EpochStartOffset int64
	EpochCache       []EpochEntry
	// Followers is the leader's view of its followers, in assignment order.
	Followers []FollowerStatus
	// WaitingProduces counts acks=all requests waiting for the HW.
	WaitingProduces int
	Config          Config
	NowMs           int64
}

// Leader returns the leader's broker id as this replica knows it; NoLeader
// when it knows none. Unlike Status it copies nothing.
func (p *Partition) Leader() int32 { return p.leader }

// Status returns a snapshot; it shares no memory with the Partition.
func (p *Partition) Status() Status {
	s := Status{
		BrokerID: p.id, Role: p.role, Leader: p.leader, LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch,
		Replicas: slices.Clone(p.replicas), ISR: slices.Clone(p.isr),
		LogStartOffset: p.logStart, LogEndOffset: p.leo, HighWatermark: p.hw,
		EpochCache: slices.Clone(p.epochs), WaitingProduces: len(p.waiters), Config: p.cfg, NowMs: p.now,
	}
	if p.inflight != nil {
		s.PendingISR = slices.Clone(p.inflight.NewISR)
	}
	if p.role == RoleLeader {
		s.EpochStartOffset = p.epochStart
		for _, r := range p.replicas {
			if f := p.followers[r]; f != nil {
				s.Followers = append(s.Followers, FollowerStatus{ID: r, LogEndOffset: f.leo, LastCaughtUpMs: f.lastCaughtUpMs,
					CaughtUp: f.caughtUp(p.leo, p.now, p.cfg.ReplicaLagTimeMaxMs)})
			}
		}
	}
	return s
}

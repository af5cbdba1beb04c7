// Package rulestest is the pure rules' lab: a small cluster of
// replication.Partition state machines with in-memory logs and a tiny
// ZooKeeper-era controller. It is the "rules" back-end of the scenario
// language (package lessons), so the same scenario file runs against the
// rules alone and against the real lab cluster; the rules' own scenario
// tests are the lessons/scenarios/rules-*.scenario files.
//
// Commands (Cluster.Run):
//
//	produce value=V [acks=all|1|0] [timeout=MS] [to=N]      a client produce (to the leader by default)
//	fetch N [times=K]                                        follower N sends K fetches to the leader it knows
//	sync                                                     every live follower fetches until nothing changes
//	tick MS                                                  the cluster clock moves MS and every broker ticks
//	flush N|all                                              fsync broker N's log and HW checkpoint
//
// and methods: Kill, Lost, Start, Isolate, HealAll, Elect, Checkpoint,
// SetConfig. Every event is printed to SetOutput's builder and recorded
// (Fetches, Proposals, Alters, Truncations, Elections, Happened) for the
// scenario language's queries.
//
// After every command Check runs the invariants, with the checker the
// lab cluster's scenarios and chaos use too (package invariant).
// Structural ones (ISR never empty, leader ∈ ISR, log start ≤ HW ≤ LEO,
// offsets increase, epochs never decrease) are collected in Errs. The ones
// that the settings may legitimately break (synced followers agree with
// the leader below the smaller HW, records a consumer saw stay,
// acknowledged records stay, the HW a consumer is told never goes back)
// are recorded in Violations and printed as "!!" lines.
package rulestest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/kafkaname"
	"tidemark/invariant"
	"tidemark/leaderepoch"
	"tidemark/replication"
)

type entry struct {
	epoch int32
	value string
}

type broker struct {
	id        int32
	up        bool
	cut       bool
	p         *replication.Partition
	log       []entry // offset = index; what the OS holds (survives a crash)
	flushed   int     // records that survive a power loss
	hw        int64   // replication-offset-checkpoint as last written
	flushedHW int64
	epochs    []replication.EpochEntry // leader-epoch-checkpoint (Kafka fsyncs every change)
	queued    []replication.AlterPartitionRequest
	// synced: a follower that has had a clean fetch response in its current
	// leader epoch, i.e. has finished truncating. Only leaders and synced
	// followers are held to "agree below the smaller HW": a replica that
	// just came back may hold a stale HW until its first fetch.
	synced bool
}

type acked struct {
	value  string
	offset int64
	acks   string
}

// Cluster is the pure rules' lab: brokers 1..N each run a
// replication.Partition for one partition; the controller's metadata is
// Meta. It is not safe for concurrent use.
type Cluster struct {
	// Render turns a reason's catalog key and arguments into the text the
	// transcript and Truncation.Reason show (the rules say no text; lessons
	// set i18n's English). Nil: the key with its arguments.
	Render func(key string, args ...any) string

	now     int64
	cfg     replication.Config
	unclean bool
	brokers []*broker
	meta    replication.PartitionState // the controller's metadata
	fenced  map[int32]bool             // brokers the controller considers dead
	out     *strings.Builder
	quiet   bool // sync: do not print per-fetch lines
	flushes bool // a flush happened: lanes mark unflushed records

	nextID   uint64
	produces map[uint64]string // id → value
	acked    []acked
	watch    invariant.Watch // what a consumer saw, the violations found
	errs     []string        // structural invariant failures
	results  map[string]*ProduceResult

	// ExplicitCheckpoints: the HW checkpoint is written only by Checkpoint
	// (and then fsynced), as the lab broker's is when its interval is long;
	// otherwise every HW change is checkpointed at once.
	ExplicitCheckpoints bool

	// What happened, in order, for the scenario language's queries: each
	// fetch sent, ISR proposal, controller answer to one, truncation,
	// election, and each invariant a setting may break (Violations).
	Fetches     []Fetch
	Proposals   []Proposal
	Alters      []AlterAnswer
	Truncations []Truncation
	Elections   []Election
	Violations  []Violation
	// Happened names every event printed, in order: b1-append-m1,
	// answer-m1, b2-fetch, b1-hw, b1-propose, b1-queued, accept, reject,
	// elect-b2, unclean-b2, offline, fenced-b2, b2-truncate, b1-fsync,
	// b2-no-fetch, b1-error… (a scenario checks nothing else happened).
	Happened []string
}

// Fetch is one Fetch a follower sent and what the leader answered.
type Fetch struct {
	Broker, Leader int32
	Offset         int64
	LastEpoch      int32
	// Records are the records returned, value/eEPOCH.
	Records []string
	HW      int64
	Err     error
	// LogStart and LogEnd are the leader's log bounds the answer carried.
	LogStart, LogEnd int64
	// Diverging is "EPOCH@END" when the leader answered a diverging epoch.
	Diverging string
}

// Proposal is an AlterPartition a leader sent (Queued: it could not reach
// the controller).
type Proposal struct {
	Broker         int32
	ISR            []int32
	PartitionEpoch int32
	Queued         bool
}

// AlterAnswer is the controller's answer to a proposal (Err nil: accepted).
type AlterAnswer struct {
	Broker  int32
	Request replication.AlterPartitionRequest
	Err     error
}

// Truncation is one truncation a replica did.
type Truncation struct {
	Broker int32
	To     int64
	// Removed are the records removed, OFFSET:value/eEPOCH.
	Removed             []string
	Rule, Cause, Reason string
}

// Election is a leadership change the controller made (Leader -1: the
// partition went offline).
type Election struct {
	Leader, Epoch int32
	ISR           []int32
	Unclean       bool
}

// Violation is an invariant a setting may legitimately break (package
// invariant): Kind "lost" (an acknowledged Value is not in the leader's
// log), "seen-gone" (a record a consumer could read at Offset is gone from
// the leader), "hw-back" (the HW a consumer is told went backwards) or
// "diverged" (a follower done truncating differs from the leader at
// Offset below both HWs).
type Violation = invariant.Violation

// ProduceResult is what a producer heard about one value.
type ProduceResult struct {
	Answered bool
	Offset   int64
	Err      error // a Kafka error (kerr) or nil
}

// SetOutput makes the commands print to w (nil: nowhere).
func (c *Cluster) SetOutput(w *strings.Builder) {
	if w == nil {
		w = &strings.Builder{}
	}
	c.out = w
}

// Errs returns the structural invariants broken so far.
func (c *Cluster) Errs() []string { return c.errs }

// Now is the cluster clock in milliseconds.
func (c *Cluster) Now() int64 { return c.now }

// Brokers is how many brokers the cluster has.
func (c *Cluster) Brokers() int { return len(c.brokers) }

// Meta returns the controller's metadata.
func (c *Cluster) Meta() replication.PartitionState { return c.clone() }

// Up reports whether broker id runs.
func (c *Cluster) Up(id int32) bool { b := c.b(id); return b != nil && b.up }

// Status returns broker id's partition state; false when it is down.
func (c *Cluster) Status(id int32) (replication.Status, bool) {
	b := c.b(id)
	if b == nil || !b.up {
		return replication.Status{}, false
	}
	return b.p.Status(), true
}

// Values returns the values in broker id's log (what its disk holds, up or
// down), in offset order.
func (c *Cluster) Values(id int32) []string {
	b := c.b(id)
	if b == nil {
		return nil
	}
	out := make([]string, len(b.log))
	for i, e := range b.log {
		out[i] = e.value
	}
	return out
}

// Kill stops broker id as a killed process (powerLoss: as a power cut,
// which also drops what was not fsynced) without telling the controller:
// Lost does, as a session timeout would.
func (c *Cluster) Kill(id int32, powerLoss bool) error {
	b := c.b(id)
	if b == nil || !b.up {
		return fmt.Errorf("b%d is not running", id)
	}
	c.crash(id, powerLoss)
	return nil
}

// Lost tells the controller broker id is gone: it is fenced, leaves the
// ISR (never emptying it) and loses its leadership.
func (c *Cluster) Lost(id int32) {
	c.brokerLost(id)
	c.drain()
}

// Start boots a stopped broker from what its disk holds; it registers and
// the controller unfences it.
func (c *Cluster) Start(id int32) error {
	b := c.b(id)
	if b == nil || b.up {
		return fmt.Errorf("b%d is not stopped", id)
	}
	c.start(id)
	return nil
}

// Checkpoint writes and fsyncs broker id's HW checkpoint.
func (c *Cluster) Checkpoint(id int32) {
	if b := c.b(id); b != nil && b.up {
		b.hw = b.p.Status().HighWatermark
		b.flushedHW = b.hw
	}
}

// Config returns the topic configs in force and whether unclean leader
// election is enabled.
func (c *Cluster) Config() (replication.Config, bool) { return c.cfg, c.unclean }

// Record is one record of a log: offset, value and leader epoch.
type Record struct {
	Offset int64
	Value  string
	Epoch  int32
}

func (r Record) String() string { return fmt.Sprintf("%d:%s/e%d", r.Offset, r.Value, r.Epoch) }

// Log returns broker id's log as its disk holds it (up or down).
func (c *Cluster) Log(id int32) []Record {
	b := c.b(id)
	if b == nil {
		return nil
	}
	out := make([]Record, len(b.log))
	for i, e := range b.log {
		out[i] = Record{int64(i), e.value, e.epoch}
	}
	return out
}

// Records is Log written OFFSET:value/eEPOCH.
func (c *Cluster) Records(id int32) []string {
	var out []string
	for _, r := range c.Log(id) {
		out = append(out, r.String())
	}
	return out
}

// Flushed is how many of broker id's records survive a power loss.
func (c *Cluster) Flushed(id int32) int {
	if b := c.b(id); b != nil {
		return b.flushed
	}
	return 0
}

// CheckpointedHW is broker id's HW checkpoint as last written.
func (c *Cluster) CheckpointedHW(id int32) int64 {
	if b := c.b(id); b != nil {
		return b.hw
	}
	return -1
}

// Fenced reports whether the controller considers broker id dead.
func (c *Cluster) Fenced(id int32) bool { return c.fenced[id] }

// Isolate cuts every link of broker id (the controller's too) without
// telling the controller: Lost does, as a session timeout would.
func (c *Cluster) Isolate(id int32) error {
	b := c.b(id)
	if b == nil || !b.up {
		return fmt.Errorf("b%d is not running", id)
	}
	b.cut = true
	return nil
}

// Isolated reports whether broker id's links are cut.
func (c *Cluster) Isolated(id int32) bool { b := c.b(id); return b != nil && b.cut }

// HealAll restores the links of every isolated broker.
func (c *Cluster) HealAll() {
	for _, b := range c.brokers {
		if b.cut {
			c.heal(b.id)
		}
	}
}

// Elect moves leadership to broker id, as the controller would if asked.
func (c *Cluster) Elect(id int32) error {
	b := c.b(id)
	if b == nil || !b.up {
		return fmt.Errorf("b%d is not running", id)
	}
	c.elect(id)
	return nil
}

// Result returns what the producer of value heard; nil if it was never sent.
func (c *Cluster) Result(value string) *ProduceResult { return c.results[value] }

// happen records what happened (a token of Happened) and prints it.
func (c *Cluster) happen(token, format string, a ...any) {
	c.Happened = append(c.Happened, token)
	c.printf(format, a...)
}

func (c *Cluster) printf(format string, a ...any) {
	fmt.Fprintf(c.out, format+"\n", a...)
}

func (c *Cluster) b(id int32) *broker {
	if id < 1 || int(id) > len(c.brokers) {
		return nil
	}
	return c.brokers[id-1]
}

func acksName(a int16) string {
	if a == -1 {
		return "all"
	}
	return strconv.Itoa(int(a))
}

// errName is a Kafka error's name, or the text of any other error.
func errName(err error) string { return kafkaname.Text(err) }

// New starts N brokers, broker 1 leading epoch 0 with everyone in the ISR.
func New(n int, cfg replication.Config, unclean bool) *Cluster {
	c := &Cluster{cfg: cfg, unclean: unclean, out: &strings.Builder{}, fenced: map[int32]bool{}, produces: map[uint64]string{}, results: map[string]*ProduceResult{}}
	c.meta = replication.PartitionState{Leader: 1}
	for i := 1; i <= n; i++ {
		c.brokers = append(c.brokers, &broker{id: int32(i)})
		c.meta.Replicas = append(c.meta.Replicas, int32(i))
	}
	c.meta.ISR = slices.Clone(c.meta.Replicas)
	for _, b := range c.brokers {
		c.boot(b)
	}
	return c
}

// boot starts broker b from what is on its disk and hands it the metadata.
func (c *Cluster) boot(b *broker) {
	p, err := replication.New(b.id, c.cfg, replication.LogState{LogEndOffset: int64(len(b.log)), HighWatermark: b.hw, EpochCache: b.epochs}, c.now)
	if err != nil {
		c.happen("error", "error: %v", err)
		return
	}
	b.p, b.up, b.queued, b.synced = p, true, nil, false
	c.drainOne(b)
	c.send(b)
}

// send delivers the controller's metadata to b when it can hear it.
func (c *Cluster) send(b *broker) {
	if !b.up || b.cut {
		return
	}
	before := b.p.Status().LeaderEpoch
	if err := b.p.LeaderAndIsr(c.clone()); err != nil {
		c.happen(fmt.Sprintf("b%d-error", b.id), "b%d LeaderAndIsr: %s", b.id, errName(err))
	}
	if b.p.Status().LeaderEpoch != before {
		b.synced = false
	}
}

func (c *Cluster) clone() replication.PartitionState {
	m := c.meta
	m.Replicas, m.ISR = slices.Clone(m.Replicas), slices.Clone(m.ISR)
	return m
}

func (c *Cluster) publish() {
	for _, b := range c.brokers {
		c.send(b)
	}
	c.drain()
}

func (c *Cluster) live(id int32) bool {
	b := c.b(id)
	return b != nil && b.up && !b.cut && !c.fenced[id]
}

// brokerLost: the controller fences id, drops it from the ISR (never
// emptying it) and moves its leadership.
func (c *Cluster) brokerLost(id int32) {
	c.fenced[id] = true
	changed := false
	if slices.Contains(c.meta.ISR, id) && len(c.meta.ISR) > 1 {
		c.meta.ISR = slices.DeleteFunc(slices.Clone(c.meta.ISR), func(r int32) bool { return r == id })
		changed = true
	}
	if c.meta.Leader == id {
		c.elect(replication.NoLeader)
		return
	}
	if changed {
		c.meta.PartitionEpoch++
		c.happen(fmt.Sprintf("fenced-b%d", id), "controller: b%d fenced, ISR %v, partition epoch %d", id, c.meta.ISR, c.meta.PartitionEpoch)
		c.publish()
	}
}

// elect picks a leader: want if given, else the first live ISR member in
// assignment order, else (unclean.leader.election.enable) any live replica.
func (c *Cluster) elect(want int32) {
	leader, unclean := replication.NoLeader, false
	for _, r := range c.meta.Replicas {
		if want != replication.NoLeader && r != want {
			continue
		}
		if slices.Contains(c.meta.ISR, r) && c.live(r) {
			leader = r
			break
		}
	}
	if leader == replication.NoLeader && c.unclean {
		for _, r := range c.meta.Replicas {
			if (want == replication.NoLeader || r == want) && c.live(r) {
				leader, unclean = r, true
				break
			}
		}
	}
	if leader == replication.NoLeader && want != replication.NoLeader {
		c.happen(fmt.Sprintf("cannot-lead-b%d", want), "controller: b%d cannot lead (not a live ISR member, unclean=%v)", want, c.unclean)
		return
	}
	if leader == replication.NoLeader && c.meta.Leader == replication.NoLeader {
		return
	}
	// Every leader change, going offline included, is a new leader epoch
	// (as in KRaft).
	c.meta.Leader = leader
	c.meta.LeaderEpoch++
	c.meta.PartitionEpoch++
	if leader == replication.NoLeader {
		// Keep the last ISR member recorded: it is the only safe leader.
		live := slices.DeleteFunc(slices.Clone(c.meta.ISR), func(r int32) bool { return !c.live(r) })
		if len(live) > 0 {
			c.meta.ISR = live
		}
		c.happen("offline", "controller: no live ISR member, partition offline (ISR %v)", c.meta.ISR)
		c.Elections = append(c.Elections, Election{Leader: leader, Epoch: c.meta.LeaderEpoch, ISR: slices.Clone(c.meta.ISR)})
	} else {
		if unclean {
			c.meta.ISR = []int32{leader}
		} else {
			c.meta.ISR = slices.DeleteFunc(slices.Clone(c.meta.ISR), func(r int32) bool { return !c.live(r) && r != leader })
		}
		kind := "elects"
		if unclean {
			kind = "UNCLEAN election:"
		}
		c.happen(fmt.Sprintf("%s-b%d", map[bool]string{false: "elect", true: "unclean"}[unclean], leader), "controller: %s b%d leader at epoch %d, ISR %v", kind, leader, c.meta.LeaderEpoch, c.meta.ISR)
		c.Elections = append(c.Elections, Election{Leader: leader, Epoch: c.meta.LeaderEpoch, ISR: slices.Clone(c.meta.ISR), Unclean: unclean})
	}
	c.publish()
}

// alter is the controller's AlterPartition handling.
func (c *Cluster) alter(b *broker, req replication.AlterPartitionRequest) {
	resp := replication.AlterPartitionResponse{LeaderEpoch: c.meta.LeaderEpoch, PartitionEpoch: c.meta.PartitionEpoch, ISR: slices.Clone(c.meta.ISR)}
	switch {
	case req.LeaderEpoch != c.meta.LeaderEpoch || c.meta.Leader != req.BrokerID:
		resp.Err = kerr.FencedLeaderEpoch
	case req.PartitionEpoch != c.meta.PartitionEpoch:
		resp.Err = kerr.InvalidUpdateVersion
	default:
		for _, r := range req.NewISR {
			if !slices.Contains(c.meta.ISR, r) && c.fenced[r] {
				resp.Err = kerr.IneligibleReplica
			}
		}
	}
	c.Alters = append(c.Alters, AlterAnswer{Broker: b.id, Request: req, Err: resp.Err})
	if resp.Err != nil {
		c.happen("reject", "controller rejects b%d's ISR %v (leader epoch %d, partition epoch %d): %s", b.id, req.NewISR, req.LeaderEpoch, req.PartitionEpoch, errName(resp.Err))
	} else {
		c.meta.ISR = slices.Clone(req.NewISR)
		c.meta.PartitionEpoch++
		resp.ISR, resp.PartitionEpoch = slices.Clone(c.meta.ISR), c.meta.PartitionEpoch
		c.happen("accept", "controller accepts ISR %v, partition epoch %d", c.meta.ISR, c.meta.PartitionEpoch)
	}
	if err := b.p.AlterPartitionResponse(req, resp); err != nil {
		c.happen(fmt.Sprintf("b%d-error", b.id), "b%d AlterPartitionResponse: %v", b.id, err)
	}
}

// drainOne acts on one broker's Ready, persist before send.
func (c *Cluster) drainOne(b *broker) bool {
	if !b.up {
		return false
	}
	rd := b.p.Ready()
	if rd.Empty() {
		return false
	}
	for _, t := range rd.Truncations {
		var gone []string
		for off := t.ToOffset; off < t.FromOffset && off < int64(len(b.log)); off++ {
			gone = append(gone, fmt.Sprintf("%d:%s/e%d", off, b.log[off].value, b.log[off].epoch))
		}
		c.happen(fmt.Sprintf("b%d-truncate", b.id), "b%d truncates to %d, removing %s (rule %s, cause %s): %s", b.id, t.ToOffset, strings.Join(gone, " "), t.Rule, t.Cause, c.reason(t))
		c.Truncations = append(c.Truncations, Truncation{Broker: b.id, To: t.ToOffset, Removed: gone, Rule: t.Rule.String(), Cause: t.Cause.String(), Reason: c.reason(t)})
		if t.Cause == replication.TruncateFullyAndStartAt {
			c.errs = append(c.errs, "the harness has no log start offsets; unexpected full truncation")
		}
		b.log = b.log[:min(int(t.ToOffset), len(b.log))]
		b.flushed = min(b.flushed, len(b.log))
	}
	if rd.EpochCacheChanged {
		b.epochs = rd.EpochCache
	}
	if rd.HighWatermarkChanged {
		if !c.quiet {
			c.happen(fmt.Sprintf("b%d-hw", b.id), "b%d HW %d", b.id, rd.HighWatermark)
		}
		if !c.ExplicitCheckpoints {
			b.hw = rd.HighWatermark
		}
	}
	if req := rd.AlterPartition; req != nil {
		c.happen(fmt.Sprintf("b%d-propose", b.id), "b%d proposes ISR %v (partition epoch %d)", b.id, req.NewISR, req.PartitionEpoch)
		c.Proposals = append(c.Proposals, Proposal{Broker: b.id, ISR: slices.Clone(req.NewISR), PartitionEpoch: req.PartitionEpoch, Queued: b.cut})
		if b.cut {
			c.happen(fmt.Sprintf("b%d-queued", b.id), "b%d cannot reach the controller; proposal queued", b.id)
			b.queued = append(b.queued, *req)
		} else {
			c.alter(b, *req)
		}
	}
	for _, r := range rd.Completed {
		v := c.produces[r.ID]
		delete(c.produces, r.ID)
		c.results[v] = &ProduceResult{Answered: r.Acks != 0, Offset: r.BaseOffset, Err: r.Err}
		if r.Err != nil {
			c.happen("answer-"+v, "produce %s acks=%s → %s", v, acksName(r.Acks), errName(r.Err))
			continue
		}
		switch r.Acks {
		case 0:
			c.happen("answer-"+v, "produce %s acks=0 sent (no response)", v)
		default:
			c.happen("answer-"+v, "produce %s acks=%s → OK at offset %d", v, acksName(r.Acks), r.BaseOffset)
			c.acked = append(c.acked, acked{value: v, offset: r.BaseOffset, acks: acksName(r.Acks)})
		}
	}
	return true
}

func (c *Cluster) drain() {
	for range 100 {
		busy := false
		for _, b := range c.brokers {
			if c.drainOne(b) {
				busy = true
			}
		}
		if !busy {
			return
		}
	}
	c.errs = append(c.errs, "Ready never became empty")
}

func (c *Cluster) produce(value string, acks int16, timeout int64, to int32) {
	if to == replication.NoLeader {
		to = c.meta.Leader
	}
	b := c.b(to)
	if b == nil || !b.up {
		c.results[value] = &ProduceResult{Answered: true, Err: kerr.NotLeaderForPartition}
		c.happen("answer-"+value, "produce %s: no leader to send to", value)
		return
	}
	epoch, err := b.p.CheckProduce(acks)
	if err != nil {
		c.results[value] = &ProduceResult{Answered: acks != 0, Err: err}
		c.happen("answer-"+value, "produce %s acks=%s to b%d → %s", value, acksName(acks), b.id, errName(err))
		return
	}
	off := int64(len(b.log))
	c.results[value] = &ProduceResult{}
	b.log = append(b.log, entry{epoch: epoch, value: value})
	c.nextID++
	c.produces[c.nextID] = value
	req := replication.ProduceRequest{ID: c.nextID, Acks: acks, Batch: replication.Batch{BaseOffset: off, LastOffset: off, Epoch: epoch}}
	if timeout > 0 {
		req.DeadlineMs = c.now + timeout
	}
	c.happen(fmt.Sprintf("b%d-append-%s", b.id, value), "b%d appends %s at offset %d (epoch %d)", b.id, value, off, epoch)
	if err := b.p.ProduceAppended(req); err != nil {
		c.happen(fmt.Sprintf("b%d-error", b.id), "b%d ProduceAppended: %v", b.id, err)
	}
	c.drain()
}

// fetch sends one Fetch from follower id; it reports whether anything changed.
func (c *Cluster) fetch(id int32) bool {
	f := c.b(id)
	if f == nil || !f.up {
		c.happen(fmt.Sprintf("b%d-no-fetch", id), "b%d is down", id)
		return false
	}
	req, ok := f.p.NextFetch()
	if !ok {
		if !c.quiet {
			c.happen(fmt.Sprintf("b%d-no-fetch", id), "b%d has no leader to fetch from", id)
		}
		return false
	}
	l := c.b(f.p.Status().Leader)
	if l == nil || !l.up || l.cut || f.cut {
		if !c.quiet {
			c.happen(fmt.Sprintf("b%d-no-fetch", id), "b%d cannot reach b%d", id, f.p.Status().Leader)
		}
		return false
	}
	before := fmt.Sprint(f.p.Status(), l.p.Status())
	res := l.p.FollowerFetch(req)
	var batches []replication.Batch
	var got []string
	if res.Err == nil && res.DivergingEpoch == nil {
		for off := req.FetchOffset; off < res.LogEndOffset; off++ {
			e := l.log[off]
			batches = append(batches, replication.Batch{BaseOffset: off, LastOffset: off, Epoch: e.epoch})
			got = append(got, fmt.Sprintf("%s/e%d", e.value, e.epoch))
		}
	}
	fr := Fetch{Broker: id, Leader: l.id, Offset: req.FetchOffset, LastEpoch: req.LastFetchedEpoch, Records: got, HW: res.HighWatermark,
		Err: res.Err, LogStart: res.LogStartOffset, LogEnd: res.LogEndOffset}
	if d := res.DivergingEpoch; d != nil {
		fr.Diverging = fmt.Sprintf("%d@%d", d.Epoch, d.EndOffset)
	}
	c.Fetches = append(c.Fetches, fr)
	if !c.quiet {
		line := fmt.Sprintf("b%d fetch offset=%d last-epoch=%d from b%d →", id, req.FetchOffset, req.LastFetchedEpoch, l.id)
		switch {
		case res.Err != nil:
			line += fmt.Sprintf(" %s (leader log [%d,%d))", errName(res.Err), res.LogStartOffset, res.LogEndOffset)
		case res.DivergingEpoch != nil:
			line += fmt.Sprintf(" diverging epoch %d ends at %d", res.DivergingEpoch.Epoch, res.DivergingEpoch.EndOffset)
		default:
			if len(got) > 0 {
				line += " " + strings.Join(got, " ")
			} else {
				line += " no records"
			}
			line += fmt.Sprintf(", leader HW %d", res.HighWatermark)
		}
		c.happen(fmt.Sprintf("b%d-fetch", id), "%s", line)
	}
	// The leader acts on what the fetch decided (HW, ISR, acks) before the
	// follower sees the response.
	c.drain()
	for _, b := range batches {
		f.log = append(f.log, l.log[b.BaseOffset])
	}
	if err := f.p.HandleFetchResponse(res, batches); err != nil {
		c.happen(fmt.Sprintf("b%d-error", id), "b%d HandleFetchResponse: %v", id, err)
	}
	if res.Err == nil && res.DivergingEpoch == nil {
		f.synced = true
	}
	c.drain()
	return len(got) > 0 || fmt.Sprint(f.p.Status(), l.p.Status()) != before
}

func (c *Cluster) tick(ms int64) {
	c.now += ms
	for _, b := range c.brokers {
		if b.up {
			b.p.Tick(c.now)
		}
	}
	c.drain()
}

// crash stops broker id; powerLoss also drops everything not fsynced.
func (c *Cluster) crash(id int32, powerLoss bool) {
	b := c.b(id)
	b.up, b.p = false, nil
	if powerLoss {
		b.log = b.log[:b.flushed]
		b.hw = min(b.flushedHW, int64(len(b.log)))
		b.epochs, _ = leaderepoch.TruncateFromEnd(b.epochs, int64(len(b.log)))
	}
}

func (c *Cluster) start(id int32) {
	b := c.b(id)
	c.boot(b)
	c.fenced[id] = false
	c.drain()
	if c.meta.Leader == replication.NoLeader {
		c.elect(replication.NoLeader)
	}
}

func (c *Cluster) heal(id int32) {
	b := c.b(id)
	b.cut = false
	c.fenced[id] = false
	q := b.queued
	b.queued = nil
	for _, req := range q {
		c.alter(b, req)
	}
	c.send(b)
	c.drain()
	if c.meta.Leader == replication.NoLeader {
		c.elect(replication.NoLeader)
	}
}

func (c *Cluster) SetConfig(args map[string]string) error {
	cfg := c.cfg
	for k, v := range args {
		switch k {
		case "min-isr":
			n, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			cfg.MinInsyncReplicas = n
		case "lag":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return err
			}
			cfg.ReplicaLagTimeMaxMs = n
		case "rule":
			r, err := replication.ParseRule(v)
			if err != nil {
				return err
			}
			cfg.TruncationRule = r
		case "unclean":
			c.unclean = v == "true"
		case "brokers":
		default:
			return fmt.Errorf("unknown config %q", k)
		}
	}
	if err := cfg.Validate(len(c.brokers)); err != nil {
		return err
	}
	c.cfg = cfg
	for _, b := range c.brokers {
		if b.up {
			if err := b.p.SetConfig(cfg); err != nil {
				return err
			}
		}
	}
	c.drain()
	if c.meta.Leader == replication.NoLeader && c.unclean {
		c.elect(replication.NoLeader)
	}
	return nil
}

func fmtLog(log []entry, flushed int) string {
	if flushed < 0 {
		flushed = len(log)
	}
	var s []string
	for i, e := range log {
		r := fmt.Sprintf("%d:%s/e%d", i, e.value, e.epoch)
		if i >= flushed {
			r += "*"
		}
		s = append(s, r)
	}
	if len(s) == 0 {
		return "(empty)"
	}
	return strings.Join(s, " ")
}

// lanes prints one line per broker and one for the controller; once the
// script used flush, records not yet fsynced carry a '*'.
func (c *Cluster) Lanes() string {
	var sb strings.Builder
	for _, b := range c.brokers {
		flushed := b.flushed
		if !c.flushes {
			flushed = -1
		}
		if !b.up {
			fmt.Fprintf(&sb, "b%d down        HW=%d | %s\n", b.id, b.hw, fmtLog(b.log, flushed))
			continue
		}
		s := b.p.Status()
		role := s.Role.String()
		if b.cut {
			role += "(cut)"
		}
		fmt.Fprintf(&sb, "b%d %-8s e%d LEO=%d HW=%d", b.id, role, s.LeaderEpoch, s.LogEndOffset, s.HighWatermark)
		if s.Role == replication.RoleLeader {
			fmt.Fprintf(&sb, " ISR=%v", s.ISR)
			if s.PendingISR != nil {
				fmt.Fprintf(&sb, " pending=%v", s.PendingISR)
			}
		}
		var cache []string
		for _, e := range s.EpochCache {
			cache = append(cache, fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset))
		}
		if len(cache) == 0 {
			cache = []string{"-"}
		}
		fmt.Fprintf(&sb, " | %s | epochs %s\n", fmtLog(b.log, flushed), strings.Join(cache, " "))
	}
	fmt.Fprintf(&sb, "controller: leader=%d epoch=%d partition-epoch=%d ISR=%v", c.meta.Leader, c.meta.LeaderEpoch, c.meta.PartitionEpoch, c.meta.ISR)
	return sb.String()
}

// Check runs the invariants after a command, with the one checker
// (package invariant): structural ones broken go to Errs, the ones a
// setting may break to Violations, each printed once as a "!!" line.
func (c *Cluster) Check() {
	fail := func(err error) { c.errs = append(c.errs, err.Error()) }
	if len(c.meta.ISR) == 0 {
		fail(errors.New("controller ISR is empty")) // ZooKeeper-era: the last member stays, even offline
	}
	if err := invariant.Controller(c.meta.Leader, c.meta.ISR); err != nil {
		fail(err)
	}
	s := invariant.Snapshot{}
	for _, a := range c.acked {
		s.Writes = append(s.Writes, invariant.Write{Value: a.value, Acked: true, Offset: a.offset})
	}
	for _, b := range c.brokers {
		r := invariant.Replica{Broker: b.id, LEO: int64(len(b.log))}
		for i, x := range b.log {
			r.Records = append(r.Records, invariant.Rec{Offset: int64(i), Epoch: x.epoch, Value: x.value})
		}
		if b.up {
			st := b.p.Status()
			r.LogStart, r.HW, r.LEO = st.LogStartOffset, st.HighWatermark, st.LogEndOffset
			r.Leader = b.id == c.meta.Leader && st.Role == replication.RoleLeader
			r.Synced = !r.Leader && b.synced
			if st.Role == replication.RoleLeader {
				r.ISR = append([]int32{}, st.ISR...)
			}
			// The HW a consumer is told (ListOffsets latest); a leader
			// whose HW is below its epoch's start tells none (KIP-207).
			if r.Leader && st.HighWatermark >= st.EpochStartOffset {
				s.VisibleHW, s.HasVisibleHW = st.HighWatermark, true
			}
		}
		if err := invariant.Structure(r, s.Topic); err != nil {
			fail(err)
		}
		if b.up {
			s.Replicas = append(s.Replicas, r)
		}
	}
	for _, v := range c.watch.Check(s) {
		c.Violations = append(c.Violations, v)
		c.printf("!! %s", v)
	}
}

// ParseArgs splits a command's fields into positional arguments and key=value options.
func ParseArgs(fields []string) (pos []string, kv map[string]string) {
	kv = map[string]string{}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	return pos, kv
}

func brokerArg(c *Cluster, pos []string) (int32, error) {
	if len(pos) == 0 {
		return 0, errors.New("missing broker id")
	}
	n, err := strconv.Atoi(pos[0])
	if err != nil || c == nil || c.b(int32(n)) == nil {
		return 0, fmt.Errorf("bad broker %q", pos[0])
	}
	return int32(n), nil
}

// run executes one command and returns its output.
func (c *Cluster) Run(cmd string, pos []string, kv map[string]string) error {
	switch cmd {
	case "produce":
		acks := int16(-1)
		switch kv["acks"] {
		case "", "all", "-1":
		case "1":
			acks = 1
		case "0":
			acks = 0
		default:
			return fmt.Errorf("bad acks %q", kv["acks"])
		}
		timeout, _ := strconv.ParseInt(kv["timeout"], 10, 64)
		to := replication.NoLeader
		if v, ok := kv["to"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			to = int32(n)
		}
		c.produce(kv["value"], acks, timeout, to)
	case "fetch":
		id, err := brokerArg(c, pos)
		if err != nil {
			return err
		}
		times := 1
		if v, ok := kv["times"]; ok {
			times, _ = strconv.Atoi(v)
		}
		for range times {
			c.fetch(id)
		}
	case "sync":
		c.quiet = true
		rounds := 0
		for changed := true; changed && rounds < 20; rounds++ {
			changed = false
			for _, b := range c.brokers {
				if b.up && b.p.Status().Role == replication.RoleFollower && c.fetch(b.id) {
					changed = true
				}
			}
		}
		c.quiet = false
		for _, b := range c.brokers {
			if b.up {
				c.printf("b%d LEO=%d HW=%d", b.id, len(b.log), b.p.Status().HighWatermark)
			}
		}
	case "tick":
		if len(pos) == 0 {
			return errors.New("tick needs milliseconds")
		}
		ms, err := strconv.ParseInt(pos[0], 10, 64)
		if err != nil {
			return err
		}
		c.tick(ms)
		c.printf("now %dms", c.now)
	case "flush":
		for _, b := range c.brokers {
			if len(pos) > 0 && pos[0] != "all" && pos[0] != strconv.Itoa(int(b.id)) {
				continue
			}
			b.flushed, b.flushedHW = len(b.log), b.hw
			c.flushes = true
			c.happen(fmt.Sprintf("b%d-fsync", b.id), "b%d fsynced %d records, HW checkpoint %d", b.id, b.flushed, b.hw)
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

// reason is t's reason as text (Render).
func (c *Cluster) reason(t replication.Truncation) string {
	if c.Render != nil {
		return c.Render(t.ReasonKey, t.ReasonArgs...)
	}
	return strings.TrimSpace(fmt.Sprintln(append([]any{t.ReasonKey}, t.ReasonArgs...)...))
}

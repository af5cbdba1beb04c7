package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/internal/kafkaname"
	"tidemark/replication"
	"tidemark/server/broker"
	"tidemark/server/cluster"
	"tidemark/server/controller"
	"tidemark/storage"
)

// Progress is where a run is, with its live counts: Lost counts the
// acknowledged writes missing from their partition's current leader (a
// later election may bring some back; the final report decides).
type Progress struct {
	Phase  Phase  `json:"phase"`
	Action int    `json:"action"` // actions done
	Total  int    `json:"total"`
	Counts Counts `json:"counts"`
	// Protocols has each topic's counts when a run plays several (a
	// comparison); a chaos run's one topic is Counts.
	Protocols []ProtocolCounts `json:"protocols,omitempty"`
}

// ProtocolCounts is one topic's live counts in a run of several.
type ProtocolCounts struct {
	Protocol controller.ReplicationProtocol `json:"protocol"`
	Counts   Counts                         `json:"counts"`
}

// Phase names a stage of a run.
type Phase string

// The phases.
const (
	PhaseStarting Phase = "starting"
	PhaseSchedule Phase = "schedule" // playing the schedule
	PhaseSettle   Phase = "settle"   // healed, restarted, fetching until nothing changes
	PhaseDone     Phase = "done"
	PhaseFailed   Phase = "failed"
)

// Options tune a run; the zero value is usable.
type Options struct {
	// Open starts the run's cluster from opts (paused, 3 brokers, a bus
	// that keeps every event of the run) and returns it with its closer.
	// Default: a cluster in a new temporary directory, removed at the end.
	Open func(opts cluster.Options) (*cluster.Cluster, func() error, error)
	// Progress is called after every action (from the run's goroutine).
	Progress func(Progress)
	Logger   *slog.Logger
	// IdleSteps moves the clock alone in a step, with no fetch rounds in
	// it, as schedules played before followers fetched during steps
	// (runner.step): the seeds tests keep for the faults they found then.
	IdleSteps bool
	// byProtocol reports each topic's counts in Progress.Protocols (a
	// comparison) instead of the one topic's in Counts.
	byProtocol bool
}

// RequestTimeout is every produce's timeout (Kafka's request.timeout.ms):
// lab time for acks=all, and the real-time bound of the broker's wait.
const RequestTimeout = 30 * time.Second

// handOff bounds the real-time waits for something the run knows is on
// its way (an append, an answer already decided).
const handOff = 10 * time.Second

// Settling steps 100 ms a round for settleRounds rounds, then 1 s a round
// for settleLongRounds more: enough for a pipeline member taken out again
// and again to wait out its rejoin back-off (at most 10 ×
// replica.lag.time.max.ms, 30 s) and be added back.
const (
	settleRounds     = 40
	settleLongRounds = 40
)

// settleStep is how far settling round round steps the clock.
func settleStep(round int) time.Duration {
	if round <= settleRounds {
		return 100 * time.Millisecond
	}
	return time.Second
}

// ErrRun marks a run the engine could not finish (not a finding about the
// cluster: a hand-off that never came, events lost).
var ErrRun = errors.New("chaos: run failed")

// Run plays actions on a fresh cluster under cfg, heals it, restarts every
// broker, lets it settle, reads everything back and checks it.
func Run(ctx context.Context, seed uint64, cfg Config, actions []Action, o Options) (*Result, error) {
	if _, err := ParseConfig(string(cfg)); err != nil {
		return nil, err
	}
	if err := validActions(actions); err != nil {
		return nil, err
	}
	res := &Result{Seed: seed, Config: cfg, Actions: actions}
	specs := []topicSpec{{name: Topic, protocol: cfg.Protocol(), configs: cfg.TopicConfigs()}}
	err := play(ctx, cfg, cfg.spec(), specs, actions, o, func(r *runner) error {
		if err := r.topics[0].created; err != nil {
			return fmt.Errorf("%w: creating the topic: %v", ErrRun, err)
		}
		return nil
	}, func(r *runner) { r.finish(res) })
	if err != nil {
		return res, err
	}
	return res, nil
}

// finish fills res from a run of one topic and reports PhaseDone.
func (r *runner) finish(res *Result) {
	t := r.topics[0]
	res.Outcomes, res.SettleRounds = r.outcomes, r.settleDone
	res.Elections = t.elections
	res.Writes = t.results()
	res.Report = t.check(res.Writes)
	res.Counts = res.Report.Counts()
	res.Final = t.final
	res.DelayEffects = r.delayEffects
	res.ISRShrinks = r.isrShrinks[t.name]
	res.Recording = r.recording()
	r.progress(Progress{Phase: PhaseDone, Action: len(r.actions), Total: len(r.actions), Counts: res.Counts})
}

// validActions bounds a schedule and checks each action.
func validActions(actions []Action) error {
	if len(actions) > MaxActions {
		return fmt.Errorf("%w: %d actions; at most %d", kerr.InvalidRequest, len(actions), MaxActions)
	}
	for _, a := range actions {
		if err := a.validate(); err != nil {
			return err
		}
	}
	return nil
}

// topicSpec is one topic a run writes to.
type topicSpec struct {
	name     string
	protocol controller.ReplicationProtocol
	configs  map[string]string
}

// play opens the run's cluster, creates the topics (started decides whether
// the run goes on: a topic the controller refused is skipped or fatal),
// plays actions, settles, reads back, and hands the runner to done, which
// reports PhaseDone.
func play(ctx context.Context, cfg Config, spec Spec, specs []topicSpec, actions []Action, o Options, started func(*runner) error, done func(*runner)) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Open == nil {
		o.Open = openTemp
	}
	report := func(p Progress) {
		if o.Progress != nil {
			o.Progress(p)
		}
	}
	report(Progress{Phase: PhaseStarting, Total: len(actions)})
	c, closeCluster, err := o.Open(cluster.Options{Brokers: Brokers, Paused: true, Logger: o.Logger,
		Bus: events.NewBus(events.BusOptions{History: 1 << 16})})
	if err != nil {
		return err
	}
	r := newRunner(ctx, c, cfg, spec, specs, actions, report)
	r.byProtocol, r.idleSteps = o.byProtocol, o.IdleSteps
	err = r.start()
	if err == nil {
		err = started(r)
	}
	if err == nil {
		err = r.run()
	}
	if err == nil {
		done(r) // reports PhaseDone with the checker's counts
	}
	r.closeClients()
	cerr := closeCluster()
	// Closing answers the produces still waiting; their goroutines end.
	r.wg.Wait()
	if err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// openTemp opens a cluster in a new temporary directory and removes it on close.
func openTemp(opts cluster.Options) (*cluster.Cluster, func() error, error) {
	dir, err := os.MkdirTemp("", "tidemark-chaos-")
	if err != nil {
		return nil, nil, err
	}
	opts.DataDir = dir
	c, err := cluster.Open(opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return c, func() error { return errors.Join(c.Close(), os.RemoveAll(dir)) }, nil
}

// Replay plays an exported run again: the same configuration and actions.
func Replay(ctx context.Context, exported []byte, o Options) (*Result, error) {
	res, err := Import(exported)
	if err != nil {
		return nil, err
	}
	return Run(ctx, res.Seed, res.Config, res.Actions, o)
}

// --- producers ---

// producer is one client of the workload. Each has at most one request in
// flight per partition (Kafka's max.in.flight=1 keeps a retry in order).
type producer struct {
	id         int
	idempotent bool
	pid        int64
	epoch      int16
	n          int                // values made so far
	seq        [Partitions]int32  // next sequence per partition
	retry      [Partitions]*batch // a batch to send (again) before any new one
	inflight   [Partitions]*pending
	leader     [Partitions]int32 // metadata cache; -1: look it up
}

// batch is one single-record batch; an idempotent producer's retry resends
// it as it is (same producer epoch and sequence).
type batch struct {
	w     *Write
	seq   int32
	epoch int16
}

// pending is a produce waiting in its goroutine for the leader's answer.
type pending struct {
	pr     *producer
	b      *batch
	broker int32
	gen    int   // the broker's start generation when sent
	offset int64 // where the leader appended it
	done   chan broker.ProduceResult
}

// runner plays one run. Only its goroutine touches it, except the produce
// goroutines, which only send on their pending's channel.
type runner struct {
	ctx      context.Context
	c        *cluster.Cluster
	cfg      Config
	spec     Spec // what the producers do: cfg's unless a Spec run
	actions  []Action
	progress func(Progress)
	// byProtocol and idleSteps: Options'.
	byProtocol, idleSteps bool
	// gone holds the brokers that crashed or lost power since the
	// controller last registered or fenced them (Election.LeaderDown).
	gone map[int32]bool

	action     int    // index of the action being played
	seq        uint64 // the last bus event processed
	evs        []events.Event
	topics     []*topicRun
	gen        map[int32]int // bumped at every crash and power loss
	wg         sync.WaitGroup
	outcomes   []string
	clients    map[int32]*wireClient
	settleDone int
	// began is the lab time the schedule started at: writes' times are
	// lab time since then.
	began time.Time
	// messages are the links' replication messages when the schedule
	// started.
	messages map[controller.ReplicationProtocol]map[string]int64
	// isr is each partition's ISR as the last ISR or election event said
	// (by topic, then partition), and delayEffects what delays did.
	isr          map[string]map[int32][]int32
	delayEffects DelayEffects
	// isrShrinks counts ISR changes that left a replica out, by topic.
	isrShrinks map[string]int
	// rec is what the stage plays back: from the schedule's start, every
	// event the run published (observe records each action's).
	rec Recording
}

// topicRun is one topic of a run: its producers, their writes, and what
// the run observed of its replicas. A comparison plays the same actions on
// one topic per protocol; a chaos run has one topic.
type topicRun struct {
	r        *runner
	name     string
	protocol controller.ReplicationProtocol
	configs  map[string]string
	// created is the controller's refusal of the topic; nil once it exists.
	created   error
	producers []*producer
	pending   []*pending
	writes    []*Write

	// What each running replica held at the last sample, and its copies.
	held      map[int32]map[int32]map[string]int64 // broker → partition → value → offset
	open      map[copyKey]int                      // index in copies of a held copy
	copies    []Copy
	restarted map[int32]map[int32]*powerCut // broker → partition → how it stopped, until sampled
	elections []Election
	hws       []HWSample
	leaders   []LeaderSample
	final     Final
	// sampledAt is what sample last read of each replica (Spec runs).
	sampledAt map[replicaKey]sampled
	// order checks the topic's event stream as the run reads it.
	order EventOrder
}

type copyKey struct {
	value  string
	broker int32
}

// powerCut is how a stopped broker's log of one partition stopped: the bus
// sequence number then and its recovery point (-1 after a crash, which
// keeps what was written).
type powerCut struct {
	seq           uint64
	recoveryPoint int64 // -1 after a crash
}

func newRunner(ctx context.Context, c *cluster.Cluster, cfg Config, spec Spec, specs []topicSpec, actions []Action, progress func(Progress)) *runner {
	r := &runner{ctx: ctx, c: c, cfg: cfg, spec: spec, actions: actions, progress: progress, gen: map[int32]int{},
		clients: map[int32]*wireClient{}, isr: map[string]map[int32][]int32{}, gone: map[int32]bool{}, isrShrinks: map[string]int{}}
	for _, sp := range specs {
		t := &topicRun{r: r, name: sp.name, protocol: sp.protocol, configs: sp.configs, order: EventOrder{Topic: sp.name},
			held: map[int32]map[int32]map[string]int64{}, open: map[copyKey]int{}, restarted: map[int32]map[int32]*powerCut{}}
		for id := 1; id <= Producers; id++ {
			p := &producer{id: id, idempotent: spec.idempotent(id), pid: -1, epoch: -1}
			for i := range p.leader {
				p.leader[i] = -1
			}
			t.producers = append(t.producers, p)
		}
		r.topics = append(r.topics, t)
	}
	return r
}

// start creates the topics (a refused one is kept, with its error, and
// takes no further part), gives the idempotent producers their ids, and
// steps the clock until every partition has a leader (quorum partitions
// elect theirs by Raft; isr ones have one at once).
func (r *runner) start() error {
	var live []*topicRun
	for _, t := range r.topics {
		if _, err := r.c.CreateTopic(t.name, Partitions, Brokers, t.configs); err != nil {
			t.created = err
			continue
		}
		live = append(live, t)
		for _, p := range t.producers {
			if p.idempotent {
				resp := r.c.Coordinator().InitProducerID(kmsg.NewPtrInitProducerIDRequest())
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					return fmt.Errorf("%w: InitProducerId: %v", ErrRun, err)
				}
				p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
			}
		}
	}
	for range leaderSteps {
		if r.leadersKnown(live) {
			break
		}
		if err := r.c.Step(leaderStep); err != nil {
			return fmt.Errorf("%w: %v", ErrRun, err)
		}
	}
	r.began = r.c.Clock().Now()
	r.messages = r.c.ReplicationMessages()
	return nil
}

// leaderSteps × leaderStep bounds the wait for a new topic's first leaders
// (Raft elects in 0.5–1 s of lab time).
const (
	leaderSteps = 200
	leaderStep  = 50 * time.Millisecond
)

// leadersKnown reports whether every partition of ts has a leader in the
// controller's metadata that leads at that epoch by its own account.
func (r *runner) leadersKnown(ts []*topicRun) bool {
	for _, t := range ts {
		md, ok := r.c.Controller().Topic(t.name)
		if !ok {
			return false
		}
		for _, p := range md.Partitions {
			b := r.c.Broker(p.Leader)
			if b == nil {
				return false
			}
			rep := b.Replica(t.name, p.Partition)
			if rep == nil {
				return false
			}
			if st := rep.Status(); st.Role != replication.RoleLeader || st.LeaderEpoch != p.LeaderEpoch {
				return false
			}
		}
	}
	return true
}

// playing returns the topics the run writes to (those created).
func (r *runner) playing() []*topicRun {
	out := make([]*topicRun, 0, len(r.topics))
	for _, t := range r.topics {
		if t.created == nil {
			out = append(out, t)
		}
	}
	return out
}

// electing returns the topics whose partitions elect their leaders
// themselves, over time (not isr, whose controller elects at once).
func (r *runner) electing() []*topicRun {
	var out []*topicRun
	for _, t := range r.playing() {
		if t.protocol != controller.ProtocolISR {
			out = append(out, t)
		}
	}
	return out
}

// run plays the schedule, settles and reads everything back.
func (r *runner) run() error {
	r.rec.Start = r.c.Snapshot()
	r.seq = r.rec.Start.Seq
	if evs, _ := r.c.Bus().Since(r.seq, 0); len(evs) > 0 { // published since the snapshot
		r.seq = evs[len(evs)-1].Seq
		r.take(evs)
	}
	for i, a := range r.actions {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		r.action = i
		out, err := r.play(a)
		if err != nil {
			return err
		}
		r.outcomes = append(r.outcomes, out)
		if err := r.observe(a); err != nil {
			return err
		}
		r.report(PhaseSchedule, i+1)
	}
	if err := r.settle(); err != nil {
		return err
	}
	for _, t := range r.playing() {
		if err := t.readBack(); err != nil {
			return err
		}
	}
	// Settling and the read-back, unless the bus no longer holds them all.
	if evs, oldest := r.c.Bus().Since(r.seq, 0); oldest > r.seq+1 {
		r.rec.Truncated = true
	} else {
		r.take(evs)
	}
	return nil
}

// take records events read from the bus, in its order, and has each
// topic's EventOrder check them.
func (r *runner) take(evs []events.Event) {
	r.rec.add(evs)
	for _, t := range r.topics {
		t.order.Add(evs...)
	}
}

// recording returns what the run recorded for the stage.
func (r *runner) recording() *Recording {
	rec := r.rec
	return &rec
}

// results returns the topic's writes as they ended.
func (t *topicRun) results() []Write {
	out := make([]Write, 0, len(t.writes))
	for _, w := range t.writes {
		out = append(out, *w)
	}
	return out
}

// check runs the checker on the topic.
func (t *topicRun) check(writes []Write) Report {
	return Check(Input{Writes: writes, Copies: t.copies, Elections: t.elections, HWs: t.hws, Leaders: t.leaders, Final: t.final, Disorders: t.order.Found,
		Topic: topicOf(t.configs), NowMs: t.r.c.Clock().Now().UnixMilli()})
}

// report sends the live counts.
func (r *runner) report(phase Phase, done int) {
	p := Progress{Phase: phase, Action: done, Total: len(r.actions)}
	for _, t := range r.playing() {
		cs := t.liveCounts()
		if r.byProtocol {
			p.Protocols = append(p.Protocols, ProtocolCounts{Protocol: t.protocol, Counts: cs})
		} else {
			p.Counts = cs
		}
	}
	r.progress(p)
}

// liveCounts counts the topic's writes so far and what looks lost now.
func (t *topicRun) liveCounts() Counts {
	cs := Counts{}
	for _, w := range t.writes {
		cs.Writes++
		if w.Acked {
			cs.Acked++
			if t.missingAtLeader(w) {
				cs.Lost++
			}
		}
	}
	live := Check(Input{HWs: t.hws, Leaders: t.leaders})
	cs.HWBackwards, cs.LeaderOutsideISR = len(live.HWBackwards), len(live.LeaderOutsideISR)
	cs.EventsOutOfOrder = len(t.order.Found)
	return cs
}

// missingAtLeader reports whether an acknowledged write is missing from the
// log of its partition's leader, as last sampled.
func (t *topicRun) missingAtLeader(w *Write) bool {
	md, ok := t.r.c.Controller().Topic(t.name)
	if !ok {
		return false
	}
	l := md.Partitions[w.Partition].Leader
	m, ok := t.held[l][w.Partition]
	if !ok || t.r.c.Broker(l) == nil {
		return false // no leader to ask
	}
	_, there := m[w.Value]
	return !there
}

// play runs one action and returns its outcome ("ok" or a Kafka error
// name; a produce's on each topic, space-separated).
func (r *runner) play(a Action) (string, error) {
	var err error
	if a.Leader && (a.Kind == ActCrash || a.Kind == ActPowerLoss) {
		if a.Broker = r.leaderOf(a.Partition); a.Broker < 0 {
			return kafkaName(kerr.LeaderNotAvailable), nil
		}
	}
	switch a.Kind {
	case ActProduce:
		var outs []string
		for _, t := range r.playing() {
			out, err := t.produce(t.producers[a.Producer-1], a.Partition)
			if err != nil {
				return "", err
			}
			outs = append(outs, out)
		}
		return strings.Join(outs, " "), nil
	case ActFetch:
		err = r.c.StepFetch(r.ctx, a.Broker)
	case ActStep:
		err = r.step(time.Duration(a.StepMs) * time.Millisecond)
	case ActCrash:
		if err = r.c.Crash(a.Broker); err == nil {
			r.stopped(a.Broker, nil)
		}
	case ActPowerLoss:
		running := r.c.Broker(a.Broker) != nil
		rps := map[*topicRun]map[int32]int64{}
		for _, t := range r.playing() {
			rps[t] = t.recoveryPoints(a.Broker)
		}
		if _, err = r.c.PowerLoss(a.Broker); running && r.c.Broker(a.Broker) == nil {
			r.stopped(a.Broker, rps)
		}
	case ActRestart:
		err = r.c.Restart(a.Broker)
	case ActCut:
		err = r.c.Cut(a.From, a.To, a.OneWay)
	case ActDelay:
		err = r.c.DelayLink(a.From, a.To, time.Duration(a.DelayMs)*time.Millisecond, a.OneWay)
	case ActHeal:
		r.c.Heal()
	}
	return outcome(err), nil
}

// leaderOf is the running broker the controller names as partition p's
// leader (of the first topic played), or -1.
func (r *runner) leaderOf(p int32) int32 {
	for _, t := range r.playing() {
		if md, ok := r.c.Controller().Topic(t.name); ok && int(p) < len(md.Partitions) {
			if l := md.Partitions[p].Leader; l > 0 && r.c.Broker(l) != nil {
				return l
			}
		}
		break
	}
	return -1
}

// step moves the lab's clock d, as time passes in a running lab: every
// fetchEvery of it, each running broker makes a fetch round, as Kafka's
// followers fetch without a pause (a fetch that finds nothing waits at
// most replica.fetch.wait.max.ms, 500 ms). A follower then falls out of
// the ISR only for a reason of its own (stopped, cut off, delayed), not
// because the schedule moved time on (a step past
// replica.lag.time.max.ms used to empty every ISR of its followers, and
// most acks=all writes of a run were refused). Options.IdleSteps moves
// the clock alone.
func (r *runner) step(d time.Duration) error {
	if r.idleSteps {
		return r.c.Step(d)
	}
	for d > 0 {
		chunk := min(d, fetchEvery)
		d -= chunk
		if err := r.c.Step(chunk); err != nil || d == 0 {
			return err
		}
		for id := int32(1); id <= Brokers; id++ {
			if r.c.Broker(id) != nil {
				// A broker cut off from a leader fails its fetch: what
				// the schedule's faults are for.
				_ = r.c.StepFetch(r.ctx, id)
			}
		}
	}
	return nil
}

// fetchEvery is how often followers fetch during a step: half of
// replica.lag.time.max.ms, as often as Kafka's leader checks for laggards.
const fetchEvery = ReplicaLagTimeMaxMs / 2 * time.Millisecond

// recoveryPoints reads, before a power loss, each log's recovery point: the
// offset below which it is fsynced. Nil if the broker is not running.
func (t *topicRun) recoveryPoints(id int32) map[int32]int64 {
	b := t.r.c.Broker(id)
	if b == nil {
		return nil
	}
	out := map[int32]int64{}
	for p := range int32(Partitions) {
		if rep := b.Replica(t.name, p); rep != nil {
			out[p] = rep.Log().RecoveryPoint()
		}
	}
	return out
}

// stopped notes that a broker stopped: its waiting produces are answered
// (decided), and when it restarts its logs are compared with what it held
// then. recoveryPoints (by topic) is nil for a crash, which keeps
// everything written.
func (r *runner) stopped(id int32, recoveryPoints map[*topicRun]map[int32]int64) {
	r.gen[id]++
	for _, t := range r.playing() {
		t.stopped(id, recoveryPoints[t])
	}
	r.closeClient(id)
}

func (t *topicRun) stopped(id int32, recoveryPoints map[int32]int64) {
	cut := map[int32]*powerCut{}
	for p := range int32(Partitions) {
		rp, ok := recoveryPoints[p]
		if !ok {
			rp = -1
		}
		c := &powerCut{seq: t.r.c.Bus().LastSeq(), recoveryPoint: rp}
		// A stop before the replica was sampled again (a power loss, a
		// restart, then a crash) adds to the earlier one: what the first
		// power loss took is still its doing, and a crash takes nothing.
		if prev := t.restarted[id][p]; prev != nil && prev.recoveryPoint >= 0 {
			c.seq = prev.seq
			if rp < 0 || prev.recoveryPoint < rp {
				c.recoveryPoint = prev.recoveryPoint
			}
		}
		cut[p] = c
	}
	t.restarted[id] = cut
}

func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	return kafkaName(err)
}

// kafkaName is an error's Kafka name (code 6 by today's name), or a name
// for the lab's own failures that is the same in every run.
func kafkaName(err error) string {
	if name, ok := kafkaname.Err(err); ok {
		return name
	}
	switch {
	case errors.Is(err, broker.ErrLinkCut):
		return "LINK_CUT"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "CONNECTION_REFUSED" // a leader that stopped (its port differs from run to run)
	}
	return "ERROR"
}

// produce sends producer pr's next batch to partition p's leader as pr
// knows it, and returns once the leader appended it, answered, or (a
// quorum leader, which appends only what a majority has) proposed it and
// waits for a majority.
func (t *topicRun) produce(pr *producer, p int32) (string, error) {
	r := t.r
	if pr.inflight[p] != nil {
		return "in-flight", nil
	}
	b := pr.retry[p]
	if b == nil {
		pr.n++
		acks := r.spec.Acks
		if pr.idempotent {
			acks = "all"
		}
		w := &Write{Value: r.spec.value(pr.id, pr.n), Producer: pr.id, Idempotent: pr.idempotent,
			Acks: acks, Partition: p, Offset: -1, SentAction: r.action, SentMs: r.labMs()}
		t.writes = append(t.writes, w)
		b = &batch{w: w, seq: pr.seq[p], epoch: pr.epoch}
		if pr.idempotent {
			pr.seq[p]++
		}
		pr.retry[p] = b // until it is sent and answered
	}
	if pr.leader[p] < 0 {
		if md, ok := r.c.Controller().Topic(t.name); ok {
			pr.leader[p] = md.Partitions[p].Leader
		}
	}
	leader := pr.leader[p]
	if leader < 0 {
		return kafkaName(kerr.LeaderNotAvailable), nil
	}
	br := r.c.Broker(leader)
	var rep *broker.Replica
	if br != nil {
		rep = br.Replica(t.name, p)
	}
	if rep == nil {
		pr.leader[p] = -1
		return kafkaName(kerr.BrokerNotAvailable), nil
	}
	// A retry of a batch the leader holds uncommitted would wait for the
	// HW without a trace the run could follow; send it once it is settled
	// either way (committed, or truncated away).
	if b.w.Attempts > 0 {
		if off, ok := findValue(rep.Log(), b.w.Value); ok && off >= rep.Status().HighWatermark {
			return "retry-backoff", nil
		}
	}
	rec := []storage.Record{{Value: []byte(b.w.Value), Timestamp: r.c.Clock().Now().UnixMilli()}}
	records := storage.NewBatch(rec)
	if pr.idempotent {
		records = storage.NewIdempotentBatch(rec, pr.pid, b.epoch, b.seq)
	}
	acks := int16(-1)
	switch b.w.Acks {
	case "1":
		acks = 1
	case "0":
		acks = 0
	}
	b.w.Attempts++
	pd := &pending{pr: pr, b: b, broker: leader, gen: r.gen[leader], offset: -1, done: make(chan broker.ProduceResult, 1)}
	before, waiting, seq0 := rep.Log().LogEndOffset(), rep.Status().WaitingProduces, r.c.Bus().LastSeq()
	r.wg.Go(func() { pd.done <- br.Produce(context.Background(), t.name, p, acks, records, RequestTimeout) })
	// The hand-off: the leader appended the batch, answered, or proposed
	// it and waits (it is then among its waiting produces). An append
	// takes the append's path even when its answer came too (acks=1), so
	// the outcome does not depend on which the run saw first. A quorum
	// leader appends what committed while its messages are still going
	// round: its log growing is no hand-off.
	appended := func() bool { return !appendsOnCommit(t.protocol) && rep.Log().LogEndOffset() > before }
	deadline := time.Now().Add(handOff)
wait:
	for {
		// A pipeline head forwards the batch in the produce's own call,
		// after the append: the members' appends, their acks coming back,
		// a member found unreachable, the rebuild that asks for and its
		// truncation of the batch. Wait for that call to hand off before
		// looking, or what the run sees (and the next action) races with
		// it: strict-pipeline seeds 7 and 12 played differently.
		if t.protocol == controller.ProtocolPipeline && !t.forwarded(pd, leader, p, waiting, seq0) {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%w: the forwarding of %s by broker %d never ended", ErrRun, b.w.Value, leader)
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		select {
		case res := <-pd.done:
			if appended() {
				pd.done <- res // collected from the append's events, below
				break wait
			}
			seq := r.c.Bus().LastSeq()
			if res.Err == nil && rep.Log().LogEndOffset() > before {
				// A quorum leader answers as it appends what committed:
				// take the acknowledgement's event, so a replay names
				// the same one.
				if seq = t.awaitAnswer(leader, p, res.BaseOffset, deadline); seq == 0 {
					return "", fmt.Errorf("%w: the acknowledgement of %s by broker %d was never published", ErrRun, b.w.Value, leader)
				}
			}
			if b.w.Acks == "0" {
				off := int64(-1)
				if res.Err == nil {
					off = res.BaseOffset
				}
				t.sent(pd, off)
				return "sent", nil
			}
			t.answered(pd, res, seq)
			return "answered", nil
		default:
		}
		proposed := rep.Status().WaitingProduces > waiting // first: an isr leader appends before it waits
		if appended() {
			break
		}
		if proposed {
			pr.inflight[p] = pd
			t.pending = append(t.pending, pd)
			return "proposed", nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%w: produce of %s to broker %d neither appended nor answered", ErrRun, b.w.Value, leader)
		}
		time.Sleep(100 * time.Microsecond)
	}
	// The append's events are published once the leader releases the
	// replica: wait for them too, so the next action's events come after
	// them in every replay.
	for !t.appendPublished(leader, p, before) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%w: the append of %s to broker %d was never published", ErrRun, b.w.Value, leader)
		}
		time.Sleep(100 * time.Microsecond)
	}
	from := int64(0)
	if r.spec.incremental() {
		from = before // a Spec run's logs are long: look where it went
	}
	if off, ok := findValueFrom(rep.Log(), b.w.Value, from); ok {
		pd.offset = off
	}
	if b.w.Acks == "0" {
		t.sent(pd, pd.offset)
		return "sent", nil
	}
	pr.inflight[p] = pd
	t.pending = append(t.pending, pd)
	return "appended", nil
}

// appendsOnCommit reports whether a leader of protocol p appends a
// produced batch only once it committed (Raft), so its log growing says
// nothing about the hand-off.
func appendsOnCommit(p controller.ReplicationProtocol) bool { return p == controller.ProtocolQuorum }

// labMs is lab time since the schedule started, in milliseconds.
func (r *runner) labMs() int64 { return r.c.Clock().Now().Sub(r.began).Milliseconds() }

// forwarded reports whether a pipeline head's produce call pd is done
// forwarding: it answered (acks=1, or the tail's ack came back at once),
// or its request waits for acks (Status counts a waiting request once its
// forwarding returned). Requests answered meanwhile (this one's ack may
// answer older ones) are counted from their answers' events since seq0,
// when waiting requests were counted.
func (t *topicRun) forwarded(pd *pending, broker, p int32, waiting int, seq0 uint64) bool {
	select {
	case res := <-pd.done:
		pd.done <- res // collected from the append's events
		return true
	default:
	}
	b := t.r.c.Broker(broker)
	if b == nil {
		return true // stopped: its requests were answered
	}
	rep := b.Replica(t.name, p)
	if rep == nil {
		return true
	}
	answered := 0
	evs, _ := t.r.c.Bus().Since(seq0, 0)
	for _, e := range evs {
		if t.answers(e, broker, p) {
			answered++
		}
	}
	return rep.Status().WaitingProduces+answered > waiting
}

// appendPublished reports whether broker's append at offset base of
// partition p is on the bus (after the events the runner has read).
func (t *topicRun) appendPublished(broker, p int32, base int64) bool {
	evs, _ := t.r.c.Bus().Since(t.r.seq, 0)
	for _, e := range evs {
		if e.Kind == events.KindAppend && e.Broker == broker && e.Topic == t.name && e.Partition == p && e.Offsets != nil && e.Offsets.Base == base {
			return true
		}
	}
	return false
}

// awaitAnswer waits (until deadline) for broker's acknowledgement event of
// the batch at base of partition p and returns its sequence number; 0 if
// it never came.
func (t *topicRun) awaitAnswer(broker, p int32, base int64, deadline time.Time) uint64 {
	for {
		evs, _ := t.r.c.Bus().Since(t.r.seq, 0)
		for _, e := range evs {
			if e.Kind == events.KindAck && e.Broker == broker && e.Topic == t.name && e.Partition == p && e.Offsets != nil && e.Offsets.Base == base {
				return e.Seq
			}
		}
		if time.Now().After(deadline) {
			return 0
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// sent takes an acks=0 produce as done once it left the producer, as
// Kafka's producer does: acknowledged whatever the broker did with it (it
// never says), at offset off if the leader appended it (-1 otherwise), so
// the checker counts what did not arrive as acknowledged and lost.
func (t *topicRun) sent(pd *pending, off int64) {
	pr, b, p := pd.pr, pd.b, pd.b.w.Partition
	pr.inflight[p], pr.retry[p] = nil, nil
	b.w.Acked, b.w.Offset, b.w.Error, b.w.AckedSeq = true, off, "", t.r.c.Bus().LastSeq()
	b.w.AckedAction, b.w.AckedMs = t.r.action, t.r.labMs()
}

// answered applies a produce's answer to its producer; seq is the bus
// sequence it was decided at.
func (t *topicRun) answered(pd *pending, res broker.ProduceResult, seq uint64) {
	pr, b, p := pd.pr, pd.b, pd.b.w.Partition
	pr.inflight[p] = nil
	if res.Err == nil {
		b.w.Acked, b.w.Offset, b.w.Error, b.w.AckedSeq = true, res.BaseOffset, "", seq
		b.w.AckedAction, b.w.AckedMs = t.r.action, t.r.labMs()
		pr.retry[p] = nil
		return
	}
	b.w.Error = kafkaName(res.Err)
	var ke *kerr.Error
	retriable := errors.As(res.Err, &ke) && ke.Retriable
	if retriable || !errors.As(res.Err, &ke) {
		pr.leader[p] = -1 // refresh the metadata before the next send
	}
	switch {
	case !pr.idempotent && t.r.spec.Retries && (retriable || !errors.As(res.Err, &ke)):
		// kept in retry: a plain producer with retries sends the same
		// records again, twice in the log if the first send got in
	case !pr.idempotent:
		pr.retry[p] = nil // a plain producer does not resend: no duplicates by design
	case retriable && b.epoch == pr.epoch:
		// kept in retry: the same batch goes again
	case errors.Is(res.Err, kerr.OutOfOrderSequenceNumber), errors.Is(res.Err, kerr.InvalidProducerEpoch),
		errors.Is(res.Err, kerr.UnknownProducerID):
		// The sequence broke (a truncation took batches the producer
		// counted on): bump the epoch and start every partition again at
		// sequence 0, dropping what waited to be resent (KIP-360).
		pr.epoch++
		for i := range pr.seq {
			pr.seq[i] = 0
			if pr.inflight[i] == nil {
				pr.retry[i] = nil
			}
		}
	default:
		pr.retry[p] = nil
	}
}

// findValue returns the offset of value in a log.
func findValue(l *storage.Log, value string) (int64, bool) {
	for _, x := range readLog(l) {
		if x.Value == value {
			return x.Offset, true
		}
	}
	return 0, false
}

// findValueFrom returns the offset of value in a log at or above from.
func findValueFrom(l *storage.Log, value string, from int64) (int64, bool) {
	bs, err := l.ReadBatches(max(from, l.LogStartOffset()), l.LogEndOffset(), 1<<20)
	if err != nil {
		return 0, false
	}
	for _, b := range bs {
		for _, x := range b.Records {
			if string(x.Value) == value {
				return x.Offset, true
			}
		}
	}
	return 0, false
}

// readLog reads a whole log; nil if it cannot be read (closed meanwhile).
func readLog(l *storage.Log) []Rec {
	bs, err := l.ReadBatches(l.LogStartOffset(), l.LogEndOffset(), 1<<20)
	if err != nil {
		return nil
	}
	var out []Rec
	for _, b := range bs {
		for _, x := range b.Records {
			out = append(out, newRec(x.Offset, b.Header.PartitionLeaderEpoch, x.Key, x.Value, x.Timestamp))
		}
	}
	return out
}

// --- after every action ---

// observe takes in what an action did: its events (elections, answers
// decided), every replica's log, the HW a consumer sees and who leads.
func (r *runner) observe(a Action) error {
	evs, oldest := r.c.Bus().Since(r.seq, 0)
	if oldest > r.seq+1 {
		return fmt.Errorf("%w: events %d..%d were dropped before the checker read them", ErrRun, r.seq+1, oldest-1)
	}
	if n := len(evs); n > 0 {
		r.seq = evs[n-1].Seq
	}
	r.evs = evs
	r.take(evs)
	r.countDelayEffects()
	// goneAt: the elections (by seq) of a broker that had stopped since the
	// controller last registered or fenced it, in the events' order.
	goneAt := map[uint64]bool{}
	for _, e := range evs {
		switch {
		case e.Kind == events.KindFault && e.Fault != nil && (e.Fault.Kind == events.FaultCrash || e.Fault.Kind == events.FaultPowerLoss):
			r.gone[e.Broker] = true
		case e.Kind == events.KindBroker && e.BrokerState == events.BrokerFenced:
			delete(r.gone, e.Broker)
		case e.Kind == events.KindElection && e.Leader != nil && r.gone[e.Leader.Leader]:
			goneAt[e.Seq] = true
		}
	}
	for _, t := range r.playing() {
		for _, e := range evs {
			if e.Kind == events.KindElection && e.Topic == t.name && e.Leader != nil {
				t.elections = append(t.elections, Election{Seq: e.Seq, Action: r.action, Partition: e.Partition,
					Leader: e.Leader.Leader, PreviousLeader: e.Leader.PreviousLeader, LeaderEpoch: e.Leader.LeaderEpoch,
					Unclean: e.Leader.Unclean, LastKnown: e.Leader.LastKnown, ISR: slices.Clone(e.ISR),
					LeaderDown: goneAt[e.Seq]})
			}
		}
		if err := t.collect(); err != nil {
			return err
		}
		t.sample()
		t.sampleLeaders()
	}
	return nil
}

// countDelayEffects counts, in the events of the last action, the ISR
// shrinks and session fencings a delayed link explains: a leader's
// proposal without a follower that still has a message on its way
// between them (its fetch, on an isr topic), and a running broker fenced
// for its session while its link with the controller is delayed and not
// cut (its heartbeats came late). Both are counted once the action is
// done, so a fetch that arrived within the same step is missed.
func (r *runner) countDelayEffects() {
	net := r.c.Network()
	for _, e := range r.evs {
		switch {
		case e.Kind == events.KindBroker && e.MessageKey == "event.broker.fenced.timeout":
			id := e.Broker
			if (net.Delay(id, cluster.ControllerNode) > 0 || net.Delay(cluster.ControllerNode, id) > 0) &&
				net.Allowed(id, cluster.ControllerNode) && net.Allowed(cluster.ControllerNode, id) && r.c.Broker(id) != nil {
				r.delayEffects.Fencings++
			}
		case e.Kind == events.KindISR || e.Kind == events.KindElection:
			if r.isr[e.Topic] == nil {
				r.isr[e.Topic] = map[int32][]int32{}
			}
			prev, seen := r.isr[e.Topic][e.Partition]
			r.isr[e.Topic][e.Partition] = slices.Clone(e.ISR)
			if seen && slices.ContainsFunc(prev, func(id int32) bool { return !slices.Contains(e.ISR, id) }) {
				r.isrShrinks[e.Topic]++
			}
			if e.Kind != events.KindISR || e.MessageKey != "event.isr.alter" {
				continue // not a leader's proposal
			}
			for _, id := range prev {
				if !slices.Contains(e.ISR, id) && r.c.InFlightBetween(id, e.Broker) {
					r.delayEffects.ISRShrinks++
				}
			}
		}
	}
}

// collect takes the answers of the waiting produces whose fate this action
// decided: an ack or produce-error event for their offsets, or their
// broker stopped. Undecided ones keep waiting, so the run does not depend
// on how fast goroutines are scheduled. A proposal (offset unknown: a
// quorum leader appends only once a majority has it) was answered when its
// leader waits for fewer produces than the run has proposals there.
func (t *topicRun) collect() error {
	r := t.r
	kept := t.pending[:0]
	proposals := map[replicaKey][]*pending{}
	for _, pd := range t.pending {
		decided := r.gen[pd.broker] != pd.gen
		at := r.seq // when it was decided: its answer's event, or now
		if pd.offset >= 0 {
			for _, e := range r.evs {
				if t.answers(e, pd.broker, pd.b.w.Partition) && e.Offsets.Base == pd.offset {
					decided, at = true, e.Seq
				}
			}
		}
		switch {
		case decided:
			select {
			case res := <-pd.done:
				t.answered(pd, res, at)
			case <-time.After(handOff):
				return fmt.Errorf("%w: the answer to %s (decided) never arrived", ErrRun, pd.b.w.Value)
			}
		case pd.offset < 0:
			k := replicaKey{pd.broker, pd.b.w.Partition}
			proposals[k] = append(proposals[k], pd)
			kept = append(kept, pd)
		default:
			kept = append(kept, pd)
		}
	}
	t.pending = kept
	for k, pds := range proposals {
		if err := t.collectProposals(k, pds); err != nil {
			return err
		}
	}
	return nil
}

// replicaKey names a broker's replica of a partition of the topic.
type replicaKey struct{ broker, partition int32 }

// answers reports whether e answers a produce to broker's replica of
// partition p (an acknowledgement or an error after the append).
func (t *topicRun) answers(e events.Event, broker, p int32) bool {
	return (e.Kind == events.KindAck || e.Kind == events.KindProduceError) && e.Broker == broker &&
		e.Topic == t.name && e.Partition == p && e.Offsets != nil
}

// collectProposals takes the answers of the proposals pds waiting at one
// replica: as many as it no longer waits for, and exactly those, since the
// others' requests are still waiting and send nothing.
func (t *topicRun) collectProposals(k replicaKey, pds []*pending) error {
	r := t.r
	b := r.c.Broker(k.broker)
	if b == nil {
		return nil // stopped: gen changed, decided at the next collect
	}
	rep := b.Replica(t.name, k.partition)
	if rep == nil {
		return nil
	}
	n := len(pds) - rep.Status().WaitingProduces
	deadline := time.Now().Add(handOff)
	for got := 0; got < n; {
		for _, pd := range pds {
			if pd.pr.inflight[pd.b.w.Partition] != pd {
				continue // answered already
			}
			select {
			case res := <-pd.done:
				at := r.seq
				for _, e := range r.evs {
					if res.Err == nil && t.answers(e, k.broker, k.partition) && e.Kind == events.KindAck && e.Offsets.Base == res.BaseOffset {
						at = e.Seq
					}
				}
				t.answered(pd, res, at)
				got++
			default:
			}
		}
		if got < n {
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %d of %d answered proposals to broker %d arrived", ErrRun, got, n, k.broker)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	t.pending = slices.DeleteFunc(t.pending, func(pd *pending) bool { return pd.pr.inflight[pd.b.w.Partition] != pd })
	return nil
}

// sample reads every running replica's log and updates the copies: new
// values open one, values gone close it with the cause the run can see.
func (t *topicRun) sample() {
	r := t.r
	now := r.seq
	for _, id := range r.c.BrokerIDs() {
		b := r.c.Broker(id)
		if b == nil {
			continue
		}
		if t.held[id] == nil {
			t.held[id] = map[int32]map[string]int64{}
		}
		for p := range int32(Partitions) {
			rep := b.Replica(t.name, p)
			if rep == nil {
				continue
			}
			if t.sampleNew(id, p, rep.Log(), now) {
				continue
			}
			recs := readLog(rep.Log())
			t.noteSampled(id, p, rep.Log(), recs)
			have := make(map[string]int64, len(recs))
			for _, x := range recs {
				have[x.Value] = x.Offset
			}
			cut := t.restarted[id][p]
			delete(t.restarted[id], p)
			for v, off := range t.held[id][p] {
				if noff, ok := have[v]; ok && noff == off {
					continue
				}
				t.closeCopy(v, id, p, off, cut, now)
			}
			for _, x := range recs {
				k := copyKey{x.Value, id}
				if _, ok := t.open[k]; !ok {
					t.open[k] = len(t.copies)
					t.copies = append(t.copies, Copy{Value: x.Value, Partition: p, Broker: id, Offset: x.Offset, From: now,
						FromAction: r.action, Action: -1})
				}
			}
			t.held[id][p] = have
		}
	}
}

// sampled is what sample last read of a replica's log: the log, its LEO
// then and the value just below it.
type sampled struct {
	log  *storage.Log
	leo  int64
	last string
}

// noteSampled remembers a whole read of a replica's log (a Spec run's).
func (t *topicRun) noteSampled(id, p int32, l *storage.Log, recs []Rec) {
	if !t.r.spec.incremental() {
		return
	}
	s := sampled{log: l}
	if n := len(recs); n > 0 {
		s.leo, s.last = recs[n-1].Offset+1, recs[n-1].Value
	}
	if t.sampledAt == nil {
		t.sampledAt = map[replicaKey]sampled{}
	}
	t.sampledAt[replicaKey{id, p}] = s
}

// sampleNew reads only what a replica appended since the last sample, when
// nothing below can have changed: the same log, not stopped since, no
// truncation among the action's events, not shorter, and the value below
// the old LEO the same one (values are unique, so the logs below it match,
// as a leader epoch's truncation keeps them). A Spec run's experiments
// sample thousands of actions, and reading every log whole after each one
// made a run of 1,600 actions take over a minute; a Config run keeps the
// whole read, so its seeds play as they always have. False: read it all.
func (t *topicRun) sampleNew(id, p int32, l *storage.Log, now uint64) bool {
	r := t.r
	if !r.spec.incremental() {
		return false
	}
	s, ok := t.sampledAt[replicaKey{id, p}]
	if !ok || s.log != l || t.restarted[id][p] != nil || t.held[id][p] == nil {
		return false
	}
	for _, e := range r.evs {
		if e.Kind == events.KindTruncation && e.Broker == id && e.Topic == t.name && e.Partition == p {
			return false
		}
	}
	leo := l.LogEndOffset()
	if leo < s.leo {
		return false
	}
	if s.leo > 0 {
		bs, err := l.ReadBatches(s.leo-1, s.leo, 1)
		if err != nil || len(bs) == 0 || len(bs[0].Records) == 0 {
			return false
		}
		last := bs[0].Records[len(bs[0].Records)-1]
		if last.Offset != s.leo-1 || string(last.Value) != s.last {
			return false
		}
	}
	if leo == s.leo {
		return true
	}
	bs, err := l.ReadBatches(s.leo, leo, 1<<20)
	if err != nil {
		return false
	}
	have := t.held[id][p]
	for _, b := range bs {
		for _, x := range b.Records {
			v := string(x.Value)
			have[v] = x.Offset
			k := copyKey{v, id}
			if _, ok := t.open[k]; !ok {
				t.open[k] = len(t.copies)
				t.copies = append(t.copies, Copy{Value: v, Partition: p, Broker: id, Offset: x.Offset, From: now, FromAction: r.action, Action: -1})
			}
			s.leo, s.last = x.Offset+1, v
		}
	}
	t.sampledAt[replicaKey{id, p}] = s
	return true
}

// closeCopy records why broker id no longer holds value: lost to a power
// cut if it was above the recovery point then, removed by a truncation
// event that names it, or otherwise gone in recovery.
func (t *topicRun) closeCopy(value string, id, p int32, off int64, cut *powerCut, now uint64) {
	k := copyKey{value, id}
	i, ok := t.open[k]
	if !ok {
		return
	}
	delete(t.open, k)
	c := &t.copies[i]
	c.To, c.Action = now, t.r.action
	if cut != nil && cut.recoveryPoint >= 0 && off >= cut.recoveryPoint {
		c.To, c.Removal = cut.seq, RemovedByPowerLoss
		return
	}
	digest := events.Digest(nil, []byte(value))
	for _, e := range t.r.evs {
		if e.Kind != events.KindTruncation || e.Broker != id || e.Topic != t.name || e.Partition != p {
			continue
		}
		for _, tr := range e.Truncated {
			if tr.Digest == digest && tr.Offset == off {
				c.To, c.Removal, c.Detail = e.Seq, RemovedByTruncation, e.Message
				return
			}
		}
	}
	c.Removal = RemovedByRecovery
	if cut == nil {
		c.Removal = RemovedByTruncation // gone from a running replica: a truncation the events did not list
	}
}

// sampleLeaders records who leads each partition with which ISR (the
// controller's view and the leader's own) and the HW a consumer sees. A
// quorum partition's leader is the Raft leader the controller publishes in
// Metadata.
func (t *topicRun) sampleLeaders() {
	r := t.r
	md, ok := r.c.Controller().Topic(t.name)
	if !ok {
		return
	}
	for _, p := range md.Partitions {
		t.leaders = append(t.leaders, LeaderSample{Action: r.action, Partition: p.Partition, Source: "controller",
			Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: slices.Clone(p.ISR)})
		b := r.c.Broker(p.Leader)
		if b == nil {
			continue
		}
		rep := b.Replica(t.name, p.Partition)
		if rep == nil {
			continue
		}
		st := rep.Status()
		if st.Role != replication.RoleLeader || st.LeaderEpoch != p.LeaderEpoch {
			continue // not leading yet: nothing a consumer can ask
		}
		t.leaders = append(t.leaders, LeaderSample{Action: r.action, Partition: p.Partition, Source: fmt.Sprintf("broker %d", p.Leader),
			Leader: p.Leader, LeaderEpoch: st.LeaderEpoch, ISR: slices.Clone(st.ISR)})
		if hw, ok := r.visibleHW(b, t.name, p.Partition); ok {
			t.hws = append(t.hws, HWSample{Action: r.action, Seq: r.c.Bus().LastSeq(), Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, HW: hw})
		}
	}
}

// --- the end ---

// settle heals every link, restarts every stopped broker, and then steps
// time a little and lets every broker fetch until nothing changes, every
// quorum partition has a Raft leader and every ISR holds all its replicas
// (bounded: what is left then is the checker's Unsettled).
func (r *runner) settle() error {
	end := len(r.actions)
	r.action = end
	r.c.Heal()
	for _, id := range r.c.BrokerIDs() {
		if r.c.Broker(id) == nil {
			if err := r.c.Restart(id); err != nil {
				return fmt.Errorf("%w: restarting broker %d to settle: %v", ErrRun, id, err)
			}
		}
	}
	if err := r.observe(Action{Kind: ActHeal}); err != nil {
		return err
	}
	last, same := "", 0
	for round := 1; round <= settleRounds+settleLongRounds; round++ {
		r.action = end + round
		if err := r.c.Step(settleStep(round)); err != nil {
			return fmt.Errorf("%w: %v", ErrRun, err)
		}
		for _, id := range r.c.BrokerIDs() {
			r.c.StepFetch(r.ctx, id) // an error (nothing to fetch yet) is part of settling
		}
		if err := r.observe(Action{Kind: ActFetch}); err != nil {
			return err
		}
		r.settleDone = round
		r.report(PhaseSettle, end)
		if s := r.state(); s == last {
			// Raft elects only after its election timeout: a quorum
			// partition without a leader is not settled, however still.
			// Settled: nothing changes, and nothing is left on a delayed
			// link's way that could change it.
			if same++; same >= 2 && r.leadersKnown(r.electing()) && r.isrsFull() && r.c.MessagesInFlight() == 0 {
				return nil
			}
		} else {
			last, same = s, 0
		}
	}
	return nil // still moving: the checker says what that left behind
}

// isrsFull reports whether every partition's ISR, as the controller
// publishes it, holds all its replicas: until then settling goes on (a
// partition the rules keep offline, or a wedged one, runs out the bound).
func (r *runner) isrsFull() bool {
	for _, t := range r.playing() {
		md, ok := r.c.Controller().Topic(t.name)
		if !ok {
			return false
		}
		for _, p := range md.Partitions {
			if len(p.ISR) < len(p.Replicas) {
				return false
			}
		}
	}
	return true
}

// state sums up leaders, ISRs and every replica's role, epoch, LEO and HW.
func (r *runner) state() string {
	var s strings.Builder
	for _, t := range r.playing() {
		if md, ok := r.c.Controller().Topic(t.name); ok {
			for _, p := range md.Partitions {
				fmt.Fprintf(&s, "%s/p%d:%d/%d/%v ", t.name, p.Partition, p.Leader, p.LeaderEpoch, p.ISR)
			}
		}
		for _, id := range r.c.BrokerIDs() {
			b := r.c.Broker(id)
			if b == nil {
				continue
			}
			for p := range int32(Partitions) {
				if rep := b.Replica(t.name, p); rep != nil {
					st := rep.Status()
					fmt.Fprintf(&s, "%s/b%d/%d:%s/%d/%d/%d ", t.name, id, p, st.Role, st.LeaderEpoch, st.LogEndOffset, st.HighWatermark)
				}
			}
		}
	}
	return s.String()
}

// readBack reads what a consumer reads from each partition's leader and
// every replica's whole log into t.final.
func (t *topicRun) readBack() error {
	r := t.r
	f := Final{Consumed: map[int32][]Rec{}, Replicas: map[int32][]ReplicaLog{}}
	md, _ := r.c.Controller().Topic(t.name)
	hws := map[int32]int64{}
	var seeds []string
	for _, id := range r.c.BrokerIDs() {
		b := r.c.Broker(id)
		if b == nil {
			continue
		}
		seeds = append(seeds, b.Addr())
		for p := range int32(Partitions) {
			rep := b.Replica(t.name, p)
			if rep == nil {
				continue
			}
			st := rep.Status()
			f.Replicas[p] = append(f.Replicas[p], ReplicaLog{Broker: id, Leader: st.Role == replication.RoleLeader && id == md.Partitions[p].Leader,
				HW: st.HighWatermark, Records: readLog(rep.Log())})
		}
	}
	for _, p := range md.Partitions {
		f.Partitions = append(f.Partitions, PartitionState{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			ISR: slices.Clone(p.ISR), Joining: slices.Clone(p.Joining), Replicas: slices.Clone(p.Replicas)})
		b := r.c.Broker(p.Leader)
		hw, ok := int64(0), false
		if b != nil {
			hw, ok = r.visibleHW(b, t.name, p.Partition)
		}
		if !ok {
			f.Offline = append(f.Offline, p.Partition)
			continue
		}
		hws[p.Partition] = hw
	}
	consumed, err := consume(r.ctx, seeds, t.name, hws)
	if err != nil {
		return fmt.Errorf("%w: reading %s back as a consumer: %v", ErrRun, t.name, err)
	}
	for p := range hws {
		f.Consumed[p] = consumed[p]
	}
	t.final = f
	return nil
}

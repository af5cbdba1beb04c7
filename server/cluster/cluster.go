// Package cluster assembles a lab cluster: the controller (metadata in
// badger), N brokers each with its own log dir and Kafka listener on
// loopback, the simulated network between them, the pausable lab clock, and
// the event bus with the snapshot it keeps current. It is what the web
// server and the lessons drive: produce and consume, crash, power-cut and
// restart brokers, cut links, pause and step time, change topic configs.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/events/history"
	"tidemark/i18n"
	"tidemark/replication"
	"tidemark/server/broker"
	"tidemark/server/controller"
	"tidemark/server/coordinator"
	"tidemark/storage"
	"tidemark/storage/vfs"
	"tidemark/storage/vfs/errorfs"
)

// Options configures a cluster.
type Options struct {
	// DataDir holds <data>/meta (the controller's badger) and
	// <data>/broker-<id> (each broker's log dir).
	DataDir string
	// Brokers is how many brokers run, 1–7; ids are 1..Brokers. Default 3.
	Brokers int
	// KafkaPort is broker 1's listener port on 127.0.0.1; broker i listens
	// on KafkaPort+i-1. 0 picks free ports.
	KafkaPort int
	// Paused starts the lab clock paused.
	Paused bool
	// SessionTimeout is broker.session.timeout.ms (lab default 2s).
	SessionTimeout time.Duration
	// FencingRule, when set, is the controller's fencing rule (else the one
	// stored in DataDir, else kraft-elr).
	FencingRule *controller.FencingRule
	// Bus receives every event; default a new one.
	Bus *events.Bus
	// MessageEvents publishes the message kinds (requests and responses in
	// flight, for the stage), rate-bounded by messageGate. Off by default:
	// the chaos checker and the lessons read the bus and need none.
	MessageEvents bool
	Logger        *slog.Logger
	// HistoryBytes, when positive, keeps the lab's events on disk in
	// <DataDir>/history for the cluster's life, up to this many bytes
	// (oldest dropped first; package events/history), from the first one
	// on, so a page loaded late pages back to it. Each Open starts a fresh
	// history: the Bus numbers events from 1 again. 0: no history (the
	// lessons' and chaos runs' clusters).
	HistoryBytes int64
	// Broker tunes every broker (intervals); ID, LogDir, ListenAddr and the
	// links are filled in by the cluster.
	Broker broker.Config
}

// MaxBrokers is the largest cluster the lab runs.
const MaxBrokers = 7

// Cluster is a running lab cluster. Its methods are safe for concurrent use.
//
// Lock order (a lock is only taken while holding those before it):
//
//	stepMu → snapMu → mu → Bus.mu → Subscription.mu (package events)
//
// stepMu is held across a StepToEvent, whose steps run the brokers, which
// publish (snapMu). The publisher (the lab's reporter: publisher.Publish)
// takes snapMu to enrich events (enrich reads mu), apply them to snap and
// hand them to the Bus. The controller and the brokers publish after
// releasing their own locks (their outboxes), so none of theirs is held
// under these, nor these under theirs; mu guards only the cluster's maps
// (brokers start and stop outside it). The small
// locks of the clock, the network, the message gate, the delay line and
// the link counts guard their own fields and call out under none of the
// above.
type Cluster struct {
	opts       Options
	logger     *slog.Logger
	clock      *Clock
	network    *Network
	bus        *events.Bus
	controller *controller.Controller
	groups     *coordinator.Coordinator // consumer groups and producer ids: admin_link.go
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	mu      sync.Mutex // guards brokers, starting, disks and closed
	brokers map[int32]*broker.Broker
	// starting has the brokers being started: they register with the
	// controller before they join brokers.
	starting map[int32]bool
	ports    map[int32]string
	// stopped has, for each running broker, a channel closed when it is
	// taken out of the running set (AwaitStopped).
	stopped map[int32]chan struct{}
	// disks is each broker's file system, which FailDisk makes fail.
	disks map[int32]*errorfs.FS
	// copyRegions are the brokers SetCopyFileRegions switched to copying
	// fetched data through user space; the rest use Options.Broker's.
	copyRegions map[int32]bool
	closed      bool

	snapMu sync.Mutex // guards snap; held while publishing so Seq matches contents (lock order above)
	snap   events.Snapshot

	messages messageGate
	// linkDelays holds Raft and pipeline messages crossing a delayed link
	// (delay_line.go).
	linkDelays delayLine
	stepMu     sync.Mutex     // one StepToEvent at a time: they share messages' hold
	links      linkCounts     // replication messages on the links: link_counts.go
	history    *history.Store // nil without Options.HistoryBytes
}

// Open starts a cluster on DataDir, recovering whatever is there.
func Open(opts Options) (*Cluster, error) {
	if opts.Brokers == 0 {
		opts.Brokers = 3
	}
	if opts.Brokers < 1 || opts.Brokers > MaxBrokers {
		return nil, fmt.Errorf("cluster: %d brokers; the lab runs 1 to %d", opts.Brokers, MaxBrokers)
	}
	if opts.DataDir == "" {
		return nil, errors.New("cluster: DataDir is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Bus == nil {
		opts.Bus = events.NewBus(events.BusOptions{})
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, logger: opts.Logger, clock: NewClock(), network: NewNetwork(), bus: opts.Bus,
		brokers: map[int32]*broker.Broker{}, ports: map[int32]string{}, disks: map[int32]*errorfs.FS{}, stopped: map[int32]chan struct{}{},
		starting: map[int32]bool{}}
	c.messages = messageGate{on: opts.MessageEvents, clock: c.clock}
	c.linkDelays.clock = c.clock
	if opts.Paused {
		c.clock.Pause()
	}
	c.snap = events.Snapshot{Controller: ControllerNode, Paused: opts.Paused, Rate: RateOne}
	if err := c.openHistory(); err != nil {
		return nil, err
	}
	ctl, err := controller.Open(filepath.Join(opts.DataDir, "meta"), controller.Options{
		Now: c.clock.Now, SessionTimeout: opts.SessionTimeout, Events: publisher{c}, Logger: opts.Logger,
		FencingRule: opts.FencingRule,
	})
	if err != nil {
		c.closeHistory()
		return nil, err
	}
	c.controller = ctl
	if c.groups, err = openCoordinator(opts); err != nil {
		ctl.Close()
		c.closeHistory()
		return nil, err
	}
	for id := int32(1); id <= int32(opts.Brokers); id++ {
		addr := freeListenAddr() // ports.go
		if opts.KafkaPort > 0 {
			addr = fmt.Sprintf("127.0.0.1:%d", opts.KafkaPort+int(id)-1)
		}
		b, err := c.startBroker(id, addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.ports[id] = b.Addr() // a restart reuses the port it got
	}
	// Let every broker register, join and learn the metadata before anyone
	// looks, then take the first snapshot from the real state.
	for _, b := range c.liveBrokers() {
		b.Heartbeat()
	}
	c.controller.Tick()
	for _, b := range c.liveBrokers() {
		b.Heartbeat()
	}
	c.resync()
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go c.controllerLoop(ctx)
	return c, nil
}

// openHistory starts the history (Options.HistoryBytes) before the
// controller and the brokers, so it keeps the lab's first event; resync
// then gives it the state the first snapshot reads from the brokers
// (Store.Rebase), which the events of their start alone do not make.
func (c *Cluster) openHistory() error {
	if c.opts.HistoryBytes <= 0 {
		return nil
	}
	h, err := history.Open(history.Options{Dir: filepath.Join(c.opts.DataDir, "history"), MaxBytes: c.opts.HistoryBytes, Logger: c.logger})
	if err != nil {
		return fmt.Errorf("cluster: opening the history: %w", err)
	}
	// Nothing publishes yet: the history starts from the empty lab at the
	// bus's Seq (0 unless Options.Bus brought one already used).
	sub := c.bus.SubscribeQueue(h.QueueLen())
	base := c.Snapshot()
	base.Seq = c.bus.LastSeq()
	if err := h.Follow(c.bus, sub, base, c.Snapshot); err != nil {
		sub.Close()
		return fmt.Errorf("cluster: starting the history: %w", err)
	}
	c.history = h
	return nil
}

// closeHistory stops the history of a cluster that failed to open.
func (c *Cluster) closeHistory() {
	if c.history != nil {
		c.history.Close()
	}
}

// History returns the lab's history on disk; nil without
// Options.HistoryBytes.
func (c *Cluster) History() *history.Store { return c.history }

// controllerLoop ticks the controller while the clock runs: when the first
// session can expire (NextSessionExpiry), and at least every half session
// of lab time for sessions that began meanwhile, on that half session's
// grid. A rate change starts the wait again.
func (c *Cluster) controllerLoop(ctx context.Context) {
	defer c.wg.Done()
	idle := max(c.opts.SessionTimeout, 0)
	if idle == 0 {
		idle = controller.DefaultSessionTimeout
	}
	idle /= 2
	changed := c.clock.RateChanged()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
		wait := controllerWait(c.clock.Now(), idle, time.Time{})
		if !c.clock.Paused() {
			c.controller.Tick()
			at, _ := c.controller.NextSessionExpiry()
			wait = controllerWait(c.clock.Now(), idle, at)
		}
		changed = c.clock.RateChanged()
		t.Reset(max(c.clock.Real(wait), time.Millisecond))
	}
}

// controllerWait is how long controllerLoop waits from now: until the next
// multiple of idle (whole lab seconds by default), where the brokers'
// heartbeats and ticks fall too (broker.Broker's timers wait for the same
// grid), so the controller wakes with them and not at a phase of its own;
// or until expiry, the first session's (zero: none), if that is sooner. A
// point less than a millisecond away counts as passed (the clock's rate
// can fire a timer nanoseconds early), as for the brokers' timers.
func controllerWait(now time.Time, idle time.Duration, expiry time.Time) time.Duration {
	wait := now.Add(time.Millisecond).Truncate(idle).Add(idle).Sub(now)
	if !expiry.IsZero() {
		wait = min(wait, expiry.Sub(now))
	}
	return wait
}

func (c *Cluster) startBroker(id int32, addr string) (*broker.Broker, error) {
	cfg := c.opts.Broker
	cfg.ID = id
	cfg.LogDir = broker.LogDirPath(c.opts.DataDir, id)
	cfg.ListenAddr = addr
	calls := &linkCalls{}
	cfg.Controller = controllerLink{c: c, id: id, calls: calls}
	cfg.Network = fetchLink{c: c, net: c.network, counts: &c.links, id: id}
	cfg.Raft = raftLink{c}
	cfg.Pipeline = pipelineLink{c}
	cfg.Clock = c.clock
	cfg.Events = publisher{c}
	cfg.Logger = c.logger
	c.mu.Lock()
	if copy, ok := c.copyRegions[id]; ok {
		cfg.CopyFileRegions = copy
	}
	disk := c.disks[id]
	if disk == nil {
		disk = errorfs.Wrap(vfs.Default)
		c.disks[id] = disk
	}
	c.starting[id] = true
	c.mu.Unlock()
	disk.Inject(nil) // a restarted broker has a working disk again
	cfg.FS = disk
	cfg.OnHalt = c.halted
	b, err := broker.Start(cfg)
	c.mu.Lock()
	delete(c.starting, id)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	calls.started(b)
	c.mu.Lock()
	c.brokers[id] = b
	c.stopped[id] = make(chan struct{})
	c.mu.Unlock()
	return b, nil
}

// Close shuts every broker down cleanly and closes the controller.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.linkDelays.stop()
	bs := make([]*broker.Broker, 0, len(c.brokers))
	for _, b := range c.brokers {
		bs = append(bs, b)
	}
	c.brokers = map[int32]*broker.Broker{}
	for id, ch := range c.stopped {
		close(ch)
		delete(c.stopped, id)
	}
	c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	var errs []error
	for _, b := range bs {
		errs = append(errs, b.Close())
	}
	if c.groups != nil {
		errs = append(errs, c.groups.Close())
	}
	if c.controller != nil {
		errs = append(errs, c.controller.Close())
	}
	if c.history != nil {
		// Last: it writes the events of the shutdown too.
		errs = append(errs, c.history.Close())
	}
	return errors.Join(errs...)
}

// Bus returns the event bus.
func (c *Cluster) Bus() *events.Bus { return c.bus }

// Clock returns the lab clock.
func (c *Cluster) Clock() *Clock { return c.clock }

// Network returns the simulated network.
func (c *Cluster) Network() *Network { return c.network }

// Controller returns the controller.
func (c *Cluster) Controller() *controller.Controller { return c.controller }

// BrokerIDs returns every broker id, running or not.
func (c *Cluster) BrokerIDs() []int32 {
	ids := make([]int32, 0, c.opts.Brokers)
	for id := int32(1); id <= int32(c.opts.Brokers); id++ {
		ids = append(ids, id)
	}
	return ids
}

// Broker returns a running broker; nil if id is crashed or unknown.
func (c *Cluster) Broker(id int32) *broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id]
}

func (c *Cluster) runningOrStarting(id int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.brokers[id] != nil || c.starting[id]
}

func (c *Cluster) liveBrokers() []*broker.Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*broker.Broker, 0, len(c.brokers))
	for _, b := range c.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// Snapshot returns the current visible state; its Seq matches the last
// event applied to it.
func (c *Cluster) Snapshot() events.Snapshot {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	s := c.snap.Clone()
	s.Time = c.clock.Now()
	return s
}

// TopicPartitions returns how many partitions topic name has in the
// visible state, without copying the Snapshot; false when there is no
// such topic.
func (c *Cluster) TopicPartitions(name string) (int, bool) {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	t := c.snap.Topic(name)
	if t == nil {
		return 0, false
	}
	return len(t.Partitions), true
}

// publisher publishes events on the bus and applies them to the snapshot
// under one lock, so a snapshot always matches the last Seq it names.
type publisher struct{ c *Cluster }

// WantsMessages tells the brokers whether the lab keeps message events at
// all (broker.MessageFilter), so a lab without them builds none.
func (p publisher) WantsMessages() bool { return p.c.messages.on }

// MessagesDue tells a broker how many of n message events of one kind on
// one link the gate would let through now (broker.MessageSampler).
func (p publisher) MessagesDue(kind events.Kind, from, to int32, n int) int {
	return p.c.messages.due(kind, from, to, n)
}

func (p publisher) Publish(evs ...events.Event) events.Event {
	c := p.c
	if evs = c.messages.keep(evs); len(evs) == 0 {
		return events.Event{}
	}
	// Records are cut to what a person reads before anyone sees them
	// (digests of large values are taken outside the lock), and the facts'
	// messages rendered: the brokers and the controller say keys, not text.
	for i := range evs {
		evs[i].Records = events.ShownRecords(evs[i].Records)
		i18n.Fill(&evs[i])
	}
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = c.clock.Now()
		}
		c.enrich(&evs[i])
	}
	last := c.bus.Publish(evs...)
	first := last.Seq - uint64(len(evs)) + 1
	for i := range evs {
		evs[i].Seq = first + uint64(i)
		c.snap.Apply(evs[i])
	}
	return last
}

// enrich fills what an event's source cannot know: a created topic's
// replica lanes, and that a broker the controller fences is in fact crashed
// (the controller only sees missing heartbeats), unless it is starting
// (it registers fenced before it runs). Callers hold snapMu.
func (c *Cluster) enrich(e *events.Event) {
	if e.Kind == events.KindBroker && e.BrokerState == events.BrokerFenced && e.Broker != events.NoBroker && !c.runningOrStarting(e.Broker) {
		e.BrokerState = events.BrokerCrashed
		*e = i18n.EventMessage(*e, "event.broker.not-running", i18n.Nested(*e))
	}
	if e.Kind == events.KindTopic && e.TopicCreated != nil {
		for i := range e.TopicCreated.Partitions {
			p := &e.TopicCreated.Partitions[i]
			if len(p.ReplicaLogs) == 0 {
				for _, id := range p.Replicas {
					p.ReplicaLogs = append(p.ReplicaLogs, events.Replica{Broker: id})
				}
			}
		}
	}
}

// resync rebuilds the snapshot from the real state: controller metadata and
// every running replica's log. It is used once the cluster has started.
func (c *Cluster) resync() {
	md := c.controller.Metadata()
	s := events.Snapshot{Controller: ControllerNode}
	live := map[int32]*broker.Broker{}
	for _, b := range c.liveBrokers() {
		live[b.ID()] = b
	}
	for _, id := range c.BrokerIDs() {
		eb := events.Broker{ID: id, State: events.BrokerCrashed}
		if b := live[id]; b != nil {
			eb.State, eb.Listener = events.BrokerUp, b.Addr()
			if r := md.Broker(id); r != nil && r.Fenced {
				eb.State = events.BrokerFenced
			}
		}
		s.Brokers = append(s.Brokers, eb)
	}
	for _, t := range md.Topics {
		et := events.Topic{Name: t.Name, Configs: maps.Clone(t.Configs)} // the snapshot edits its own; md's is shared
		for _, p := range t.Partitions {
			ep := events.Partition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: append([]int32(nil), p.Replicas...), ISR: append([]int32(nil), p.ISR...)}
			for _, id := range p.Replicas {
				er := events.Replica{Broker: id}
				if b := live[id]; b != nil {
					if r := b.Replica(t.Name, p.Partition); r != nil {
						er = replicaView(id, r)
					}
				}
				ep.ReplicaLogs = append(ep.ReplicaLogs, er)
			}
			et.Partitions = append(et.Partitions, ep)
		}
		s.Topics = append(s.Topics, et)
	}
	for _, l := range c.network.Cuts() {
		s.Cuts = append(s.Cuts, events.Fault{Kind: events.FaultCut, From: l.From, To: l.To, OneWay: true})
	}
	s.Paused, s.Rate = c.clock.Paused(), c.clock.Rate()
	s.Configs = map[string]string{controller.ConfigFencingRule: c.controller.FencingRule().String()}
	c.snapMu.Lock()
	s.Seq = c.bus.LastSeq()
	c.snap = s
	if c.history != nil {
		// Under snapMu: no event after s.Seq is published before it.
		c.history.Rebase(s)
	}
	c.snapMu.Unlock()
}

// replicaView reads one replica's state for the snapshot.
func replicaView(id int32, r *broker.Replica) events.Replica {
	st := r.Status()
	er := events.Replica{Broker: id, LEO: st.LogEndOffset, HW: st.HighWatermark, LogStartOffset: st.LogStartOffset}
	for _, e := range st.EpochCache {
		er.EpochCache = append(er.EpochCache, events.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	er.Records = readWindow(r.Log(), st.LogEndOffset)
	return er
}

// readWindow decodes the newest records below end (at most RecordWindow).
func readWindow(l *storage.Log, end int64) []events.Record {
	from := max(l.LogStartOffset(), end-events.RecordWindow)
	var out []events.Record
	// A batch at a time: only each record's first bytes are kept.
	err := l.EachBatch(from, end, events.RecordWindow, func(b storage.Batch) bool {
		n := len(out)
		for _, r := range b.Records {
			if r.Offset >= from {
				out = append(out, events.RecordOf(r.Offset, b.Header.PartitionLeaderEpoch, r.Key, r.Value))
			}
		}
		broker.MarkTxn(b.Header, out[n:])
		return true
	})
	if err != nil {
		return nil
	}
	events.MarkAborted(out)
	return out
}

// controllerLink is a broker's link to the controller: a call fails if the
// request cannot cross the network, and its answer is lost (after the
// controller acted) if the way back is cut. Heartbeats and AlterPartition
// also wait for the link's delays (callOver).
type controllerLink struct {
	c     *Cluster
	id    int32
	calls *linkCalls
}

// linkCalls is what one incarnation of a broker has on its way to the
// controller over a delayed link.
type linkCalls struct {
	mu sync.Mutex
	b  *broker.Broker // the incarnation, once started
	// heartbeat: one is on its way; the broker sends the next once it is
	// answered or lost, as Kafka's broker lifecycle manager does.
	heartbeat bool
}

func (lc *linkCalls) started(b *broker.Broker) {
	lc.mu.Lock()
	lc.b = b
	lc.mu.Unlock()
}

// running reports whether the incarnation that made the calls still runs
// (not crashed, not restarted since).
func (l controllerLink) running() bool {
	l.calls.mu.Lock()
	b := l.calls.b
	l.calls.mu.Unlock()
	return b == nil || l.c.Broker(l.id) == b
}

// delayed reports whether the link to the controller is delayed either way.
func (l controllerLink) delayed() bool {
	return l.c.network.Delay(l.id, ControllerNode) > 0 || l.c.network.Delay(ControllerNode, l.id) > 0
}

// errHeartbeatInFlight answers a heartbeat not sent because the last one
// is still on its way.
var errHeartbeatInFlight = fmt.Errorf("%w: the last heartbeat is still on its way", kerr.RequestTimedOut)

// callOver makes one call of a broker to the controller over the link,
// as roundTrip, but waiting for the link's delays in lab time (the delay
// line): the controller acts when the request arrives, and answer gets
// its answer once back. A leg whose link was cut when it left or while
// on its way is lost, and so is the call of a broker that stopped
// meanwhile (errControllerUnreachable). Without a delay it is roundTrip,
// answered before callOver returns.
func callOver[T any](l controllerLink, call func() (T, error), answer func(T, error)) {
	if !l.delayed() {
		answer(roundTrip(l, call))
		return
	}
	var none T
	l.c.carry(l.id, ControllerNode, func(ok bool) {
		if !ok || !l.running() {
			answer(none, errControllerUnreachable)
			return
		}
		v, err := call()
		l.c.carry(ControllerNode, l.id, func(ok bool) {
			if !ok || !l.running() {
				v, err = none, errControllerUnreachable
			}
			answer(v, err)
		})
	})
}

// errControllerUnreachable is what a broker sees when its link to the
// controller is cut: the request timed out.
var errControllerUnreachable = fmt.Errorf("%w: controller unreachable (link cut)", kerr.RequestTimedOut)

func (l controllerLink) there() bool { return l.c.network.Allowed(l.id, ControllerNode) }
func (l controllerLink) back() bool  { return l.c.network.Allowed(ControllerNode, l.id) }

// roundTrip makes one call of a broker to the controller over the link: it
// fails if the request cannot cross, and its answer is lost (after the
// controller acted) if the way back is cut.
func roundTrip[T any](l controllerLink, call func() (T, error)) (T, error) {
	var none T
	if !l.there() {
		return none, errControllerUnreachable
	}
	v, err := call()
	if !l.back() {
		return none, errControllerUnreachable
	}
	return v, err
}

// errOnly adapts a call that returns only an error to roundTrip.
func errOnly(call func() error) func() (struct{}, error) {
	return func() (struct{}, error) { return struct{}{}, call() }
}

func (l controllerLink) Register(reg controller.Registration) (int64, error) {
	return roundTrip(l, func() (int64, error) { return l.c.controller.Register(reg) })
}

func (l controllerLink) ReportLogs(id int32, epoch int64, logs []controller.LogInfo) error {
	_, err := roundTrip(l, errOnly(func() error { return l.c.controller.ReportLogs(id, epoch, logs) }))
	return err
}

// message publishes a message event on the link between the broker and
// the controller: up (broker→controller) or down.
func (l controllerLink) message(kind events.Kind, up, lost bool, fill func(*events.Event)) {
	w := events.Wire{From: l.id, To: ControllerNode, Lost: lost}
	if !up {
		w.From, w.To = ControllerNode, l.id
	}
	l.c.publishMessage(kind, l.id, w, fill)
}

func (l controllerLink) Heartbeat(id int32, epoch int64, answer func(uint64, error)) {
	if l.delayed() {
		l.calls.mu.Lock()
		busy := l.calls.heartbeat
		l.calls.heartbeat = true
		l.calls.mu.Unlock()
		if busy {
			answer(0, errHeartbeatInFlight)
			return
		}
		sent := answer
		answer = func(v uint64, err error) {
			l.calls.mu.Lock()
			l.calls.heartbeat = false
			l.calls.mu.Unlock()
			sent(v, err)
		}
	}
	l.message(events.KindHeartbeat, true, !l.there(), nil)
	callOver(l, func() (uint64, error) { return l.c.controller.Heartbeat(id, epoch) }, answer)
}

func (l controllerLink) Metadata() (controller.Metadata, error) {
	if !l.there() || !l.back() {
		return controller.Metadata{}, errControllerUnreachable
	}
	md := l.c.controller.Metadata()
	l.message(events.KindMetadata, false, false, func(e *events.Event) { e.Wire.Version = md.Version })
	return md, nil
}

func (l controllerLink) QuorumLeader(topic string, partition, brokerID int32, brokerEpoch int64, term int32) error {
	_, err := roundTrip(l, errOnly(func() error { return l.c.controller.QuorumLeader(topic, partition, brokerID, brokerEpoch, term) }))
	return err
}

func (l controllerLink) PipelineFailed(topic string, partition, brokerID int32, brokerEpoch int64, stamp, failed int32) error {
	_, err := roundTrip(l, errOnly(func() error {
		return l.c.controller.PipelineFailed(topic, partition, brokerID, brokerEpoch, stamp, failed)
	}))
	return err
}

func (l controllerLink) PipelineCaughtUp(topic string, partition, brokerID int32, brokerEpoch int64, stamp int32) error {
	_, err := roundTrip(l, errOnly(func() error { return l.c.controller.PipelineCaughtUp(topic, partition, brokerID, brokerEpoch, stamp) }))
	return err
}

func (l controllerLink) AlterPartition(topic string, partition, brokerID int32, brokerEpoch int64, req replication.AlterPartitionRequest, answer func(replication.AlterPartitionResponse, error)) {
	l.message(events.KindAlterPartition, true, !l.there(), func(e *events.Event) {
		e.Topic, e.Partition, e.ISR = topic, partition, append([]int32(nil), req.NewISR...)
	})
	callOver(l, func() (replication.AlterPartitionResponse, error) {
		return l.c.controller.AlterPartition(topic, partition, brokerID, brokerEpoch, req), nil
	}, answer)
}

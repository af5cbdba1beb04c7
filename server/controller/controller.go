package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
)

// Options configures a Controller. The zero value gives the defaults.
type Options struct {
	// Now is the clock Tick and Heartbeat read: the lab clock, which can be
	// paused and stepped. Default time.Now.
	Now func() time.Time
	// SessionTimeout is broker.session.timeout.ms: a broker whose last
	// heartbeat is older than this is fenced at the next Tick. Default 2s (a
	// lab value; Kafka's default is 9s).
	SessionTimeout time.Duration
	// Events receives every change as events; nil publishes nothing.
	Events Publisher
	// Logger receives the controller's and badger's log lines; nil discards
	// them.
	Logger *slog.Logger
	// FencingRule, when set, is the rule to use from Open on (else the one
	// stored with the metadata, else kraft-elr).
	FencingRule *FencingRule
}

// DefaultSessionTimeout is the lab's broker.session.timeout.ms.
const DefaultSessionTimeout = 2 * time.Second

// Publisher takes events; *events.Bus satisfies it. The controller calls
// it after releasing its mutex, one change's events at a time in the order
// the changes were made (reportingMutex).
type Publisher interface {
	Publish(evs ...events.Event) events.Event
}

// Broker is a broker's registration as the controller sees it. Epoch is the
// broker epoch of its latest registration; Fenced is true from registration
// until its first heartbeat, and again after it misses its session timeout.
// LastHeartbeat is not persisted: after Open every broker gets a fresh session.
type Broker struct {
	ID            int32
	Listener      string
	Epoch         int64
	Fenced        bool
	LastHeartbeat time.Time
}

// Partition is the controller's record of one partition: the assignment (AR,
// Replicas, in preference order), the leader (replication.NoLeader, -1, while
// offline), the leader epoch (bumped at every leader change), the partition
// epoch (bumped at every leader or ISR change) and the ISR (never empty).
//
// Under the kraft-elr fencing rules the ISR may be empty while the partition
// is offline, and ELR lists the eligible leader replicas (KIP-966): replicas
// that left the ISR while it was below min.insync.replicas, and so hold
// every committed record; nil when none.
type Partition struct {
	Topic          string
	Partition      int32
	Replicas       []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
	ELR            []int32
	// LastKnownELR is KIP-966's last known ELR, while the partition has no
	// leader. Under kraft-elr (Kafka 4.1) it holds the last known leader:
	// the leader the partition had when its ISR emptied, elected again
	// once it is unfenced if the ELR is empty by then. Under the lab-only
	// kraft-elr-recovery it lists the replicas that left the ISR or ELR
	// without joining the other (back from an unclean shutdown). Nil when
	// none, and once it has a leader.
	LastKnownELR []int32
	// Joining, for a replication.protocol=pipeline partition, are the
	// members after the ISR at the pipeline's tail that are still being
	// copied: writes flow through them, but they cannot head it or keep
	// it when the ISR's members fail, until its head reports them caught
	// up (PipelineCaughtUp) and they join the ISR. Empty otherwise.
	Joining []int32
}

// State returns p as the replication rules take it (a LeaderAndIsr), sharing
// no slices with p.
func (p Partition) State() replication.PartitionState {
	return replication.PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR)}
}

// tp names p as messages do: topic-partition.
func (p *Partition) tp() string { return p.Topic + "-" + strconv.Itoa(int(p.Partition)) }

func (p Partition) clone() Partition {
	p.Replicas, p.ISR, p.ELR, p.Joining = slices.Clone(p.Replicas), slices.Clone(p.ISR), slices.Clone(p.ELR), slices.Clone(p.Joining)
	p.LastKnownELR = slices.Clone(p.LastKnownELR)
	return p
}

// Equal reports whether p and o are the same record (a nil list differs
// from an empty one, as their copies would).
func (p *Partition) Equal(o *Partition) bool {
	same := func(a, b []int32) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }
	return p.Topic == o.Topic && p.Partition == o.Partition && p.Leader == o.Leader && p.LeaderEpoch == o.LeaderEpoch &&
		p.PartitionEpoch == o.PartitionEpoch && same(p.Replicas, o.Replicas) && same(p.ISR, o.ISR) && same(p.ELR, o.ELR) &&
		same(p.Joining, o.Joining) && same(p.LastKnownELR, o.LastKnownELR)
}

// check reports a record that breaks the invariants (ISR and ELR within AR,
// the ISR non-empty while there is a leader, leader in ISR, epochs
// non-negative).
func (p *Partition) check() error {
	switch {
	case len(p.Replicas) == 0:
		return errors.New("no replicas")
	case len(p.ISR) == 0 && p.Leader != replication.NoLeader:
		return errors.New("empty ISR with a leader")
	case p.Leader != replication.NoLeader && !slices.Contains(p.ISR, p.Leader):
		return fmt.Errorf("leader %d not in ISR %v", p.Leader, p.ISR)
	case p.LeaderEpoch < 0 || p.PartitionEpoch < 0:
		return fmt.Errorf("negative epoch (leader epoch %d, partition epoch %d)", p.LeaderEpoch, p.PartitionEpoch)
	}
	for _, r := range p.ISR {
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("ISR member %d not in replicas %v", r, p.Replicas)
		}
	}
	for _, r := range p.ELR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR, r) {
			return fmt.Errorf("ELR member %d not in replicas %v or also in ISR %v", r, p.Replicas, p.ISR)
		}
	}
	for _, r := range p.LastKnownELR {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR, r) || slices.Contains(p.ELR, r) {
			return fmt.Errorf("last known ELR member %d not in replicas %v or also in ISR %v or ELR %v", r, p.Replicas, p.ISR, p.ELR)
		}
	}
	for _, r := range p.Joining {
		if !slices.Contains(p.Replicas, r) || slices.Contains(p.ISR, r) {
			return fmt.Errorf("joining member %d not in replicas %v or also in ISR %v", r, p.Replicas, p.ISR)
		}
	}
	return nil
}

// Topic is a topic with its random ID (Kafka's topic UUID), the configs it
// sets explicitly (nil when none) and its partitions, ordered by index.
type Topic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string
	Partitions []Partition
}

// Config returns the topic's parsed configuration (defaults for keys it does
// not set).
func (t Topic) Config() TopicConfig {
	tc, err := ParseTopicConfig(t.Configs)
	if err != nil {
		return DefaultTopicConfig() // unreachable: configs are validated before they are stored
	}
	return tc
}

// Metadata is a copy of the whole cluster metadata: brokers sorted by ID,
// topics by name. Version increments with every change; 0 before the first.
// TopicIDs and TopicNames map the topics' names to their ids and back (nil
// in a Metadata made by hand).
type Metadata struct {
	Version    uint64
	Brokers    []Broker
	Topics     []Topic
	TopicIDs   map[string][16]byte
	TopicNames map[[16]byte]string
}

// Topic returns the topic called name, or nil.
func (m *Metadata) Topic(name string) *Topic {
	for i := range m.Topics {
		if m.Topics[i].Name == name {
			return &m.Topics[i]
		}
	}
	return nil
}

// Broker returns the broker with id, or nil.
func (m *Metadata) Broker(id int32) *Broker {
	for i := range m.Brokers {
		if m.Brokers[i].ID == id {
			return &m.Brokers[i]
		}
	}
	return nil
}

// Controller keeps the cluster metadata and makes the cluster's decisions:
// broker liveness, partition assignment, leader elections and ISR changes.
// All methods are safe for concurrent use. It starts no goroutines: time
// moves only when Tick is called, as the injected clock says.
//
// One mutex guards all state. Events are not published under it: a
// change's events wait in its outbox and its Unlock publishes them
// (reportingMutex), so the Publisher's locks are never taken under it.
type Controller struct {
	mu      reportingMutex
	db      *badger.DB
	opts    Options
	log     *slog.Logger
	closed  bool
	broken  error // set when memory could not be brought back in line with disk
	version uint64
	brokers map[int32]*Broker
	// registered holds the brokers that registered since Open: only those
	// can come back "within their session". After a restart of the lab a
	// broker's first registration is a plain one, so leaderships stay put.
	registered map[int32]bool
	topics     map[string]*topicState
	names      []string // sorted keys of topics, nil until topicNames
	// sharedTopics is the Topics Metadata last handed out, made of
	// sharedFrom (each topic's shared snapshot); topicIDs and
	// topicNamesByID its id maps, nil once a topic came or went (with
	// names). Never modified once handed out.
	sharedTopics   []Topic
	sharedFrom     []*Topic
	topicIDs       map[string][16]byte
	topicNamesByID map[[16]byte]string
	rule           FencingRule
	// ruleRead is rule for FencingRule's callers, who must not wait on mu
	// (the web's requests did, behind AlterPartition floods): setRule
	// writes both under mu.
	ruleRead atomic.Int32
	// logs is what each broker last reported of its logs (ReportLogs),
	// for KIP-966's unclean recovery.
	logs map[int32]map[topicPartition]LogInfo
	// compacting is set while maybeCompact's goroutine (in compactions)
	// compacts the store; Close waits for it.
	compacting  atomic.Bool
	compactions sync.WaitGroup
	// pipelinesRepaired is, per broker, when its heartbeats last had its
	// replicas added back to pipelines (maybeRepairPipelines).
	pipelinesRepaired map[int32]time.Time
	// rejoinBackoff is, per pipeline partition and broker, how its re-adds
	// back off after failed ones (pipeline.go); made on first use.
	rejoinBackoff map[rejoinKey]rejoinBackoff
}

type topicState struct {
	name    string
	id      [16]byte
	configs map[string]string // explicitly set keys; nil when none
	cfg     TopicConfig
	parts   []*Partition
	// shared is the snapshot Metadata last handed out, reused while the
	// topic still matches it: every broker reads the whole metadata after
	// every change, and copying each unchanged topic for each of them made
	// a create/delete churn of n topics allocate in n². Never modified.
	shared *Topic
}

func (t *topicState) replicationFactor() int { return len(t.parts[0].Replicas) }

// sharedSnapshot is snapshot shared with every other caller until the
// topic changes: they must not modify it.
func (t *topicState) sharedSnapshot() *Topic {
	if t.shared == nil || !t.matches(t.shared) {
		s := t.snapshot()
		t.shared = &s
	}
	return t.shared
}

// matches reports whether s is a snapshot of t as it is now.
func (t *topicState) matches(s *Topic) bool {
	if s.ID != t.id || len(s.Partitions) != len(t.parts) || !maps.Equal(s.Configs, t.configs) {
		return false
	}
	for i, p := range t.parts {
		if !p.Equal(&s.Partitions[i]) {
			return false
		}
	}
	return true
}

func (t *topicState) snapshot() Topic {
	out := Topic{Name: t.name, ID: t.id, Configs: maps.Clone(t.configs), Partitions: make([]Partition, len(t.parts))}
	for i, p := range t.parts {
		out.Partitions[i] = p.clone()
	}
	return out
}

var errClosed = fmt.Errorf("%w: the controller is closed", kerr.NotController)

// Open opens (or creates) the metadata store in dir and loads it: topics,
// configs, assignments, leaders, epochs, ISRs and broker registrations all
// survive a restart. Every broker gets a fresh session starting now.
func Open(dir string, opts Options) (*Controller, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	db, err := openBadger(dir, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("controller: opening metadata store %s: %w", dir, err)
	}
	c := &Controller{mu: reportingMutex{pub: opts.Events}, db: db, opts: opts, log: opts.Logger, brokers: map[int32]*Broker{}, registered: map[int32]bool{}, pipelinesRepaired: map[int32]time.Time{},
		topics: map[string]*topicState{}, logs: map[int32]map[topicPartition]LogInfo{}}
	if err := c.load(); err != nil {
		db.Close()
		return nil, err
	}
	if opts.FencingRule != nil && *opts.FencingRule != c.rule {
		// Chosen at start: stored, but not a metadata change brokers see.
		if err := opts.FencingRule.validate(); err != nil {
			db.Close()
			return nil, err
		}
		c.setRule(*opts.FencingRule)
		if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyFencingRule), []byte(c.rule.String())) }); err != nil {
			db.Close()
			return nil, fmt.Errorf("controller: storing the fencing rule: %w", err)
		}
	}
	c.maybeCompact()
	return c, nil
}

// Close closes the metadata store. Later calls fail with NOT_CONTROLLER (or do
// nothing, for the methods that return no error); closing twice is harmless.
func (c *Controller) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true // nothing else touches the store from now on
	c.mu.Unlock()
	c.compactions.Wait()
	return c.db.Close()
}

// maybeCompact compacts the store on a goroutine of its own once level 0
// has grown (badgerOptions starts no compactor), one compaction at a time.
func (c *Controller) maybeCompact() {
	if c.compacting.Load() || !needsCompaction(c.db) || !c.compacting.CompareAndSwap(false, true) {
		return
	}
	c.compactions.Go(func() {
		defer c.compacting.Store(false)
		if err := compactStore(c.db); err != nil {
			c.log.Warn("compacting the metadata store", "err", err)
		}
	})
}

func (c *Controller) now() time.Time { return c.opts.Now() }

// usable reports why c cannot take changes, or nil.
func (c *Controller) usable() error {
	if c.closed {
		return errClosed
	}
	return c.broken
}

type topicPartition struct {
	topic     string
	partition int32
}

type deletedTopic struct {
	name       string
	partitions int32
}

// change collects what one method call changed, so it is written in one
// badger transaction and its events are published only once it is durable.
type change struct {
	settings bool // the fencing rule changed
	brokers  map[int32]bool
	topics   map[string]bool
	parts    map[topicPartition]bool
	deleted  []deletedTopic
	evs      []events.Event
}

func newChange() *change {
	return &change{brokers: map[int32]bool{}, topics: map[string]bool{}, parts: map[topicPartition]bool{}}
}

func (ch *change) empty() bool {
	return !ch.settings && len(ch.brokers) == 0 && len(ch.topics) == 0 && len(ch.parts) == 0 && len(ch.deleted) == 0
}

func (ch *change) partition(p *Partition) { ch.parts[topicPartition{p.Topic, p.Partition}] = true }

// commit makes ch durable (bumping the version) and then publishes its
// events. If the write fails, memory is reloaded from disk so that it never
// shows a change that is not stored.
func (c *Controller) commit(ch *change) error {
	if ch.empty() {
		return nil
	}
	if err := c.write(ch, c.version+1); err != nil {
		err = fmt.Errorf("%w: controller: writing metadata: %v", kerr.UnknownServerError, err)
		c.log.Error("metadata write failed; reloading", "err", err)
		if lerr := c.load(); lerr != nil {
			c.broken = fmt.Errorf("%w: controller: metadata store unusable: %v", kerr.UnknownServerError, lerr)
			c.log.Error("metadata reload failed", "err", lerr)
		}
		return err
	}
	c.version++
	c.maybeCompact()
	if c.opts.Events != nil && len(ch.evs) > 0 {
		now := c.now()
		for i := range ch.evs {
			ch.evs[i].Time = now
		}
		c.mu.out = append(c.mu.out, ch.evs...)
	}
	return nil
}

// reportingMutex is the Controller's mutex with an outbox: commit queues a
// durable change's events in out, and Unlock publishes them after releasing
// the mutex, each critical section's in its turn (the one before it done
// first), so the events still come out in the order the changes were made
// and a caller finds its own published once its call returns.
type reportingMutex struct {
	sync.Mutex
	pub Publisher
	out []events.Event
	// published is closed once the last taken outbox is published; nil
	// before the first.
	published chan struct{}
}

// Unlock releases the mutex, then publishes what the critical section
// committed.
func (m *reportingMutex) Unlock() {
	out := m.out
	var before, done chan struct{}
	if len(out) > 0 {
		m.out = nil
		before, done = m.published, make(chan struct{})
		m.published = done
	}
	m.Mutex.Unlock()
	if len(out) == 0 {
		return
	}
	if before != nil {
		<-before
	}
	m.pub.Publish(out...)
	close(done)
}

// RegisterBroker registers broker id after a clean shutdown, with no logs
// to report: Register with the least to say.
func (c *Controller) RegisterBroker(id int32, listener string) (brokerEpoch int64, err error) {
	return c.Register(Registration{ID: id, Listener: listener, CleanShutdown: true})
}

// Register registers a broker (Kafka's BrokerRegistration) and returns its
// new broker epoch; every registration is a new incarnation, so the epoch
// changes each time. The broker stays fenced until its first Heartbeat with
// that epoch. What a re-registration does to the broker's ISR places and
// leaderships is the fencing rule's business (FencingRule): under
// zookeeper-pre-2.2 a broker back within its session keeps its ISR places;
// under zookeeper (KIP-380) it leaves them but where it is the last member;
// under kraft it is fenced first and leaves them; under kraft-elr, also, a
// broker back from an unclean shutdown leaves every ISR and ELR.
func (c *Controller) Register(reg Registration) (brokerEpoch int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return 0, err
	}
	id := reg.ID
	if id < 0 {
		return 0, fmt.Errorf("%w: broker id %d: must not be negative", kerr.InvalidRequest, id)
	}
	ch := newChange()
	b := c.brokers[id]
	withinSession := b != nil && !b.Fenced && c.registered[id]
	if b != nil && (c.registered[id] || !reg.CleanShutdown) {
		// Under every rule a restarted broker leaves its pipelines: its
		// replica may lack what they wrote meanwhile (or lost it to a power
		// cut), so it rejoins at the tail, where its replica, of an older
		// generation stamp, is discarded. Only the first registration
		// after a clean stop of the whole lab keeps its places.
		c.leavePipelines(ch, id, fact.Word("event.word.reason.restarted", id))
		if !reg.CleanShutdown && c.rule.ELR() {
			c.forgetUncleanPipelines(ch, id)
		}
	}
	c.registered[id] = true
	if b == nil {
		b = &Broker{ID: id}
		c.brokers[id] = b
	}
	b.Listener, b.Epoch, b.LastHeartbeat = reg.Listener, int64(c.version+1), c.now()
	b.Fenced = !(withinSession && c.rule.ZooKeeper()) // ZooKeeper knew no fencing
	ch.brokers[id] = true
	// What it knew of its logs before this incarnation is stale.
	delete(c.logs, id)
	c.reRegister(ch, b, reg, withinSession)
	if !b.Fenced {
		c.repairAllPipelines(ch, fact.Word("event.word.reason.restarted", id), id) // back within its session (zookeeper)
	}
	if err := c.commit(ch); err != nil {
		return 0, err
	}
	return b.Epoch, nil
}

// Heartbeat records that broker id is alive and returns the metadata version,
// so the broker can tell when to refresh its metadata. brokerEpoch must be the
// one RegisterBroker returned last (else STALE_BROKER_EPOCH). A fenced broker
// is unfenced, and offline partitions it can lead elect it.
func (c *Controller) Heartbeat(id int32, brokerEpoch int64) (metadataVersion uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return 0, err
	}
	b := c.brokers[id]
	if b == nil {
		return 0, fmt.Errorf("%w: broker %d is not registered", kerr.StaleBrokerEpoch, id)
	}
	if brokerEpoch != b.Epoch {
		return 0, fmt.Errorf("%w: broker %d sent broker epoch %d, the current one is %d", kerr.StaleBrokerEpoch, id, brokerEpoch, b.Epoch)
	}
	b.LastHeartbeat = c.now()
	if err := c.maybeRepairPipelines(id); err != nil {
		return 0, err
	}
	if b.Fenced {
		ch := newChange()
		b.Fenced = false
		ch.brokers[id] = true
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerUp,
			Listener: b.Listener}, "event.broker.unfenced", id))
		c.electOffline(ch, fact.Word("event.word.reason.unfenced", id))
		c.repairAllPipelines(ch, fact.Word("event.word.reason.unfenced", id), id)
		if err := c.commit(ch); err != nil {
			return 0, err
		}
	}
	return c.version, nil
}

// Tick fences every unfenced broker whose last heartbeat is older than the
// session timeout (as Now tells it), moves their leaderships and ISR places,
// and elects leaders for offline partitions that can have one.
func (c *Controller) Tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.usable() != nil {
		return
	}
	now := c.now()
	var expired []int32
	for id, b := range c.brokers {
		if !b.Fenced && now.Sub(b.LastHeartbeat) > c.opts.SessionTimeout {
			expired = append(expired, id)
		}
	}
	if len(expired) == 0 {
		return // the usual tick: nothing to build, write or publish
	}
	slices.Sort(expired) // fence and publish in broker order
	ch := newChange()
	// Fence them all before moving anything, so that no leadership moves to a
	// broker that is about to be fenced in the same tick.
	for _, id := range expired {
		b := c.brokers[id]
		b.Fenced = true
		ch.brokers[id] = true
		// The silence in whole milliseconds: a running clock's nanoseconds
		// ("2.001381455s") say nothing to a learner, and a Go duration's
		// unit ("2s") is English on a Chinese page.
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerFenced,
			Listener: b.Listener}, "event.broker.fenced.timeout", id, now.Sub(b.LastHeartbeat).Milliseconds(), c.opts.SessionTimeout.Milliseconds()))
	}
	for _, id := range expired {
		c.leaveReplicaSets(ch, id, fact.Word("event.word.reason.fenced", id), events.ISRSessionExpired)
	}
	// Partitions go offline only when brokers are fenced (leaveReplicaSets
	// elects what it can at once); unfencing and config changes elect too.
	// So an idle tick walks no partition.
	c.electOffline(ch, fact.Word("event.word.reason.offline"))
	if err := c.commit(ch); err != nil {
		c.log.Error("tick", "err", err)
	}
}

// NextSessionExpiry returns the earliest time at which Tick would fence a
// broker that does not heartbeat again: its last heartbeat plus the session
// timeout (plus a nanosecond: the session must be exceeded). ok is false
// when every broker is fenced or none is known.
func (c *Controller) NextSessionExpiry() (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.brokers {
		if e := b.LastHeartbeat.Add(c.opts.SessionTimeout + time.Nanosecond); !b.Fenced && (!ok || e.Before(at)) {
			at, ok = e, true
		}
	}
	return at, ok
}

// FenceBroker fences broker id at once, as Tick would after the session
// timeout (the lab uses it when a crashed broker should fail over
// instantly). An unknown or already fenced broker is left alone.
func (c *Controller) FenceBroker(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.usable() != nil {
		return
	}
	b := c.brokers[id]
	if b == nil || b.Fenced {
		return
	}
	ch := newChange()
	b.Fenced = true
	ch.brokers[id] = true
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerFenced,
		Listener: b.Listener}, "event.broker.fenced.request", id))
	c.leaveReplicaSets(ch, id, fact.Word("event.word.reason.fenced", id), events.ISRFenced)
	if err := c.commit(ch); err != nil {
		c.log.Error("fence broker", "broker", id, "err", err)
	}
}

// Metadata returns a copy of all metadata. Its Topics (their Configs and
// Partitions, and the lists in those) and its id maps are shared with other
// callers while nothing in them changes: read them, never modify them.
func (c *Controller) Metadata() Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := Metadata{Version: c.version, Brokers: make([]Broker, 0, len(c.brokers))}
	for _, id := range c.brokerIDs() {
		m.Brokers = append(m.Brokers, *c.brokers[id])
	}
	names := c.topicNames()
	same := len(c.sharedFrom) == len(names)
	for i, name := range names {
		if s := c.topics[name].sharedSnapshot(); !same || c.sharedFrom[i] != s {
			same = false
		}
	}
	if !same {
		// A new list (the one handed out before stays as it was): each
		// entry a copy of the topic's shared snapshot.
		c.sharedTopics, c.sharedFrom = make([]Topic, len(names)), make([]*Topic, len(names))
		for i, name := range names {
			c.sharedFrom[i] = c.topics[name].shared
			c.sharedTopics[i] = *c.sharedFrom[i]
		}
	}
	if c.topicIDs == nil {
		c.topicIDs, c.topicNamesByID = make(map[string][16]byte, len(names)), make(map[[16]byte]string, len(names))
		for _, name := range names {
			id := c.topics[name].id
			c.topicIDs[name], c.topicNamesByID[id] = id, name
		}
	}
	m.Topics, m.TopicIDs, m.TopicNames = c.sharedTopics, c.topicIDs, c.topicNamesByID
	return m
}

// MetadataVersion returns the metadata version: 0 for an empty store, one
// more after every change.
func (c *Controller) MetadataVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Topic returns a copy of the topic called name, and false if there is none.
func (c *Controller) Topic(name string) (Topic, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.topics[name]
	if t == nil {
		return Topic{}, false
	}
	return t.snapshot(), true
}

func (c *Controller) brokerIDs() []int32 {
	return slices.Sorted(maps.Keys(c.brokers))
}

// topicNames returns the topics' names in order. The list is kept until
// the set of topics changes (callers that change it set c.names to nil)
// and shared: callers must not modify it.
func (c *Controller) topicNames() []string {
	if c.names == nil {
		c.names = slices.Sorted(maps.Keys(c.topics))
		c.topicIDs, c.topicNamesByID = nil, nil
	}
	return c.names
}

// live reports whether broker id is registered and not fenced.
func (c *Controller) live(id int32) bool {
	b := c.brokers[id]
	return b != nil && !b.Fenced
}

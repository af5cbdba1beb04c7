// Package broker is one Tidemark broker: a log dir of Kafka-format logs
// (storage), a Kafka-protocol listener (wire), the replication rules of each
// partition it hosts (replication), follower fetchers that pull from leaders
// over real TCP, and a heartbeat to the controller from which it learns
// leaders, epochs and ISRs.
//
// A broker never decides leadership itself: the controller does, and the
// broker applies what it learns (Kafka's LeaderAndIsr, or the KRaft metadata
// a broker fetches). It does decide its partitions' high watermarks and ISR
// proposals, through replication.Partition.
//
// Time: every loop reads the lab clock. While the clock is paused the loops
// idle, and the lab moves time and fetches one explicit step at a time
// (Step, FetchRound), which is what makes scenarios exact.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/internal/fds"
	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/server/wire"
	"tidemark/storage"
	"tidemark/storage/vfs"
)

// Controller is what a broker needs from the controller. The lab passes one
// whose calls fail while the broker↔controller link is cut.
type Controller interface {
	Register(reg controller.Registration) (brokerEpoch int64, err error)
	ReportLogs(id int32, brokerEpoch int64, logs []controller.LogInfo) error
	// Heartbeat sends a heartbeat; answer gets the controller's metadata
	// version or the error: before Heartbeat returns, or, over a delayed
	// link, once the heartbeat has crossed it and the answer has come
	// back (then on the lab's goroutine that delivers it).
	Heartbeat(id int32, brokerEpoch int64, answer func(metadataVersion uint64, err error))
	Metadata() (controller.Metadata, error)
	// AlterPartition sends an ISR proposal; answer gets the controller's
	// answer or the error, as Heartbeat's does.
	AlterPartition(topic string, partition int32, brokerID int32, brokerEpoch int64, req replication.AlterPartitionRequest, answer func(replication.AlterPartitionResponse, error))
	// QuorumLeader reports that this broker leads a quorum partition in
	// a Raft term (controller.Controller.QuorumLeader).
	QuorumLeader(topic string, partition, brokerID int32, brokerEpoch int64, term int32) error
	// PipelineFailed reports that a pipeline head's member failed did not
	// answer in generation stamp stamp (controller.Controller.PipelineFailed).
	PipelineFailed(topic string, partition, brokerID int32, brokerEpoch int64, stamp, failed int32) error
	// PipelineCaughtUp reports that every member of a pipeline head's
	// pipeline has what its recovery agreed on
	// (controller.Controller.PipelineCaughtUp).
	PipelineCaughtUp(topic string, partition, brokerID int32, brokerEpoch int64, stamp int32) error
}

// Network says whether a link between two brokers carries traffic now, and
// how long it delays a follower's fetches.
type Network interface {
	Allowed(from, to int32) bool
	Delay(from, to int32) time.Duration
	// Carry puts one leg of a stepped fetch (a paused lab's) on its way
	// over a delayed link: arrive runs once the link's delay of lab time
	// has passed (the lab's steps deliver it, never in Carry's caller),
	// with ok false if the link was cut meanwhile. It returns false, and
	// arrive never runs, if the link is cut now.
	Carry(from, to int32, arrive func(ok bool)) bool
}

// Clock is the lab clock: Paused stops the broker's own loops, and Real
// turns their lab-time intervals into real waits at the clock's rate
// (a heartbeat every 200ms of lab time is every 800ms of real time at ¼×);
// RateChanged is closed when the rate changes, and a wait starts again;
// Resumed is closed when a paused clock resumes (already closed while it
// runs), so the followers sleep while the lab steps them by hand.
type Clock interface {
	Now() time.Time
	Paused() bool
	Real(d time.Duration) time.Duration
	RateChanged() <-chan struct{}
	Resumed() <-chan struct{}
}

// Publisher takes the broker's events; *events.Bus is one. It must not block.
type Publisher interface {
	Publish(evs ...events.Event) events.Event
}

// MessageFilter is what a Publisher may also be: WantsMessages reports
// whether it would keep any message event (events.Kind.IsMessage) now. A
// broker builds none while it says no: followers' fetches are the busiest
// path of an idle lab.
type MessageFilter interface {
	WantsMessages() bool
}

// MessageSampler is what a Publisher may also be: MessagesDue reports how
// many of n message events of kind on the link from→to it would keep now
// (the lab keeps one per kind and link per second while its clock runs),
// so a fetch round of a thousand partitions builds one event, not a
// thousand to be dropped.
type MessageSampler interface {
	MessagesDue(kind events.Kind, from, to int32, n int) int
}

// Config configures a broker.
type Config struct {
	ID int32
	// LogDir is <data>/broker-<id>.
	LogDir string
	// ListenAddr is the Kafka listener, 127.0.0.1:9092 style; port 0 picks one.
	ListenAddr string
	Controller Controller
	Network    Network
	// Raft carries the Raft messages of replication.protocol=quorum
	// partitions between brokers; without it they reach no one.
	Raft RaftTransport
	// Pipeline carries the messages of replication.protocol=pipeline
	// partitions between brokers; without it they reach no one.
	Pipeline PipelineTransport
	Clock    Clock
	Events   Publisher
	Logger   *slog.Logger

	// HeartbeatInterval is how often the broker heartbeats the controller
	// (broker.heartbeat.interval.ms), and so how soon it learns metadata the
	// controller changed on its own (a fencing). Default 500ms: a quarter of
	// the lab's 2 s session, as Kafka's 2 s is about a quarter of its 9 s.
	HeartbeatInterval time.Duration
	// TickInterval is the shortest wait between two ticks, which show the
	// partitions the clock (ISR shrink, acks timeouts, flush.ms, retention):
	// the broker ticks when one of those is due (tickBy), at least once per
	// RetentionCheckInterval, and no more often than this. Default 50ms.
	TickInterval time.Duration
	// HighWatermarkCheckpointInterval is Kafka's
	// replica.high.watermark.checkpoint.interval.ms: the HW reaches disk only
	// this often, which is what KIP-101's scenarios exploit. Default 5s.
	HighWatermarkCheckpointInterval time.Duration
	// FetchMaxWait is how long a leader holds a follower's fetch that finds
	// no new data (replica.fetch.wait.max.ms). Default 500ms (lab time for a
	// follower's fetch, real time for a client's).
	FetchMaxWait time.Duration
	// FetchMaxBytes bounds each partition's data in one fetch
	// (replica.fetch.max.bytes). Default 1 MiB.
	FetchMaxBytes int32
	// RequestTimeout bounds a produce's wait for acks=all when the client
	// gives none. Default 30s.
	RequestTimeout time.Duration
	// ConnectionsMaxIdle is the Kafka listener's connections.max.idle.ms
	// (wire.Options.ConnectionsMaxIdle: 0 means 10 minutes, negative never).
	ConnectionsMaxIdle time.Duration
	// MaxConnectionsPerIP is the Kafka listener's max.connections.per.ip
	// (wire.Options.MaxConnectionsPerIP: 0 means a fortieth of the
	// descriptor limit, negative no limit).
	MaxConnectionsPerIP int
	// NoAutoCreateTopics turns Kafka's auto.create.topics.enable off: a
	// Metadata request for a topic that does not exist no longer creates
	// it (on by default, as in Kafka).
	NoAutoCreateTopics bool
	// CopyFileRegions serves fetched record data by copying it through user
	// space instead of with sendfile; it exists to measure what zero copy saves.
	CopyFileRegions bool
	// FS is the file system the log dir is read and written through
	// (default the OS's); the lab passes one it can make fail.
	FS vfs.FS
	// RaftCompactEntries is quorum.Config.CompactEntries for every quorum
	// replica: raft-state is compacted once it holds this many applied
	// entries. Default (0) 1000.
	RaftCompactEntries int
	// OnHalt, when set, is called (on its own goroutine) when the broker
	// halts because its log dir went offline (Kafka halts a broker whose
	// every log dir failed) or its Kafka listener stopped for good. It
	// should Crash the broker.
	OnHalt func(id int32, cause error)
	// OnRequest, when set, is told of every Kafka request the listener
	// answered: the broker, the API key and the total time (the
	// /metrics request histogram). It must be quick.
	OnRequest func(id int32, apiKey int16, total time.Duration)
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 500 * time.Millisecond
	}
	if c.TickInterval <= 0 {
		c.TickInterval = 50 * time.Millisecond
	}
	if c.HighWatermarkCheckpointInterval <= 0 {
		c.HighWatermarkCheckpointInterval = 5 * time.Second
	}
	if c.FetchMaxWait <= 0 {
		c.FetchMaxWait = 500 * time.Millisecond
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 1 << 20
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
}

// Broker is one running broker. Create it with Start; stop it with Close
// (clean), Crash or PowerLoss. A stopped Broker is not restarted: Start a new
// one on the same LogDir, which recovers from disk.
//
// Lock order: Broker.applyMu, then Broker.mu, then fetcher.mu, then
// replica.mu, then fetcher.partsMu. None is held while calling the
// controller (except applyMu, around the Metadata read it applies) or the
// network, except fetcher.mu: it is one round at a time, held across the
// round's Fetch to the leader, and across a delayed round's waits for the
// lab's steps (Broker.mu takes it only to stop a fetcher, after cancelling
// its round, which ends a wait). No lock at all is held while publishing
// events: each replica gathers its events in an outbox and publishes them
// after releasing replica.mu, in the order it made them (a turn taken
// under replica.mu: unlock). Events carry facts (catalog keys and
// arguments, package fact), never text: the lab's reporter renders them.
type Broker struct {
	cfg    Config
	logger *slog.Logger
	// errLog logs errors that repeat (each tick, each partition) at most
	// once per errorLogInterval each.
	errLog *limitedLog
	dir    *storage.LogDir
	server *wire.Server
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// applyMu serializes RefreshMetadata: metadata is applied in version
	// order from one place.
	applyMu sync.Mutex
	// reapply asks the RefreshMetadata under way to apply again when it
	// ends (refreshNow from inside an apply): in its own call, so a
	// paused lab's steps stay exact.
	reapply atomic.Bool
	// refresh asks the metadata goroutine to apply newer metadata, so a
	// slow apply (a topic with many partitions) never delays heartbeats.
	refresh chan struct{}
	// decodeWake starts a pass of decodeLoop (decoder.go) over the
	// replicas in decodePending, which decodeMu guards.
	decodeWake    chan struct{}
	decodeMu      sync.Mutex
	decodePending map[*replica]struct{}

	// nextTickMs is the lab time (ms) by which tickLoop ticks next: the
	// earliest deadline anything asked for with tickBy since the last Tick.
	// tickSoon wakes tickLoop when tickBy brings it forward.
	nextTickMs atomic.Int64
	tickSoon   chan struct{}

	// sessions are the fetch sessions (KIP-227) this broker serves.
	sessions fetchSessions
	// lowWatermarks wakes the DeleteRecords waiting for followers
	// (deleterecords.go).
	lowWatermarks lowWatermarkSignal

	mu              sync.Mutex
	brokerEpoch     int64
	registeredOnce  bool
	metadataVersion uint64
	metadata        controller.Metadata
	// txnIndexes holds each replica's transaction index (txn.go), made
	// on its first read_committed fetch.
	txnIndexes       sync.Map
	topicIDsByName   map[string][16]byte // of metadata (the controller's, shared): read-only
	topicNamesByID   map[[16]byte]string // of metadata, likewise
	replicas         map[storage.TopicPartition]*replica
	sorted           []*replica         // replicas sorted (replicaList); nil when the set changed since
	fetchers         map[int32]*fetcher // by leader id
	lastHWCheckpoint time.Time
	lastHWs          map[storage.TopicPartition]int64 // as last written
	stopped          bool
}

// Start opens the log dir (recovering it if the last stop was not clean),
// starts the Kafka listener, registers with the controller and starts the
// broker's loops.
func Start(cfg Config) (*Broker, error) {
	cfg.setDefaults()
	if cfg.Controller == nil || cfg.Network == nil || cfg.Clock == nil {
		return nil, errors.New("broker: Config needs Controller, Network and Clock")
	}
	logger := cfg.Logger.With("broker", cfg.ID)
	b := &Broker{cfg: cfg, logger: logger, errLog: newLimitedLog(logger, errorLogInterval), refresh: make(chan struct{}, 1), tickSoon: make(chan struct{}, 1), decodeWake: make(chan struct{}, 1),
		replicas: map[storage.TopicPartition]*replica{}, fetchers: map[int32]*fetcher{}}
	var err error
	b.dir, err = storage.OpenLogDir(cfg.LogDir, storage.Options{
		Now:       cfg.Clock.Now,
		Logger:    b.logger,
		ConfigFor: b.configFromDisk,
		FS:        cfg.FS,
		// The process's one descriptor account: short of files, idle
		// sealed segments are given back first.
		ShortOfFiles: func() bool { return fds.AtLeast(fds.CloseIdle) },
	})
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	b.lastHWCheckpoint = cfg.Clock.Now()
	var onRequest func(int16, time.Duration)
	if f := cfg.OnRequest; f != nil {
		onRequest = func(key int16, d time.Duration) { f(cfg.ID, key, d) }
	}
	b.server, err = wire.NewServer(&handler{b: b}, wire.Options{Logger: b.logger, CopyFileRegions: cfg.CopyFileRegions,
		ConnectionsMaxIdle: cfg.ConnectionsMaxIdle, MaxConnectionsPerIP: cfg.MaxConnectionsPerIP, OnRequest: onRequest})
	if err != nil {
		b.dir.Crash()
		return nil, err
	}
	if b.ln, err = net.Listen("tcp", cfg.ListenAddr); err != nil {
		b.dir.Crash()
		return nil, fmt.Errorf("broker %d: %w", cfg.ID, err)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := b.server.Serve(b.ctx, b.ln)
		if b.ctx.Err() != nil {
			return // stopped on purpose
		}
		// The listener is gone for good (it survives running out of
		// descriptors, so this is rare): a broker nobody can reach must
		// not look up, so it halts and shows as down.
		b.logger.Error("Kafka listener stopped: the broker halts", "addr", b.Addr(), "err", err)
		b.publish(fact.Say(events.Event{Kind: events.KindBroker, Broker: b.cfg.ID, BrokerState: events.BrokerCrashed, Listener: b.Addr()},
			"event.broker.listener-stopped", b.cfg.ID)) // why is in the log above
		if b.cfg.OnHalt != nil {
			go b.cfg.OnHalt(b.cfg.ID, fmt.Errorf("Kafka listener stopped: %w", err))
		}
	}()
	b.publish(b.withRecoveryMessage(events.Event{Kind: events.KindBroker, Broker: cfg.ID, BrokerState: events.BrokerUp, Listener: b.Addr()}))
	// Registration may fail while the link to the controller is cut; the
	// heartbeat loop keeps trying.
	b.register()
	b.wg.Add(4)
	go b.heartbeatLoop()
	go b.tickLoop()
	go b.metadataLoop()
	go b.watchLogDir()
	b.wg.Add(1)
	go b.decodeLoop()
	return b, nil
}

// watchLogDir halts the broker when its log dir goes offline (an I/O or
// fsync error): with its only log dir gone, a Kafka broker halts rather
// than serve from a disk it cannot trust. Until it is stopped, every
// request touching the log gets KAFKA_STORAGE_ERROR.
func (b *Broker) watchLogDir() {
	defer b.wg.Done()
	select {
	case <-b.ctx.Done():
		return
	case <-b.dir.OfflineC():
	}
	cause := b.dir.Offline()
	b.logger.Error("log dir offline: the broker halts", "dir", b.cfg.LogDir, "err", cause)
	b.publish(fact.Say(events.Event{Kind: events.KindBroker, Broker: b.cfg.ID, BrokerState: events.BrokerCrashed, Listener: b.Addr(),
		Error: "KAFKA_STORAGE_ERROR"}, "event.broker.log-dir-offline", b.cfg.ID)) // the cause is in the log above
	if b.cfg.OnHalt != nil {
		go b.cfg.OnHalt(b.cfg.ID, fmt.Errorf("its log dir went offline: %w", cause)) // it stops b, which waits for this goroutine
	}
}

// configFromDisk gives storage a config for logs found at open; the real
// topic config arrives with the first metadata.
func (b *Broker) configFromDisk(tp storage.TopicPartition) storage.Config {
	if md, err := b.cfg.Controller.Metadata(); err == nil {
		for _, t := range md.Topics {
			if t.Name == tp.Topic {
				if tc, err := controller.ParseTopicConfig(t.Configs); err == nil {
					return tc.Storage()
				}
			}
		}
	}
	return storage.DefaultConfig()
}

// withRecoveryMessage returns ev saying how the broker's log dir started:
// cleanly, empty, or recovered after an unclean shutdown.
func (b *Broker) withRecoveryMessage(ev events.Event) events.Event {
	if b.dir.WasCleanShutdown() {
		return fact.Say(ev, "event.broker.started.clean")
	}
	// A new log dir has no marker either, but nothing stopped uncleanly.
	if len(b.dir.Logs()) == 0 {
		return fact.Say(ev, "event.broker.started.empty")
	}
	var recovered, truncated int
	for _, l := range b.dir.Logs() {
		r := l.Recovery()
		recovered += len(r.SegmentsRecovered)
		truncated += int(r.BytesTruncated)
	}
	return fact.Say(ev, "event.broker.started.recovered",
		fact.Count("event.word.segments", recovered), fact.Count("event.word.torn-bytes", truncated))
}

// ID returns the broker id.
func (b *Broker) ID() int32 { return b.cfg.ID }

// Addr returns the Kafka listener's address.
func (b *Broker) Addr() string { return b.ln.Addr().String() }

// Regions returns the file regions this broker's fetch responses sent
// with sendfile or copied through user space since it started.
func (b *Broker) Regions() wire.RegionStats { return b.server.Regions() }

// LogDir returns the broker's log dir.
func (b *Broker) LogDir() *storage.LogDir { return b.dir }

// BrokerEpoch returns the epoch the controller gave this broker's
// registration; 0 before it registered.
func (b *Broker) BrokerEpoch() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.brokerEpoch
}

func (b *Broker) publish(evs ...events.Event) {
	if b.cfg.Events == nil {
		return
	}
	for i := range evs {
		if evs[i].Time.IsZero() {
			evs[i].Time = b.cfg.Clock.Now()
		}
	}
	b.cfg.Events.Publish(evs...)
}

// wantsMessages reports whether message events are worth building.
func (b *Broker) wantsMessages() bool {
	if b.cfg.Events == nil {
		return false
	}
	if f, ok := b.cfg.Events.(MessageFilter); ok {
		return f.WantsMessages()
	}
	return true
}

// messagesDue is how many of n message events of kind on the link
// from→to are worth building: those the publisher would keep (all when it
// does not say).
func (b *Broker) messagesDue(kind events.Kind, from, to int32, n int) int {
	if !b.wantsMessages() {
		return 0
	}
	if s, ok := b.cfg.Events.(MessageSampler); ok {
		return s.MessagesDue(kind, from, to, n)
	}
	return n
}

func (b *Broker) nowMs() int64 { return b.cfg.Clock.Now().UnixMilli() }

// stop ends the loops and the listener, then closes the log dir in the way
// given.
func (b *Broker) stop(closeDir func() error) error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.mu.Unlock()
	b.cancel()
	b.ln.Close()
	b.wg.Wait()
	b.mu.Lock()
	reps := b.replicas
	b.replicas, b.sorted = map[storage.TopicPartition]*replica{}, nil
	b.mu.Unlock()
	for _, r := range reps {
		r.stop()
	}
	return closeDir()
}

// Close shuts down cleanly: logs flushed, checkpoints (with the current high
// watermarks) written, clean-shutdown marker left.
func (b *Broker) Close() error {
	return b.stop(func() error {
		b.checkpointHighWatermarks()
		return b.dir.Close()
	})
}

// Crash stops the broker as a killed process: nothing more is written, but
// what was written stays (the page cache survives a process crash).
func (b *Broker) Crash() error {
	return b.stop(func() error { b.dir.Crash(); return nil })
}

// PowerLoss stops the broker and cuts every file back to what was fsynced.
// It returns the bytes lost per file.
func (b *Broker) PowerLoss() (map[string]int64, error) {
	var lost map[string]int64
	err := b.stop(func() error {
		var err error
		lost, err = b.dir.PowerLoss()
		return err
	})
	return lost, err
}

// register asks the controller for a broker epoch.
func (b *Broker) register() bool {
	b.mu.Lock()
	// Only the first registration of this process reports how the last
	// stop went; a later one (the controller lost this incarnation) comes
	// from a process whose logs never went away.
	clean := b.registeredOnce || b.dir.WasCleanShutdown()
	b.mu.Unlock()
	epoch, err := b.cfg.Controller.Register(controller.Registration{ID: b.cfg.ID, Listener: b.Addr(), CleanShutdown: clean})
	if err != nil {
		b.logger.Debug("registration failed", "err", err)
		return false
	}
	b.mu.Lock()
	b.brokerEpoch, b.registeredOnce = epoch, true
	b.mu.Unlock()
	return true
}

// reportLogs tells the controller what this broker's logs of the
// partitions waiting for unclean recovery (no leader, ISR or ELR) hold now.
func (b *Broker) reportLogs(md controller.Metadata) {
	var infos []controller.LogInfo
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			if !p.NeedsRecovery() || !slices.Contains(p.Replicas, b.cfg.ID) {
				continue
			}
			r := b.replicaFor(t.Name, p.Partition)
			if r == nil {
				continue
			}
			r.mu.Lock()
			st := r.status()
			r.mu.Unlock()
			last := int32(-1)
			for _, e := range st.EpochCache { // the epoch of the last record, not of an empty leadership
				if e.StartOffset < st.LogEndOffset {
					last = e.Epoch
				}
			}
			infos = append(infos, controller.LogInfo{Topic: t.Name, Partition: p.Partition, PartitionEpoch: p.PartitionEpoch,
				LastEpoch: last, LogEndOffset: st.LogEndOffset})
		}
	}
	if len(infos) == 0 {
		return
	}
	if err := b.cfg.Controller.ReportLogs(b.cfg.ID, b.BrokerEpoch(), infos); err != nil {
		b.logger.Debug("reporting logs for unclean recovery", "err", err)
	}
}

// HeartbeatInterval is how often the broker heartbeats while the clock
// runs (Config.HeartbeatInterval).
func (b *Broker) HeartbeatInterval() time.Duration { return b.cfg.HeartbeatInterval }

// Heartbeat sends one heartbeat and, if the metadata changed, applies it
// before returning (the lab's steps rely on that); over a delayed link,
// once the answer is back.
func (b *Broker) Heartbeat() {
	b.heartbeat(b.RefreshMetadata)
}

// heartbeat sends one heartbeat (registering first if needed) and, when
// the answer says the controller's metadata version differs from the
// applied one, calls changed.
func (b *Broker) heartbeat(changed func()) {
	b.mu.Lock()
	epoch, stopped := b.brokerEpoch, b.stopped
	b.mu.Unlock()
	if stopped {
		return
	}
	if epoch == 0 {
		if !b.register() {
			return
		}
		b.mu.Lock()
		epoch = b.brokerEpoch
		b.mu.Unlock()
	}
	b.cfg.Controller.Heartbeat(b.cfg.ID, epoch, func(version uint64, err error) {
		if err != nil {
			if errors.Is(err, errStaleBrokerEpoch) {
				b.register()
			}
			return
		}
		b.mu.Lock()
		differs := version != b.metadataVersion && !b.stopped
		b.mu.Unlock()
		if differs {
			changed()
		}
	})
}

// heartbeatLoop heartbeats on time and hands metadata changes to
// metadataLoop, never applying them itself.
func (b *Broker) heartbeatLoop() {
	defer b.wg.Done()
	b.every(b.cfg.HeartbeatInterval, b.heartbeatOnce)
}

// heartbeatOnce is one beat of heartbeatLoop: it never waits for metadata
// to be applied (a topic with a thousand partitions takes seconds), so a
// busy broker is not fenced for missing its session.
func (b *Broker) heartbeatOnce() {
	b.heartbeat(func() {
		select {
		case b.refresh <- struct{}{}:
		default: // a refresh is already due; it reads the newest version
		}
	})
}

// metadataLoop applies metadata when heartbeatLoop asks.
func (b *Broker) metadataLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.refresh:
			b.RefreshMetadata()
		}
	}
}

// every runs fn each d of lab time while the lab clock runs, on the lab's
// grid of d (nextOnGrid): each wait ends at the next multiple of d, at the
// clock's rate, and starts again when the rate changes. While the clock is
// paused the lab steps the broker explicitly.
func (b *Broker) every(d time.Duration, fn func()) {
	clk := b.cfg.Clock
	changed := clk.RateChanged()
	t := time.NewTimer(clk.Real(untilGrid(clk.Now(), d)))
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-changed:
		case <-t.C:
			if !clk.Paused() {
				fn()
			}
		}
		changed = clk.RateChanged()
		t.Reset(clk.Real(untilGrid(clk.Now(), d)))
	}
}

// nextOnGrid returns the first multiple of d (lab time, counted from the
// zero time.Time, so whole seconds are on every grid of a divisor of a
// second) after now. The lab's periodic timers wait for it instead of d
// after they last fired: every broker of a lab reads one clock, so their
// heartbeats, retention ticks and idle long polls fall due at the same
// instants and the process wakes once for all of them instead of once per
// broker (an idle VM pays ~150 µs of CPU per wake-up). Each broker keeps
// Kafka's cadence; only the phase between brokers is chosen, which Kafka
// leaves to when each machine started.
func nextOnGrid(now time.Time, d time.Duration) time.Time {
	return now.Truncate(d).Add(d)
}

// slotMs is the lab time ms rounded down to the grid of d: the slot a
// timer that fired a little late (by a varying amount) was due in.
func slotMs(ms int64, d time.Duration) int64 {
	return time.UnixMilli(ms).Truncate(d).UnixMilli()
}

// gridSlack is how close before a point of the grid a periodic timer
// counts as on it: the clock's rate turns lab time into real time to the
// nanosecond, so at 4× a timer can fire a few nanoseconds early, and
// without the slack would fire again for the point it was meant for.
const gridSlack = time.Millisecond

// untilGrid is how long from now until the periodic timer of interval d
// is next due: the first point of its grid more than gridSlack after now.
func untilGrid(now time.Time, d time.Duration) time.Duration {
	return nextOnGrid(now.Add(gridSlack), d).Sub(now)
}

// tickLoop ticks the partitions when something is due (nextTickMs), at
// least once per RetentionCheckInterval (on its grid, with the other
// brokers' ticks and heartbeats), at most once per TickInterval (lab time,
// waited at the clock's rate and again when it changes): an idle broker
// wakes once a second instead of twenty times. While the clock is paused
// the lab steps the broker explicitly.
func (b *Broker) tickLoop() {
	defer b.wg.Done()
	clk := b.cfg.Clock
	changed := clk.RateChanged()
	t := time.NewTimer(0)
	defer t.Stop()
	var ticked int64 // the TickInterval slot of the last tick (slotMs)
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-changed:
		case <-t.C:
		case <-b.tickSoon:
		}
		now := clk.Now()
		wait := untilGrid(now, RetentionCheckInterval)
		if !clk.Paused() {
			if now.UnixMilli() >= b.nextTickMs.Load() {
				b.Tick()
				now = clk.Now()
				ticked = slotMs(now.UnixMilli(), b.cfg.TickInterval)
			}
			wait = tickWait(now, b.nextTickMs.Load(), ticked, b.cfg.TickInterval)
		}
		changed = clk.RateChanged()
		t.Reset(clk.Real(wait))
	}
}

// tickWait is how long tickLoop waits from now: until nextMs, but not
// before the TickInterval slot after the last tick's (tickedSlotMs), and no
// later than the next whole second (the retention check). Counting from the
// slot keeps a tick that ran late on the grid, where the other brokers'
// ticks are, instead of TickInterval after its late start.
func tickWait(now time.Time, nextMs, tickedSlotMs int64, tickInterval time.Duration) time.Duration {
	next := max(nextMs, tickedSlotMs+tickInterval.Milliseconds())
	return min(time.Duration(next-now.UnixMilli())*time.Millisecond, untilGrid(now, RetentionCheckInterval))
}

// tickBy has tickLoop tick by lab time ms (or sooner). It takes no lock.
func (b *Broker) tickBy(ms int64) {
	for {
		cur := b.nextTickMs.Load()
		if ms >= cur {
			return
		}
		if b.nextTickMs.CompareAndSwap(cur, ms) {
			break
		}
	}
	select {
	case b.tickSoon <- struct{}{}:
	default: // a wake-up is pending; it reads the new time
	}
}

// Tick shows every partition the time: ISR shrink, acks=all timeouts,
// flush.ms, retention, Raft's ticks (TickRaft), and now and then the HW
// checkpoint. It schedules the next tick: the partitions' next deadlines
// (replica.tick; every TickInterval while it hosts a quorum replica), the
// next retention check (the next whole second of lab time: nextOnGrid) and
// the next HW checkpoint.
func (b *Broker) Tick() {
	now := b.cfg.Clock.Now()
	b.nextTickMs.Store(now.Add(untilGrid(now, RetentionCheckInterval)).UnixMilli())
	b.TickRaft(now)
	for _, r := range b.replicaList() {
		r.tick(now.UnixMilli())
	}
	b.mu.Lock()
	due := now.Sub(b.lastHWCheckpoint) >= b.cfg.HighWatermarkCheckpointInterval
	if due {
		// Counted from the tick's slot, not the moment its timer ran
		// (a little late, by a varying amount): the checkpoint after
		// next then falls on a grid tick instead of just after one.
		b.lastHWCheckpoint = now.Truncate(b.cfg.TickInterval)
	}
	next := b.lastHWCheckpoint.Add(b.cfg.HighWatermarkCheckpointInterval)
	b.mu.Unlock()
	b.tickBy(next.UnixMilli())
	if due {
		b.checkpointHighWatermarks()
	}
}

// checkpointHighWatermarks writes every partition's HW to
// replication-offset-checkpoint, unless it would write what it wrote last
// (an idle lab would otherwise rewrite and fsync the same file forever).
func (b *Broker) checkpointHighWatermarks() {
	hws := map[storage.TopicPartition]int64{}
	for _, r := range b.replicaList() {
		hws[r.tp] = r.HighWatermark()
	}
	if len(hws) == 0 {
		return
	}
	b.mu.Lock()
	same := maps.Equal(hws, b.lastHWs)
	b.mu.Unlock()
	if same {
		return
	}
	if err := b.dir.WriteHighWatermarks(hws); err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			b.errLog.log("writing the high watermark checkpoint", "err", err)
		}
		return
	}
	b.mu.Lock()
	b.lastHWs = hws
	b.mu.Unlock()
}

// CheckpointHighWatermarks writes the HW checkpoint now (the lab's step
// controls use it to make a scenario's timing explicit).
func (b *Broker) CheckpointHighWatermarks() { b.checkpointHighWatermarks() }

// replicaList returns the replicas sorted by topic and partition (the order
// ticks and fetch rounds visit them in, which keeps a stepped lab's events
// in a fixed order). The slice is shared and rebuilt only when the set
// changes, so the 50 ms tick allocates nothing: callers must not modify it.
func (b *Broker) replicaList() []*replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sorted != nil || len(b.replicas) == 0 {
		return b.sorted
	}
	out := make([]*replica, 0, len(b.replicas))
	for _, r := range b.replicas {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].tp.Topic < out[j].tp.Topic || out[i].tp.Topic == out[j].tp.Topic && out[i].tp.Partition < out[j].tp.Partition
	})
	b.sorted = out
	return out
}

// Replica returns the broker's replica of a partition; nil if it hosts none.
func (b *Broker) Replica(topic string, partition int32) *Replica {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.replicas[storage.TopicPartition{Topic: topic, Partition: partition}]
	if r == nil {
		return nil
	}
	return &Replica{r: r}
}

// logDirPath is where broker id keeps its logs under the lab's data dir.
func LogDirPath(dataDir string, id int32) string {
	return filepath.Join(dataDir, fmt.Sprintf("broker-%d", id))
}

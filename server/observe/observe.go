// Package observe shows a real Kafka cluster the way the lab shows its
// own: it polls the cluster with kadm (franz-go's admin client) — brokers,
// controller, topics, partitions with leaders, leader epochs, ISR and ELR
// (where the cluster answers DescribeTopicPartitions, KIP-966), high
// watermarks, log start offsets, log directories and sizes, topic configs,
// consumer groups and their lag — into the same events.Snapshot, and
// publishes what changed between polls as the same typed events, so the
// pages, the API's read routes, the live panel and /metrics draw it
// unchanged. It only reads: it never writes to the cluster.
//
// What an admin client cannot see, it does not invent: a replica's log end
// offset is the HW less DescribeLogDirs' OffsetLag (Kafka reports how far a
// replica is below the HW, never what a leader holds above it), and record
// values are not read.
package observe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"tidemark/events"
)

// Options configures an Observer. Seeds is required; the zero value of
// every other field gives its default.
type Options struct {
	// Seeds are the cluster's bootstrap addresses (host:port).
	Seeds []string
	// TLS, when set, dials every broker with TLS (kgo.DialTLSConfig).
	TLS *tls.Config
	// SASL, when set, authenticates every connection (kgo.SASL): plain or
	// scram (franz-go's pkg/sasl).
	SASL sasl.Mechanism
	// Interval is how often Run polls (default 2s).
	Interval time.Duration
	// Timeout bounds one poll (default 10s).
	Timeout time.Duration
	// History is how many events the bus keeps (default 4096).
	History int
	Logger  *slog.Logger
	// ClientOpts are added to the kgo client's options (tests).
	ClientOpts []kgo.Opt
}

// Info is what an observed cluster shows besides the Snapshot.
type Info struct {
	Seeds     []string  `json:"seeds"`
	ClusterID string    `json:"cluster_id,omitempty"`
	Polled    time.Time `json:"polled"`
	LogDirs   []LogDir  `json:"log_dirs"`
	Groups    []Group   `json:"groups"`
	// Unavailable says what the last poll could not read and why (a
	// broker that does not answer DescribeLogDirs, a group's error).
	Unavailable []string `json:"unavailable,omitempty"`
}

// LogDir is one broker's log directory: the bytes of its partitions' segments.
type LogDir struct {
	Broker     int32  `json:"broker"`
	Dir        string `json:"dir"`
	Size       int64  `json:"size"`
	Partitions int    `json:"partitions"`
	Error      string `json:"error,omitempty"`
}

// Group is one consumer group, its state and its lag per partition.
type Group struct {
	Group    string         `json:"group"`
	State    string         `json:"state"`
	Members  int            `json:"members"`
	TotalLag int64          `json:"total_lag"`
	Lag      []PartitionLag `json:"lag"`
	Error    string         `json:"error,omitempty"`
}

// PartitionLag is a group's committed offset on a partition, the
// partition's end (its HW) and the difference; Lag is -1 when either is
// unknown.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
}

// Observer polls one Kafka cluster. Its methods are safe for concurrent use.
type Observer struct {
	opts Options
	cl   *kgo.Client
	adm  *kadm.Client
	bus  *events.Bus

	pollMu sync.Mutex // one poll at a time

	// mu guards snap and info. A poll publishes its events and replaces
	// snap under it, so a Snapshot's Seq is always the last event it
	// includes (what the web's Lab contract asks); Publish never blocks.
	mu   sync.Mutex
	snap events.Snapshot
	info Info
}

// New returns an Observer of the cluster at opts.Seeds. It does not
// connect yet: the first Poll does.
func New(opts Options) (*Observer, error) {
	if len(opts.Seeds) == 0 {
		return nil, errors.New("observe: no bootstrap address")
	}
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.History <= 0 {
		opts.History = 4096
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	kopts := []kgo.Opt{kgo.SeedBrokers(opts.Seeds...), kgo.ClientID("tidemark-observe")}
	if opts.TLS != nil {
		kopts = append(kopts, kgo.DialTLSConfig(opts.TLS))
	}
	if opts.SASL != nil {
		kopts = append(kopts, kgo.SASL(opts.SASL))
	}
	cl, err := kgo.NewClient(append(kopts, opts.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	return &Observer{opts: opts, cl: cl, adm: kadm.NewClient(cl), bus: events.NewBus(events.BusOptions{History: opts.History}),
		snap: events.Snapshot{Controller: events.NoBroker, Observed: true}, info: Info{Seeds: opts.Seeds}}, nil
}

// Close closes the client.
func (o *Observer) Close() { o.cl.Close() }

// Bus returns the bus the polls publish changes on.
func (o *Observer) Bus() *events.Bus { return o.bus }

// Snapshot returns the cluster as the last poll saw it (a copy).
func (o *Observer) Snapshot() events.Snapshot {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.snap.Clone()
}

// Info returns what the last poll saw besides the Snapshot.
func (o *Observer) Info() Info {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.info
	i.LogDirs = slices.Clone(i.LogDirs)
	i.Groups = slices.Clone(i.Groups)
	i.Unavailable = slices.Clone(i.Unavailable)
	return i
}

// Run polls every Interval until ctx ends. A failed poll is logged (once
// until one succeeds again) and the last picture stays.
func (o *Observer) Run(ctx context.Context) {
	t := time.NewTicker(o.opts.Interval)
	defer t.Stop()
	failing := false
	for {
		err := o.Poll(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			o.opts.Logger.Warn("observe: poll failed; showing the last picture", "seeds", o.opts.Seeds, "err", err)
			failing = true
		case err == nil && failing:
			o.opts.Logger.Info("observe: polling again", "seeds", o.opts.Seeds)
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll reads the cluster once and publishes what changed since the last
// poll. It fails only when the metadata cannot be read; what else cannot
// be read is named in Info.Unavailable.
func (o *Observer) Poll(ctx context.Context) error {
	o.pollMu.Lock()
	defer o.pollMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	// kadm answers Metadata from kgo's cache for up to MetadataMinAge
	// (5s); asking for the authorized operations sends a fresh request.
	md, err := o.adm.Metadata(kadm.WithAuthorizedOps(ctx))
	if err != nil {
		return fmt.Errorf("observe: metadata from %v: %w", o.opts.Seeds, err)
	}
	p := poll{md: md, info: Info{Seeds: o.opts.Seeds, ClusterID: md.Cluster, Polled: time.Now()}}
	topics := md.Topics.Names()
	sort.Strings(topics)
	if len(topics) > 0 {
		p.starts, p.ends = o.offsets(ctx, &p.info, topics)
		p.configs = o.topicConfigs(ctx, &p.info, topics)
		p.elr = o.elr(ctx, &p.info, topics)
	}
	p.logDirs = o.logDirs(ctx, &p.info)
	p.info.Groups = o.groups(ctx, &p.info)

	o.mu.Lock()
	defer o.mu.Unlock()
	next := p.snapshot(&o.snap)
	evs := diff(&o.snap, &next)
	if len(evs) > 0 {
		next.Seq = o.bus.Publish(evs...).Seq
	} else {
		next.Seq = o.snap.Seq
	}
	next.Time = p.info.Polled
	o.snap, o.info = next, p.info
	return nil
}

func (o *Observer) offsets(ctx context.Context, info *Info, topics []string) (starts, ends kadm.ListedOffsets) {
	var err error
	if starts, err = o.adm.ListStartOffsets(ctx, topics...); err != nil {
		info.Unavailable = append(info.Unavailable, "ListOffsets (log start): "+err.Error())
	}
	if ends, err = o.adm.ListEndOffsets(ctx, topics...); err != nil {
		info.Unavailable = append(info.Unavailable, "ListOffsets (high watermarks): "+err.Error())
	}
	return starts, ends
}

// topicConfigs returns each topic's configs that are not the broker's
// defaults.
func (o *Observer) topicConfigs(ctx context.Context, info *Info, topics []string) map[string]map[string]string {
	rcs, err := o.adm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		info.Unavailable = append(info.Unavailable, "DescribeConfigs: "+err.Error())
		return nil
	}
	out := map[string]map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		for _, c := range rc.Configs {
			if c.Value == nil || c.Source == kmsg.ConfigSourceDefaultConfig {
				continue
			}
			if out[rc.Name] == nil {
				out[rc.Name] = map[string]string{}
			}
			out[rc.Name][c.Key] = *c.Value
		}
	}
	return out
}

// elrMaxPages bounds the DescribeTopicPartitions pages one poll reads
// (Kafka answers at most 2000 partitions a page).
const elrMaxPages = 50

// elr asks DescribeTopicPartitions (KIP-966, Kafka 3.8+) for each
// partition's eligible leader replicas, page by page along the response's
// cursor; nil when the cluster does not answer it.
func (o *Observer) elr(ctx context.Context, info *Info, topics []string) map[string]map[int32][]int32 {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = 2000
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]map[int32][]int32{}
	for range elrMaxPages {
		resp, err := req.RequestWith(ctx, o.cl)
		if err != nil {
			info.Unavailable = append(info.Unavailable, "DescribeTopicPartitions (ELR): "+err.Error())
			return nil
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			m := out[*t.Topic]
			if m == nil {
				m = map[int32][]int32{}
				out[*t.Topic] = m
			}
			for _, p := range t.Partitions {
				m[p.Partition] = p.EligibleLeaderReplicas
			}
		}
		c := resp.NextCursor
		if c == nil {
			return out
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: c.Topic, Partition: c.Partition}
	}
	info.Unavailable = append(info.Unavailable, fmt.Sprintf("DescribeTopicPartitions (ELR): more than %d pages, the rest not read", elrMaxPages))
	return out
}

// logDirs describes every broker's log directories; per-partition
// entries feed the replicas' LEO (OffsetLag) and the sizes.
func (o *Observer) logDirs(ctx context.Context, info *Info) kadm.DescribedAllLogDirs {
	all, err := o.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		info.Unavailable = append(info.Unavailable, "DescribeLogDirs: "+err.Error())
	}
	for _, dirs := range all {
		for _, d := range dirs {
			ld := LogDir{Broker: d.Broker, Dir: d.Dir}
			if d.Err != nil {
				ld.Error = d.Err.Error()
			} else {
				ld.Size = d.Size()
				d.Topics.Each(func(kadm.DescribedLogDirPartition) { ld.Partitions++ })
			}
			info.LogDirs = append(info.LogDirs, ld)
		}
	}
	sort.Slice(info.LogDirs, func(i, j int) bool {
		a, b := info.LogDirs[i], info.LogDirs[j]
		return a.Broker < b.Broker || (a.Broker == b.Broker && a.Dir < b.Dir)
	})
	return all
}

// groups lists the consumer groups with their lag (kadm.Lag: committed
// offsets against the partitions' ends).
func (o *Observer) groups(ctx context.Context, info *Info) []Group {
	listed, err := o.adm.ListGroups(ctx)
	if err != nil {
		info.Unavailable = append(info.Unavailable, "ListGroups: "+err.Error())
		return nil
	}
	if len(listed) == 0 {
		return nil
	}
	lags, err := o.adm.Lag(ctx, listed.Groups()...)
	if err != nil {
		info.Unavailable = append(info.Unavailable, "consumer group lag: "+err.Error())
	}
	var out []Group
	for _, name := range listed.Groups() {
		l, ok := lags[name]
		g := Group{Group: name, State: listed[name].State}
		if ok {
			g.State, g.Members = l.State, len(l.Members)
			if err := l.Error(); err != nil {
				g.Error = err.Error()
			}
			for _, ml := range l.Lag.Sorted() {
				g.Lag = append(g.Lag, PartitionLag{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At, End: ml.End.Offset, Lag: ml.Lag})
				if ml.Lag > 0 {
					g.TotalLag += ml.Lag
				}
			}
		}
		out = append(out, g)
	}
	return out
}

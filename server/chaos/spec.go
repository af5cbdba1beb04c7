package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/server/controller"
)

// Spec is a run's setting in full, what an experiment varies: the topic's
// configs (replication.protocol among them), what the plain producers ask
// for, whether every producer is idempotent, and how large a record is. A
// Config is a named Spec (Config.spec).
type Spec struct {
	// TopicConfigs are the topic's configs.
	TopicConfigs map[string]string
	// Acks is the plain producers' acks: "0", "1" or "all". Idempotent
	// producers always ask for all, as Kafka requires.
	Acks string
	// Idempotent makes every producer idempotent (a producer id, epoch and
	// sequence on every batch; retried batches resent as they are).
	Idempotent bool
	// Retries makes plain producers resend a batch that failed with a
	// retriable error (or lost its connection), as Kafka's producer does
	// with retries > 0 and idempotence off: a duplicate when the first
	// send was appended.
	Retries bool
	// RecordBytes pads each value to this many bytes (0: as short as it
	// is, "p1-7").
	RecordBytes int
	// Mixed gives a Config's producers: 1 and 2 plain (Acks), 3 and 4
	// idempotent; Idempotent is then ignored.
	Mixed bool
	// whole keeps reading every replica's log whole after each action, as
	// Config runs do (noteSampled).
	whole bool
}

// MaxSpecActions bounds a Spec run's schedule (an experiment's workload
// over its duration); MaxRecordBytes a record.
const (
	MaxSpecActions = 20_000
	MaxRecordBytes = 64 << 10
)

// spec is c's Spec.
func (c Config) spec() Spec {
	return Spec{TopicConfigs: c.TopicConfigs(), Acks: c.Acks(), Mixed: true, whole: true}
}

// idempotent reports whether producer id is idempotent under s.
func (s Spec) idempotent(id int) bool {
	if s.Mixed {
		return idempotent(id)
	}
	return s.Idempotent
}

// incremental reports whether a run samples only what replicas appended
// since the last action (sampleNew): Spec runs but those truncating by the
// HW (before KIP-101), whose followers may keep a record below one they
// refetch.
func (s Spec) incremental() bool {
	return !s.whole && s.TopicConfigs[controller.ConfigTruncationRule] != "high-watermark"
}

// value is producer id's n-th value, padded to RecordBytes.
func (s Spec) value(id, n int) string {
	v := "p" + strconv.Itoa(id) + "-" + strconv.Itoa(n)
	if pad := s.RecordBytes - len(v) - 1; pad > 0 {
		v += "." + strings.Repeat("x", pad)
	}
	return v
}

// Spec is the Spec a run under c plays: RunSpec(ctx, seed, c.Spec(), …)
// is Run(ctx, seed, c, …) but for the sampling (only what replicas
// appended) and the Result's Config ("spec").
func (c Config) Spec() Spec {
	s := c.spec()
	s.whole = false
	return s
}

// Protocol is the replication protocol of the Spec's topic.
func (s Spec) Protocol() controller.ReplicationProtocol {
	if p, ok := s.TopicConfigs[controller.ConfigReplicationProtocol]; ok {
		return controller.ReplicationProtocol(p)
	}
	return controller.ProtocolISR
}

func (s Spec) validate() error {
	if !slices.Contains([]string{"0", "1", "all"}, s.Acks) {
		return fmt.Errorf("%w: acks %q: want 0, 1 or all", kerr.InvalidRequest, s.Acks)
	}
	if s.RecordBytes < 0 || s.RecordBytes > MaxRecordBytes {
		return fmt.Errorf("%w: record size %d: want 0 to %d bytes", kerr.InvalidRequest, s.RecordBytes, MaxRecordBytes)
	}
	return nil
}

// RunSpec plays actions (at most MaxSpecActions) on a fresh cluster under
// spec, as Run does under a Config: heals, restarts, settles, reads
// everything back and checks it. The topic's configs go to the controller
// as they are; one it refuses fails the run with its error.
func RunSpec(ctx context.Context, seed uint64, spec Spec, actions []Action, o Options) (*Result, error) {
	ts, err := RunTopics(ctx, seed, spec, []TopicSpec{{Name: Topic, Configs: spec.TopicConfigs}}, actions, o)
	if err != nil {
		return nil, err
	}
	return ts.Topics[0].Result, nil
}

// TopicSpec is one topic of a run: its name and its configs, which go to
// the controller as they are.
type TopicSpec struct {
	Name    string
	Configs map[string]string
	// Partitions and ReplicationFactor: 0 for Partitions and as many
	// replicas as the cluster has brokers (at most Brokers).
	Partitions        int32
	ReplicationFactor int16
}

// Topics is a finished run of several topics on one cluster: the same
// actions, each produce sent to every topic (outcomes space-separated),
// and each topic's own findings.
type Topics struct {
	Outcomes     []string
	SettleRounds int
	Topics       []TopicResult
	// Recording is the run's events, every topic's, for the stage.
	Recording *Recording
}

// TopicResult is one topic of a Topics run: what a run of it alone
// reports (Result, Config "spec"), and its column of a comparison
// (Column, with its live counts after every action in Series). A topic
// the controller refused (Refused) took no part; its Result is nil.
type TopicResult struct {
	Refused error
	Result  *Result
	Column  ProtocolResult
}

// RunTopics plays actions (at most MaxSpecActions) on a fresh cluster with
// every topic of topics, the producers under spec (its TopicConfigs are
// not used) writing to each, and checks each topic. A topic the
// controller refuses is left out, with its error; INVALID_CONFIG when it
// refuses them all. With several topics, Progress reports each topic's
// counts (Progress.Protocols).
func RunTopics(ctx context.Context, seed uint64, spec Spec, topics []TopicSpec, actions []Action, o Options) (*Topics, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if len(actions) > MaxSpecActions {
		return nil, fmt.Errorf("%w: %d actions; at most %d", kerr.InvalidRequest, len(actions), MaxSpecActions)
	}
	brokers, parts := int32(o.Brokers), int32(Partitions)
	if brokers == 0 {
		brokers = Brokers
	}
	for _, t := range topics {
		if t.Partitions > 0 {
			parts = max(parts, t.Partitions)
		}
	}
	for _, a := range actions {
		if err := a.validateOn(brokers, parts); err != nil {
			return nil, err
		}
	}
	var specs []topicSpec
	for _, t := range topics {
		cfg := maps.Clone(t.Configs)
		if cfg[controller.ConfigTruncationRule] == "high-watermark" {
			spec.whole = true // sampleNew cannot follow HW truncation
		}
		p := controller.ProtocolISR
		if v, ok := cfg[controller.ConfigReplicationProtocol]; ok {
			p = controller.ReplicationProtocol(v)
		}
		specs = append(specs, topicSpec{name: t.Name, protocol: p, configs: cfg, partitions: t.Partitions, rf: t.ReplicationFactor})
	}
	spec.TopicConfigs = nil
	out := &Topics{}
	series := map[string][]Sample{}
	user := o.Progress
	o.byProtocol = len(topics) > 1
	o.Progress = func(p Progress) {
		addSamples(series, p)
		if user != nil {
			user(p)
		}
	}
	err := play(ctx, Strict, spec, specs, actions, o, func(r *runner) error {
		switch {
		case len(r.playing()) > 0:
		case len(r.topics) == 1:
			return fmt.Errorf("creating the topic: %w", r.topics[0].created)
		default:
			return fmt.Errorf("%w: the controller accepted none of the topics: %v", kerr.InvalidConfig, r.topics[0].created)
		}
		return nil
	}, func(r *runner) {
		out.Outcomes, out.SettleRounds, out.Recording = r.outcomes, r.settleDone, r.recording()
		now := r.c.ReplicationMessages()
		done := Progress{Phase: PhaseDone, Action: len(actions), Total: len(actions)}
		for _, t := range r.topics {
			tr := TopicResult{Refused: t.created, Column: t.result(r.messages[t.protocol], now[t.protocol])}
			if ss, ok := series[t.name]; ok {
				tr.Column.Series = ss
			}
			if t.created == nil {
				tr.Result = r.result(t, seed)
				tr.Result.Recording = out.Recording
				done.Counts = tr.Result.Counts
				if o.byProtocol {
					done.Protocols = append(done.Protocols, ProtocolCounts{Protocol: t.protocol, Topic: t.name, Counts: tr.Result.Counts})
				}
			}
			out.Topics = append(out.Topics, tr)
		}
		if o.byProtocol {
			done.Counts = Counts{}
		}
		r.progress(done)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

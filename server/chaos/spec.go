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
	if err := spec.validate(); err != nil {
		return nil, err
	}
	if len(actions) > MaxSpecActions {
		return nil, fmt.Errorf("%w: %d actions; at most %d", kerr.InvalidRequest, len(actions), MaxSpecActions)
	}
	for _, a := range actions {
		if err := a.validate(); err != nil {
			return nil, err
		}
	}
	spec.TopicConfigs = maps.Clone(spec.TopicConfigs)
	res := &Result{Seed: seed, Config: "spec", Actions: actions}
	specs := []topicSpec{{name: Topic, protocol: spec.Protocol(), configs: spec.TopicConfigs}}
	err := play(ctx, Strict, spec, specs, actions, o, func(r *runner) error {
		if err := r.topics[0].created; err != nil {
			return fmt.Errorf("creating the topic: %w", err)
		}
		return nil
	}, func(r *runner) { r.finish(res) })
	return res, err
}

package replication

import (
	"fmt"
)

// Rule is the truncation rule a replica applies when it becomes a follower;
// the zero value is RuleLeaderEpoch, Kafka's rule since 0.11.
type Rule int

const (
	// RuleLeaderEpoch truncates to the end offset of the last leader epoch
	// the follower shares with the leader (KIP-101 with the KIP-279 fix).
	RuleLeaderEpoch Rule = iota
	// RuleHighWatermark truncates to the follower's own HW and then fetches
	// (Kafka before 0.11).
	RuleHighWatermark
)

// String returns the rule's topic-config spelling: "leader-epoch" or
// "high-watermark"; "rule(N)" for an unknown value.
func (r Rule) String() string {
	switch r {
	case RuleLeaderEpoch:
		return "leader-epoch"
	case RuleHighWatermark:
		return "high-watermark"
	}
	return fmt.Sprintf("rule(%d)", int(r))
}

// ParseRule parses "leader-epoch" or "high-watermark"; anything else is an
// error.
func ParseRule(s string) (Rule, error) {
	switch s {
	case "leader-epoch":
		return RuleLeaderEpoch, nil
	case "high-watermark":
		return RuleHighWatermark, nil
	}
	return 0, fmt.Errorf("replication: unknown truncation rule %q (want leader-epoch or high-watermark)", s)
}

// Config holds the topic settings the replication rules read. Change them at
// run time with Partition.SetConfig.
type Config struct {
	// MinInsyncReplicas is min.insync.replicas: while the ISR is smaller,
	// new acks=all produce requests fail with NOT_ENOUGH_REPLICAS and the
	// HW stops (Kafka 3.7+, KAFKA-15583), so acks=all requests already
	// waiting time out. Default 1.
	MinInsyncReplicas int
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms: how long a follower
	// may go without being caught up before it leaves the ISR. Default 3000
	// (a lab value; Kafka's default is 30000).
	ReplicaLagTimeMaxMs int64
	// TruncationRule is how a new follower finds its truncation point.
	// Default RuleLeaderEpoch.
	TruncationRule Rule
}

// DefaultConfig returns min.insync.replicas=1, replica.lag.time.max.ms=3000
// and the leader-epoch truncation rule.
func DefaultConfig() Config {
	return Config{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 3000, TruncationRule: RuleLeaderEpoch}
}

// Validate reports a setting that cannot work. replicationFactor is the
// number of assigned replicas; 0 skips the check against it.
func (c Config) Validate(replicationFactor int) error {
	if c.MinInsyncReplicas < 1 {
		return fmt.Errorf("replication: min.insync.replicas must be at least 1, got %d", c.MinInsyncReplicas)
	}
	if replicationFactor > 0 && c.MinInsyncReplicas > replicationFactor {
		return fmt.Errorf("replication: min.insync.replicas %d is larger than the replication factor %d; acks=all could never succeed",
			c.MinInsyncReplicas, replicationFactor)
	}
	if c.ReplicaLagTimeMaxMs <= 0 {
		return fmt.Errorf("replication: replica.lag.time.max.ms must be positive, got %d", c.ReplicaLagTimeMaxMs)
	}
	if c.TruncationRule != RuleLeaderEpoch && c.TruncationRule != RuleHighWatermark {
		return fmt.Errorf("replication: unknown truncation rule %v", c.TruncationRule)
	}
	return nil
}

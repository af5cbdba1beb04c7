package controller

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/replication"
	"tidemark/server/kafkaerr"
	"tidemark/storage"
)

// The topic config keys, as Kafka spells them (truncation.rule is the lab's own).
const (
	ConfigMinInsyncReplicas     = "min.insync.replicas"
	ConfigUncleanLeaderElection = "unclean.leader.election.enable"
	ConfigReplicaLagTimeMaxMs   = "replica.lag.time.max.ms"
	ConfigTruncationRule        = "truncation.rule"
	ConfigSegmentBytes          = "segment.bytes"
	ConfigSegmentMs             = "segment.ms"
	ConfigSegmentIndexBytes     = "segment.index.bytes"
	ConfigIndexIntervalBytes    = "index.interval.bytes"
	ConfigRetentionMs           = "retention.ms"
	ConfigRetentionBytes        = "retention.bytes"
	ConfigFlushMessages         = "flush.messages"
	ConfigFlushMs               = "flush.ms"
	ConfigMaxMessageBytes       = "max.message.bytes"
	// The log cleaner's and the leader's rewrites (storage/cleaner.go,
	// storage/compress.go).
	ConfigCleanupPolicy          = "cleanup.policy"
	ConfigDeleteRetentionMs      = "delete.retention.ms"
	ConfigMinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	ConfigCompressionType        = "compression.type"
	ConfigMessageTimestampType   = "message.timestamp.type"
	// ConfigReplicationProtocol is the lab's own: how a topic's partitions
	// replicate (ReplicationProtocol). It is fixed when the topic is created.
	ConfigReplicationProtocol = "replication.protocol"
)

// ReplicationProtocol is how a topic's partitions are replicated
// (replication.protocol); the zero value is ProtocolISR.
type ReplicationProtocol string

// The replication protocols a topic may be created with.
const (
	// ProtocolISR is Kafka's own: followers pull, the leader commits what
	// the whole ISR has (the default).
	ProtocolISR ReplicationProtocol = "isr"
	// ProtocolQuorum replicates each partition's log with Raft
	// (go.etcd.io/raft/v3): a record commits at a majority of the replicas.
	ProtocolQuorum ReplicationProtocol = "quorum"
	// ProtocolPipeline is HDFS's write pipeline (replication/pipeline): a
	// write flows head→…→tail, the ack back; it commits once the tail has
	// it, and a failure rebuilds the pipeline under a new generation stamp.
	ProtocolPipeline ReplicationProtocol = "pipeline"
)

// TopicConfig is a topic's parsed configuration: every key either as the topic
// sets it or at its default. The zero TopicConfig is not valid; start from
// DefaultTopicConfig or ParseTopicConfig.
type TopicConfig struct {
	// UncleanLeaderElection is unclean.leader.election.enable: when no ISR
	// member is alive, any live replica may lead, and records only the old
	// ISR had are lost. Default false.
	UncleanLeaderElection bool
	// Protocol is replication.protocol. Default ProtocolISR.
	Protocol ReplicationProtocol

	log  storage.Config
	repl replication.Config
	set  map[string]string // the keys the topic sets explicitly, as given
}

// DefaultTopicConfig returns the defaults: storage.DefaultConfig for the log
// settings, replication.DefaultConfig (min.insync.replicas=1,
// replica.lag.time.max.ms=3000, truncation.rule=leader-epoch) and
// unclean.leader.election.enable=false.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{Protocol: ProtocolISR, log: storage.DefaultConfig(), repl: replication.DefaultConfig()}
}

// Storage returns the log settings (segment.*, index.interval.bytes,
// retention.*, flush.*, max.message.bytes).
func (tc TopicConfig) Storage() storage.Config { return tc.log }

// Replication returns the replication settings (min.insync.replicas,
// replica.lag.time.max.ms, truncation.rule).
func (tc TopicConfig) Replication() replication.Config { return tc.repl }

// ConfigEntry is one topic config as DescribeConfigs reports it: Value is the
// topic's own setting, or the default when Default is true.
type ConfigEntry struct {
	Name    string
	Value   string
	Default bool
}

// Entries lists every topic config key, sorted by name, with its value and
// whether it is the default.
func (tc TopicConfig) Entries() []ConfigEntry {
	out := make([]ConfigEntry, 0, len(configKeys))
	for _, k := range configKeys {
		if v, ok := tc.set[k.name]; ok {
			out = append(out, ConfigEntry{Name: k.name, Value: v})
		} else {
			out = append(out, ConfigEntry{Name: k.name, Value: k.get(&tc), Default: true})
		}
	}
	return out
}

// Validate rejects settings that contradict the topic's replication factor:
// min.insync.replicas larger than it would make every acks=all produce fail.
func (tc TopicConfig) Validate(replicationFactor int) error {
	if tc.repl.MinInsyncReplicas > replicationFactor {
		return kafkaerr.WithKey(fmt.Errorf("%w: %s %d is larger than the replication factor %d; acks=all produce requests could never succeed",
			kerr.InvalidConfig, ConfigMinInsyncReplicas, tc.repl.MinInsyncReplicas, replicationFactor),
			"config.min-isr", strconv.Itoa(tc.repl.MinInsyncReplicas), strconv.Itoa(replicationFactor))
	}
	return nil
}

// ParseTopicConfig parses a topic's explicitly set configs; keys it does not
// set keep their defaults. An unknown key or a bad value is an error wrapping
// kerr.InvalidConfig that names the key and the allowed values. It does not
// check min.insync.replicas against the replication factor (see Validate).
func ParseTopicConfig(configs map[string]string) (TopicConfig, error) {
	tc := DefaultTopicConfig()
	names := make([]string, 0, len(configs))
	for name := range configs {
		names = append(names, name)
	}
	slices.Sort(names) // report the same error for the same input every time
	for _, name := range names {
		k := lookupKey(name)
		if k == nil {
			return TopicConfig{}, unknownConfig(name)
		}
		if err := k.parse(&tc, configs[name]); err != nil {
			return TopicConfig{}, err
		}
		if tc.set == nil {
			tc.set = make(map[string]string, len(configs))
		}
		tc.set[name] = configs[name]
	}
	// Backstops: the owners of these settings check combinations too.
	if err := tc.log.Validate(); err != nil {
		return TopicConfig{}, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	if err := tc.repl.Validate(0); err != nil {
		return TopicConfig{}, fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
	}
	return tc, nil
}

type keyKind int

const (
	kindInt keyKind = iota
	kindBool
	kindRule
	kindProtocol
	kindString // parseStr parses it
)

// configKey describes one topic config: its type, range and where it goes.
type configKey struct {
	name     string
	kind     keyKind
	min, max int64 // kindInt only
	setInt   func(tc *TopicConfig, n int64)
	setBool  func(tc *TopicConfig, b bool)
	get      func(tc *TopicConfig) string                        // the current value, spelled as Kafka would
	parseStr func(k *configKey, tc *TopicConfig, v string) error // kindString only
}

// refuse is INVALID_CONFIG for value v of k, which must be want; the
// value is quoted cut short, and key (its arguments the config's name, the
// value and args) says it in the learner's language.
func (k *configKey) refuse(v, want, key string, args ...string) error {
	return kafkaerr.WithKey(fmt.Errorf("%w: %s %s: must be %s", kerr.InvalidConfig, k.name, kafkaerr.Quote(v), want),
		key, append([]string{k.name, kafkaerr.Quote(v)}, args...)...)
}

// unknownConfig is INVALID_CONFIG for a topic config that does not exist,
// listing the ones that do.
func unknownConfig(name string) error {
	known := make([]string, len(configKeys))
	for i, k := range configKeys {
		known[i] = k.name
	}
	list := strings.Join(known, ", ")
	return kafkaerr.WithKey(fmt.Errorf("%w: unknown topic config %s; the lab knows %s", kerr.InvalidConfig, kafkaerr.Quote(name), list),
		"config.unknown", kafkaerr.Quote(name), list)
}

// KnownConfigs lists every topic config key the lab knows, sorted.
func KnownConfigs() []string {
	out := make([]string, len(configKeys))
	for i, k := range configKeys {
		out[i] = k.name
	}
	return out
}

// Compact reports whether cleanup.policy includes compact: the log
// cleaner keeps each key's latest record.
func (tc TopicConfig) Compact() bool { return tc.log.Cleanup.Compacts() }

// Delete reports whether cleanup.policy includes delete: retention.ms
// and retention.bytes remove old segments.
func (tc TopicConfig) Delete() bool { return tc.log.Cleanup.Deletes() }

// choice parses v as one of choices (compared without case, as Kafka
// compares these), returning the spelling in choices.
func (k *configKey) choice(v string, choices ...string) (string, error) {
	for _, c := range choices {
		if strings.EqualFold(strings.TrimSpace(v), c) {
			return c, nil
		}
	}
	return "", k.refuse(v, strings.Join(choices, ", "), "config.bad-choice", strings.Join(choices, ", "))
}

// parseCleanupPolicy parses cleanup.policy: delete, compact, or the list of
// both in either order.
func parseCleanupPolicy(v string) (storage.CleanupPolicy, bool) {
	var del, compact bool
	for p := range strings.SplitSeq(v, ",") {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "delete":
			del = true
		case "compact":
			compact = true
		default:
			return 0, false
		}
	}
	switch {
	case del && compact:
		return storage.CleanupCompactDelete, true
	case compact:
		return storage.CleanupCompact, true
	}
	return storage.CleanupDelete, true
}

func (k *configKey) parse(tc *TopicConfig, v string) error {
	switch k.kind {
	case kindBool:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			k.setBool(tc, true)
		case "false":
			k.setBool(tc, false)
		default:
			return k.refuse(v, "true or false", "config.bad-bool")
		}
	case kindRule:
		r, err := replication.ParseRule(strings.TrimSpace(v))
		if err != nil {
			return k.refuse(v, fmt.Sprintf("%s or %s", replication.RuleHighWatermark, replication.RuleLeaderEpoch),
				"config.bad-choice", fmt.Sprintf("%s, %s", replication.RuleHighWatermark, replication.RuleLeaderEpoch))
		}
		tc.repl.TruncationRule = r
	case kindString:
		return k.parseStr(k, tc, v)
	case kindProtocol:
		switch p := ReplicationProtocol(strings.TrimSpace(v)); p {
		case ProtocolISR, ProtocolQuorum, ProtocolPipeline:
			tc.Protocol = p
		default:
			return k.refuse(v, fmt.Sprintf("%s, %s or %s", ProtocolISR, ProtocolQuorum, ProtocolPipeline),
				"config.bad-choice", fmt.Sprintf("%s, %s, %s", ProtocolISR, ProtocolQuorum, ProtocolPipeline))
		}
	default:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < k.min || n > k.max {
			return k.refuse(v, fmt.Sprintf("an integer in [%d, %d]", k.min, k.max),
				"config.bad-int", strconv.FormatInt(k.min, 10), strconv.FormatInt(k.max, 10))
		}
		k.setInt(tc, n)
	}
	return nil
}

func lookupKey(name string) *configKey {
	for i := range configKeys {
		if configKeys[i].name == name {
			return &configKeys[i]
		}
	}
	return nil
}

// msDuration converts milliseconds to a Duration, saturating instead of
// overflowing (Kafka uses Long.MAX_VALUE ms for "forever").
func msDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	if ms < math.MinInt64/int64(time.Millisecond) {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

func fmtInt(n int64) string { return strconv.FormatInt(n, 10) }

// configKeys is every topic config key, sorted by name. Ranges follow Kafka's
// where the storage layer can honour them and are tighter where it cannot
// (segment.bytes must hold a batch; max.message.bytes a batch header).
var configKeys = []configKey{
	{name: ConfigCleanupPolicy, kind: kindString,
		parseStr: func(k *configKey, tc *TopicConfig, v string) error {
			p, ok := parseCleanupPolicy(v)
			if !ok {
				return k.refuse(v, "delete, compact or compact,delete", "config.bad-choice", "delete, compact, compact,delete")
			}
			tc.log.Cleanup = p
			return nil
		},
		get: func(tc *TopicConfig) string {
			return map[storage.CleanupPolicy]string{storage.CleanupDelete: "delete", storage.CleanupCompact: "compact",
				storage.CleanupCompactDelete: "compact,delete"}[tc.log.Cleanup]
		}},
	{name: ConfigCompressionType, kind: kindString,
		parseStr: func(k *configKey, tc *TopicConfig, v string) error {
			c, err := k.choice(v, "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
			if c == "producer" {
				c = "" // storage's spelling of "keep the producer's"
			}
			tc.log.CompressionType = c
			return err
		},
		get: func(tc *TopicConfig) string {
			if tc.log.CompressionType == "" {
				return "producer"
			}
			return tc.log.CompressionType
		}},
	{name: ConfigDeleteRetentionMs, min: 0, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) { tc.log.DeleteRetention = msDuration(n) },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.DeleteRetention.Milliseconds()) }},
	{name: ConfigFlushMessages, min: 1, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) { tc.log.FlushMessages = n },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.FlushMessages) }},
	// flush.ms: Kafka's default Long.MAX_VALUE means "never by time", which
	// storage spells 0; Kafka's 0 means "at once", which storage spells 1ns.
	{name: ConfigFlushMs, min: 0, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) {
			switch d := msDuration(n); {
			case n == 0:
				tc.log.FlushMs = time.Nanosecond
			case d == time.Duration(math.MaxInt64):
				tc.log.FlushMs = 0
			default:
				tc.log.FlushMs = d
			}
		},
		get: func(tc *TopicConfig) string {
			switch d := tc.log.FlushMs; {
			case d <= 0:
				return fmtInt(math.MaxInt64)
			case d < time.Millisecond:
				return "0"
			default:
				return fmtInt(d.Milliseconds())
			}
		}},
	{name: ConfigIndexIntervalBytes, min: 0, max: math.MaxInt32,
		setInt: func(tc *TopicConfig, n int64) { tc.log.IndexIntervalBytes = n },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.IndexIntervalBytes) }},
	{name: ConfigMaxMessageBytes, min: 61, max: math.MaxInt32, // 61: a record batch header
		setInt: func(tc *TopicConfig, n int64) { tc.log.MaxMessageBytes = int32(n) },
		get:    func(tc *TopicConfig) string { return fmtInt(int64(tc.log.MaxMessageBytes)) }},
	{name: ConfigMessageTimestampType, kind: kindString,
		parseStr: func(k *configKey, tc *TopicConfig, v string) error {
			c, err := k.choice(v, "CreateTime", "LogAppendTime")
			tc.log.LogAppendTime = c == "LogAppendTime"
			return err
		},
		get: func(tc *TopicConfig) string {
			if tc.log.LogAppendTime {
				return "LogAppendTime"
			}
			return "CreateTime"
		}},
	{name: ConfigMinCleanableDirtyRatio, kind: kindString,
		parseStr: func(k *configKey, tc *TopicConfig, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 || f != f {
				return k.refuse(v, "a number in [0, 1]", "config.bad-ratio")
			}
			tc.log.MinCleanableDirtyRatio = f
			return nil
		},
		get: func(tc *TopicConfig) string { return strconv.FormatFloat(tc.log.MinCleanableDirtyRatio, 'g', -1, 64) }},
	{name: ConfigMinInsyncReplicas, min: 1, max: math.MaxInt32,
		setInt: func(tc *TopicConfig, n int64) { tc.repl.MinInsyncReplicas = int(n) },
		get:    func(tc *TopicConfig) string { return fmtInt(int64(tc.repl.MinInsyncReplicas)) }},
	{name: ConfigReplicaLagTimeMaxMs, min: 1, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) { tc.repl.ReplicaLagTimeMaxMs = n },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.repl.ReplicaLagTimeMaxMs) }},
	{name: ConfigReplicationProtocol, kind: kindProtocol,
		get: func(tc *TopicConfig) string { return string(tc.Protocol) }},
	{name: ConfigRetentionBytes, min: -1, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) { tc.log.RetentionBytes = n },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.RetentionBytes) }},
	{name: ConfigRetentionMs, min: -1, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) { tc.log.RetentionMs = msDuration(n) },
		get: func(tc *TopicConfig) string {
			if tc.log.RetentionMs < 0 {
				return "-1"
			}
			return fmtInt(tc.log.RetentionMs.Milliseconds())
		}},
	{name: ConfigSegmentBytes, min: storage.MinSegmentBytes, max: math.MaxInt32,
		setInt: func(tc *TopicConfig, n int64) { tc.log.SegmentBytes = n },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.SegmentBytes) }},
	{name: ConfigSegmentIndexBytes, min: 16, max: math.MaxInt32, // 16: two offset-index entries
		setInt: func(tc *TopicConfig, n int64) { tc.log.SegmentIndexBytes = n },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.SegmentIndexBytes) }},
	{name: ConfigSegmentMs, min: 1, max: math.MaxInt64,
		setInt: func(tc *TopicConfig, n int64) { tc.log.SegmentMs = msDuration(n) },
		get:    func(tc *TopicConfig) string { return fmtInt(tc.log.SegmentMs.Milliseconds()) }},
	{name: ConfigTruncationRule, kind: kindRule,
		get: func(tc *TopicConfig) string { return tc.repl.TruncationRule.String() }},
	{name: ConfigUncleanLeaderElection, kind: kindBool,
		setBool: func(tc *TopicConfig, b bool) { tc.UncleanLeaderElection = b },
		get:     func(tc *TopicConfig) string { return strconv.FormatBool(tc.UncleanLeaderElection) }},
}

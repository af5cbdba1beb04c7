package controller

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/storage"
)

func TestCreateDescribeDeleteTopic(t *testing.T) {
	l := newLab(t)
	l.start(3, 1, 2)
	got := l.create("orders", 4, 3, map[string]string{"min.insync.replicas": "2"})
	if got.Name != "orders" || got.ID == ([16]byte{}) || !reflect.DeepEqual(got.Configs, map[string]string{"min.insync.replicas": "2"}) {
		t.Fatalf("topic %+v", got)
	}
	wantAR := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 2, 3}}
	for i, p := range got.Partitions {
		if p.Topic != "orders" || p.Partition != int32(i) || !slices.Equal(p.Replicas, wantAR[i]) || !slices.Equal(p.ISR, wantAR[i]) ||
			p.Leader != wantAR[i][0] || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %d: %+v", i, p)
		}
		st := p.State()
		if st.Leader != p.Leader || !slices.Equal(st.Replicas, p.Replicas) || !slices.Equal(st.ISR, p.ISR) {
			t.Fatalf("State() %+v", st)
		}
	}
	l.create("audit", 1, 1, nil)

	m := l.c.Metadata()
	if len(m.Topics) != 2 || m.Topics[0].Name != "audit" || m.Topics[1].Name != "orders" {
		t.Fatalf("topics not sorted by name: %+v", m.Topics)
	}
	if m.Topics[0].Configs != nil {
		t.Fatalf("audit configs %v; want nil", m.Topics[0].Configs)
	}
	if ids := []int32{m.Brokers[0].ID, m.Brokers[1].ID, m.Brokers[2].ID}; !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("brokers not sorted: %v", ids)
	}
	// Metadata is a deep copy.
	m.Topics[1].Partitions[0].ISR[0] = 99
	m.Topics[1].Configs["x"] = "y"
	if p := l.part("orders", 0); p.ISR[0] != 1 {
		t.Fatalf("Metadata shares slices with the controller")
	}
	if tp, _ := l.c.Topic("orders"); len(tp.Configs) != 1 {
		t.Fatalf("Metadata shares config maps with the controller")
	}
	if cfg := got.Config(); cfg.Replication().MinInsyncReplicas != 2 {
		t.Fatalf("Topic.Config min.insync.replicas %d", cfg.Replication().MinInsyncReplicas)
	}

	if err := l.c.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.c.Topic("orders"); ok {
		t.Fatal("orders still there after DeleteTopic")
	}
	wantErr(t, l.c.DeleteTopic("orders"), kerr.UnknownTopicOrPartition)
	// The name is free again, with a new topic ID.
	again := l.create("orders", 1, 1, nil)
	if again.ID == got.ID {
		t.Fatal("recreated topic kept its old ID")
	}
}

func TestCreateTopicRejectsBadInput(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("a.b", 1, 1, nil)
	cases := []struct {
		name       string
		topic      string
		partitions int32
		rf         int16
		configs    map[string]string
		want       *kerr.Error
		mention    string
	}{
		{"empty name", "", 1, 1, nil, kerr.InvalidTopicException, "empty"},
		{"bad character", "a/b", 1, 1, nil, kerr.InvalidTopicException, "only ASCII"},
		{"dot", ".", 1, 1, nil, kerr.InvalidTopicException, ""},
		{"too long", strings.Repeat("x", 250), 1, 1, nil, kerr.InvalidTopicException, "limit"},
		{"exists", "a.b", 1, 1, nil, kerr.TopicAlreadyExists, "a.b"},
		{"collides", "a_b", 1, 1, nil, kerr.InvalidTopicException, "collides"},
		{"zero partitions", "t", 0, 1, nil, kerr.InvalidPartitions, "[1, 1000]"},
		{"negative partitions", "t", -3, 1, nil, kerr.InvalidPartitions, "[1, 1000]"},
		{"too many partitions", "t", 1001, 1, nil, kerr.InvalidPartitions, "[1, 1000]"},
		{"rf zero", "t", 1, 0, nil, kerr.InvalidReplicationFactor, "[1, 3]"},
		{"rf negative", "t", 1, -1, nil, kerr.InvalidReplicationFactor, "[1, 3]"},
		{"rf above brokers", "t", 1, 4, nil, kerr.InvalidReplicationFactor, "[1, 3]"},
		{"unknown config", "t", 1, 1, map[string]string{"retention.hours": "1"}, kerr.InvalidConfig, "retention.hours"},
		{"bad config value", "t", 1, 1, map[string]string{"segment.bytes": "12"}, kerr.InvalidConfig, "segment.bytes"},
		{"min isr above rf", "t", 1, 2, map[string]string{"min.insync.replicas": "3"}, kerr.InvalidConfig, "replication factor 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := l.c.MetadataVersion()
			_, err := l.c.CreateTopic(tc.topic, tc.partitions, tc.rf, tc.configs)
			wantErr(t, err, tc.want)
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
			if l.c.MetadataVersion() != v {
				t.Fatal("a rejected CreateTopic changed the metadata")
			}
		})
	}
	// Only unfenced brokers count towards the replication factor and get replicas.
	l.c.FenceBroker(2)
	_, err := l.c.CreateTopic("t", 1, 3, nil)
	wantErr(t, err, kerr.InvalidReplicationFactor)
	tp := l.create("t", 2, 2, nil)
	if !slices.Equal(tp.Partitions[0].Replicas, []int32{1, 3}) || !slices.Equal(tp.Partitions[1].Replicas, []int32{3, 1}) {
		t.Fatalf("assignment over unfenced brokers: %+v", tp.Partitions)
	}
}

func TestTopicConfigDefaultsAndEntries(t *testing.T) {
	d := DefaultTopicConfig()
	if d.Storage() != storage.DefaultConfig() || d.Replication() != replication.DefaultConfig() || d.UncleanLeaderElection {
		t.Fatalf("defaults %+v", d)
	}
	entries := d.Entries()
	if len(entries) != 19 || !slices.IsSortedFunc(entries, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("entries %+v", entries)
	}
	want := map[string]string{
		"flush.messages": "9223372036854775807", "flush.ms": "9223372036854775807", "index.interval.bytes": "4096",
		"max.message.bytes": "1048588", "min.insync.replicas": "1", "replica.lag.time.max.ms": "3000",
		"replication.protocol": "isr", "retention.bytes": "-1", "retention.ms": "604800000", "segment.bytes": "1073741824",
		"segment.index.bytes": "10485760", "segment.ms": "604800000", "truncation.rule": "leader-epoch",
		"unclean.leader.election.enable": "false", "cleanup.policy": "delete", "compression.type": "producer",
		"delete.retention.ms": "86400000", "message.timestamp.type": "CreateTime", "min.cleanable.dirty.ratio": "0.5",
	}
	for _, e := range entries {
		if !e.Default || want[e.Name] != e.Value {
			t.Errorf("entry %+v; want default %q", e, want[e.Name])
		}
	}
	// Every default value parses back to the same config.
	all := map[string]string{}
	for _, e := range entries {
		all[e.Name] = e.Value
	}
	back, err := ParseTopicConfig(all)
	if err != nil || back.Storage() != d.Storage() || back.Replication() != d.Replication() {
		t.Fatalf("defaults do not round-trip: %v %+v", err, back)
	}
}

func TestParseTopicConfig(t *testing.T) {
	tc, err := ParseTopicConfig(map[string]string{
		"min.insync.replicas": "2", "unclean.leader.election.enable": "TRUE", "replica.lag.time.max.ms": "500",
		"truncation.rule": "high-watermark", "segment.bytes": "4096", "segment.ms": "60000", "segment.index.bytes": "1024",
		"index.interval.bytes": "0", "retention.ms": "-1", "retention.bytes": "100000", "flush.messages": "1",
		"flush.ms": "0", "max.message.bytes": "2048", "replication.protocol": "quorum",
		"cleanup.policy": "delete, compact", "compression.type": "ZSTD", "delete.retention.ms": "1000",
		"message.timestamp.type": "LogAppendTime", "min.cleanable.dirty.ratio": "0.25",
	})
	if err != nil {
		t.Fatal(err)
	}
	wantLog := storage.Config{SegmentBytes: 4096, SegmentMs: time.Minute, SegmentIndexBytes: 1024, IndexIntervalBytes: 0,
		FlushMessages: 1, FlushMs: time.Nanosecond, RetentionMs: -time.Millisecond, RetentionBytes: 100000, MaxMessageBytes: 2048,
		Cleanup: storage.CleanupCompactDelete, CompressionType: "zstd", DeleteRetention: time.Second, LogAppendTime: true, MinCleanableDirtyRatio: 0.25}
	if tc.Storage() != wantLog {
		t.Fatalf("storage %+v\nwant    %+v", tc.Storage(), wantLog)
	}
	wantRepl := replication.Config{MinInsyncReplicas: 2, ReplicaLagTimeMaxMs: 500, TruncationRule: replication.RuleHighWatermark}
	if tc.Replication() != wantRepl || !tc.UncleanLeaderElection || tc.Protocol != ProtocolQuorum {
		t.Fatalf("replication %+v unclean %v", tc.Replication(), tc.UncleanLeaderElection)
	}
	for _, e := range tc.Entries() {
		if e.Default {
			t.Errorf("%s reported as default", e.Name)
		}
	}
	if err := tc.Validate(1); err == nil || !strings.Contains(err.Error(), "min.insync.replicas 2 is larger than the replication factor 1") {
		t.Fatalf("Validate(1): %v", err)
	}
	if err := tc.Validate(2); err != nil {
		t.Fatalf("Validate(2): %v", err)
	}

	// Huge millisecond values saturate instead of overflowing; Kafka's
	// Long.MAX_VALUE flush.ms means never.
	tc, err = ParseTopicConfig(map[string]string{"retention.ms": "9223372036854775807", "flush.ms": "9223372036854775807"})
	if err != nil || tc.Storage().RetentionMs != time.Duration(math.MaxInt64) || tc.Storage().FlushMs != 0 {
		t.Fatalf("saturation: %v %+v", err, tc.Storage())
	}

	bad := []struct{ key, value, mention string }{
		{"min.insync.replicas", "0", "[1, 2147483647]"},
		{"min.insync.replicas", "two", "[1, 2147483647]"},
		{"unclean.leader.election.enable", "yes", "true or false"},
		{"replica.lag.time.max.ms", "0", "[1, "},
		{"truncation.rule", "newest", "high-watermark or leader-epoch"},
		{"segment.bytes", "1023", "[1024, 2147483647]"},
		{"segment.bytes", "4294967296", "[1024, 2147483647]"},
		{"segment.ms", "0", "[1, "},
		{"segment.index.bytes", "8", "[16, "},
		{"index.interval.bytes", "-1", "[0, "},
		{"retention.ms", "-2", "[-1, "},
		{"retention.bytes", "-2", "[-1, "},
		{"flush.messages", "0", "[1, "},
		{"flush.ms", "-1", "[0, "},
		{"max.message.bytes", "60", "[61, "},
		{"max.message.bytes", "", "[61, "},
		{"retention.minutes", "1", "unknown topic config"},
		{"retention.minutes", "1", "cleanup.policy, compression.type"}, // the known ones are listed
		{"cleanup.policy", "compacted", "delete, compact or compact,delete"},
		{"compression.type", "brotli", "producer, uncompressed, gzip"},
		{"message.timestamp.type", "AppendTime", "CreateTime, LogAppendTime"},
		{"min.cleanable.dirty.ratio", "1.5", "[0, 1]"},
		{"replication.protocol", "raft", "isr, quorum or pipeline"},
	}
	for _, b := range bad {
		_, err := ParseTopicConfig(map[string]string{b.key: b.value})
		wantErr(t, err, kerr.InvalidConfig)
		if !strings.Contains(err.Error(), b.key) || !strings.Contains(err.Error(), b.mention) {
			t.Errorf("%s=%q: error %q should name the key and %q", b.key, b.value, err, b.mention)
		}
	}
}

func TestAlterConfigs(t *testing.T) {
	l := newLab(t)
	l.start(1, 2)
	l.create("t", 1, 2, map[string]string{"retention.ms": "1000"})
	seq := l.bus.LastSeq()
	v := l.c.MetadataVersion()
	tp, err := l.c.AlterConfigs("t", map[string]*string{"min.insync.replicas": ptr("2"), "retention.ms": nil, "segment.bytes": nil})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tp.Configs, map[string]string{"min.insync.replicas": "2"}) || l.c.MetadataVersion() != v+1 {
		t.Fatalf("configs %v version %d", tp.Configs, l.c.MetadataVersion())
	}
	evs := l.eventsSince(seq)
	if len(evs) != 2 || evs[0].Config.Key != "min.insync.replicas" || evs[0].Config.Value != "2" || evs[0].Config.Previous != "" ||
		evs[1].Config.Key != "retention.ms" || evs[1].Config.Value != "" || evs[1].Config.Previous != "1000" || evs[1].Topic != "t" {
		t.Fatalf("config events %+v", evs)
	}

	// A no-op change changes nothing.
	if _, err := l.c.AlterConfigs("t", map[string]*string{"min.insync.replicas": ptr("2"), "flush.ms": nil}); err != nil {
		t.Fatal(err)
	}
	if l.c.MetadataVersion() != v+1 {
		t.Fatal("a no-op AlterConfigs bumped the version")
	}

	for _, c := range []struct {
		changes map[string]*string
		want    *kerr.Error
	}{
		{map[string]*string{"min.insync.replicas": ptr("3")}, kerr.InvalidConfig},
		{map[string]*string{"bogus": nil}, kerr.InvalidConfig},
		{map[string]*string{"segment.ms": ptr("-5")}, kerr.InvalidConfig},
	} {
		_, err := l.c.AlterConfigs("t", c.changes)
		wantErr(t, err, c.want)
	}
	_, err = l.c.AlterConfigs("nope", nil)
	wantErr(t, err, kerr.UnknownTopicOrPartition)
	if tp, _ := l.c.Topic("t"); !reflect.DeepEqual(tp.Configs, map[string]string{"min.insync.replicas": "2"}) {
		t.Fatalf("rejected changes leaked: %v", tp.Configs)
	}
	// Deleting the last key leaves no configs at all.
	tp, err = l.c.AlterConfigs("t", map[string]*string{"min.insync.replicas": nil})
	if err != nil || tp.Configs != nil {
		t.Fatalf("configs %v err %v", tp.Configs, err)
	}
}

// TestReplicationProtocolFixedAtCreation: replication.protocol is chosen when a
// topic is created, shown by DescribeConfigs, and no AlterConfigs changes it.
func TestReplicationProtocolFixedAtCreation(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("q", 1, 3, map[string]string{"replication.protocol": "quorum"})
	l.create("i", 1, 3, nil)
	for name, want := range map[string]string{"q": "quorum", "i": "isr"} {
		tp, _ := l.c.Topic(name)
		if got := configEntry(tp.Config(), "replication.protocol"); got != want {
			t.Errorf("topic %s: replication.protocol %q, want %q", name, got, want)
		}
	}
	for _, c := range []struct {
		topic   string
		changes map[string]*string
	}{
		{"q", map[string]*string{"replication.protocol": ptr("isr")}},
		{"q", map[string]*string{"replication.protocol": nil}}, // back to the default isr
		{"i", map[string]*string{"replication.protocol": ptr("quorum")}},
	} {
		_, err := l.c.AlterConfigs(c.topic, c.changes)
		wantErr(t, err, kerr.InvalidConfig)
		if !strings.Contains(err.Error(), "cannot change") {
			t.Errorf("%s %v: error %q should say the protocol cannot change", c.topic, c.changes, err)
		}
	}
	// Setting it to what it is, or changing another key, is fine.
	if _, err := l.c.AlterConfigs("q", map[string]*string{"replication.protocol": ptr("quorum"), "retention.ms": ptr("1000")}); err != nil {
		t.Fatal(err)
	}
}

func configEntry(tc TopicConfig, name string) string {
	for _, e := range tc.Entries() {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestQuorumLeader: the controller runs no ISR election for a quorum
// partition (fencing its leader leaves it be); Raft's leader reports its
// term and becomes the partition's leader with the term as leader epoch;
// an older report changes nothing.
func TestQuorumLeader(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("q", 1, 3, map[string]string{"replication.protocol": "quorum"})
	l.create("i", 1, 3, nil)
	l.c.FenceBroker(1)
	l.want("q", 0, 1, []int32{1, 2, 3}, 0, 0)
	if got := l.part("i", 0); got.Leader == 1 {
		t.Fatalf("the isr topic kept its fenced leader: %+v", got)
	}
	if err := l.c.QuorumLeader("q", 0, 2, l.epochs[2], 3); err != nil {
		t.Fatal(err)
	}
	l.want("q", 0, 2, []int32{1, 2, 3}, 3, 1)
	evs := l.events()
	if last := evs[len(evs)-1]; last.Kind != events.KindElection || last.Leader.Leader != 2 || last.Leader.LeaderEpoch != 3 || last.MessageKey != "event.election" {
		t.Fatalf("election event %+v", last)
	}
	v := l.c.MetadataVersion()
	if err := l.c.QuorumLeader("q", 0, 3, l.epochs[3], 3); err != nil || l.c.MetadataVersion() != v {
		t.Fatalf("a report of the same term: %v, version %d → %d", err, v, l.c.MetadataVersion())
	}
	l.want("q", 0, 2, []int32{1, 2, 3}, 3, 1)
	// Raft's leader holds every committed entry: a leader the last ISR
	// proposal left out joins it (in replica order) when it reports its term.
	if r := l.c.AlterPartition("q", 0, 2, l.epochs[2], replication.AlterPartitionRequest{BrokerID: 2, LeaderEpoch: 3, PartitionEpoch: l.part("q", 0).PartitionEpoch, NewISR: []int32{2}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if err := l.c.QuorumLeader("q", 0, 3, l.epochs[3], 4); err != nil {
		t.Fatal(err)
	}
	if got := l.part("q", 0); got.Leader != 3 || !slices.Equal(got.ISR, []int32{2, 3}) {
		t.Fatalf("leader %d with ISR %v; want 3 in [2 3]", got.Leader, got.ISR)
	}
	for _, c := range []struct {
		topic  string
		broker int32
		epoch  int64
		want   *kerr.Error
	}{
		{"i", 2, l.epochs[2], kerr.InvalidRequest},
		{"q", 2, l.epochs[2] - 1, kerr.StaleBrokerEpoch},
		{"nope", 2, l.epochs[2], kerr.UnknownTopicOrPartition},
	} {
		wantErr(t, l.c.QuorumLeader(c.topic, 0, c.broker, c.epoch, 9), c.want)
	}
}

// TestQuorumUncleanRestart: under kraft-elr a broker back from an unclean
// stop leaves every ISR, but not a quorum partition's replica set: Raft's
// own log and votes decide what it may lead.
func TestQuorumUncleanRestart(t *testing.T) {
	l := newRuleLab(t, FencingKRaftELR)
	l.start(1, 2, 3)
	l.create("q", 1, 3, map[string]string{"replication.protocol": "quorum"})
	l.create("i", 1, 3, nil)
	if _, err := l.c.Register(Registration{ID: 2, Listener: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	l.want("q", 0, 1, []int32{1, 2, 3}, 0, 0)
	if got := l.part("i", 0); slices.Contains(got.ISR, 2) {
		t.Fatalf("the isr topic kept broker 2 in its ISR: %+v", got)
	}
}

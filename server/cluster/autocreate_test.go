package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/broker"
	"tidemark/server/wire"
)

// metadataAt sends one Metadata request at version v for topics (nil: all)
// to addr, as an old client would, and returns the answer.
func metadataAt(t *testing.T, addr string, v int16, allow bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, addr, "old-client")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(v)
	req.AllowAutoTopicCreation = allow
	if topics != nil || v == 0 {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("Metadata v%d: %v", v, err)
	}
	return resp.(*kmsg.MetadataResponse)
}

// TestAutoCreateTopics: with auto.create.topics.enable (the default), a
// franz-go producer allowed to create topics produces to a new one, which
// the lab creates with its defaults (1 partition, replication factor 3);
// a Metadata request that does not allow it creates nothing; v0–v3
// requests always allow it, as in Kafka; a bad name is
// INVALID_TOPIC_EXCEPTION.
func TestAutoCreateTopics(t *testing.T) {
	c := openRunning(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("appears"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce to a new topic: %v", err)
	}
	tp, ok := c.Controller().Topic("appears")
	if !ok || len(tp.Partitions) != broker.DefaultNumPartitions || len(tp.Partitions[0].Replicas) != 3 {
		t.Fatalf("auto-created %+v", tp)
	}

	addr := seeds(c)[0]
	if md := metadataAt(t, addr, 12, false, "not-asked"); md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("no auto-creation allowed: %v", kerr.ErrorForCode(md.Topics[0].ErrorCode))
	}
	if _, ok := c.Controller().Topic("not-asked"); ok {
		t.Fatal("a request that did not allow it created a topic")
	}
	md := metadataAt(t, addr, 1, false, "old-style")
	if md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != 1 {
		t.Fatalf("Metadata v1 of a new topic: %v, %d partitions", kerr.ErrorForCode(md.Topics[0].ErrorCode), len(md.Topics[0].Partitions))
	}
	if md := metadataAt(t, addr, 12, true, "bad/name"); md.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("bad name: %v", kerr.ErrorForCode(md.Topics[0].ErrorCode))
	}
}

// TestAutoCreateDisabled: with auto.create.topics.enable off, Metadata
// answers UNKNOWN_TOPIC_OR_PARTITION and creates nothing, and a broker's
// DescribeConfigs says so.
func TestAutoCreateDisabled(t *testing.T) {
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 1, Logger: quietLogger(), Broker: broker.Config{NoAutoCreateTopics: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if md := metadataAt(t, seeds(c)[0], 12, true, "nope"); md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("auto-creation off: %v", kerr.ErrorForCode(md.Topics[0].ErrorCode))
	}
	if _, ok := c.Controller().Topic("nope"); ok {
		t.Fatal("created with auto.create.topics.enable off")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rcs, err := adminClient(t, c).DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		for _, cfg := range rc.Configs {
			if cfg.Key == "auto.create.topics.enable" && cfg.MaybeValue() != "false" {
				t.Fatalf("auto.create.topics.enable=%s", cfg.MaybeValue())
			}
		}
	}
}

// TestOldClientVersions: Metadata v0 (kafka-python 2.0.2's probe: an
// empty list asks for every topic) and ApiVersions v0 are served.
func TestOldClientVersions(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("listed", 2, 3, nil); err != nil {
		t.Fatal(err)
	}
	md := metadataAt(t, seeds(c)[0], 0, false)
	if len(md.Brokers) != 3 || len(md.Topics) != 1 || *md.Topics[0].Topic != "listed" || len(md.Topics[0].Partitions) != 2 {
		t.Fatalf("Metadata v0: %d brokers, topics %+v", len(md.Brokers), md.Topics)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, seeds(c)[0], "old-client")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	resp, err := cl.Request(ctx, av)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*kmsg.ApiVersionsResponse)
	found := false
	for _, k := range got.ApiKeys {
		found = found || (k.ApiKey == 3 && k.MinVersion == 0)
	}
	if got.ErrorCode != 0 || !found {
		t.Fatalf("ApiVersions v0: error %d, Metadata from v0 listed: %v", got.ErrorCode, found)
	}
}

// TestKcatAutoCreate runs scripts/kcat-clients.sh, the kcat check CI can
// run against any lab: metadata, a produce to a topic that does not exist
// (auto-created), and reading it back.
func TestKcatAutoCreate(t *testing.T) {
	kcat := kcatPath(t)
	c := openRunning(t, 3)
	script, err := filepath.Abs("../../scripts/kcat-clients.sh")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script, strings.Join(seeds(c), ","), "kcat-new-topic")
	cmd.Env = append(os.Environ(), "KCAT="+kcat)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	if _, ok := c.Controller().Topic("kcat-new-topic"); !ok {
		t.Fatalf("kcat's produce did not create the topic:\n%s", out)
	}
	t.Logf("%s", out)
}

// debianPython is Debian's python3, where its python3-kafka package
// (kafka-python 2.0.2) installs.
const debianPython = "/usr/bin/python3"

// TestKafkaPythonAdmin runs scripts/kafka-python-admin.py: Debian's
// kafka-python 2.0.2 starts its admin client 8 times out of 8, creating,
// listing and describing a topic each time. It probes with ApiVersions v0
// and Metadata v0: with Metadata from v1 only, its second round already
// failed (UnrecognizedBrokerVersion).
func TestKafkaPythonAdmin(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import kafka").Run(); err != nil {
		t.Skip("Debian's python3-kafka is not installed (apt-get install python3-kafka): " + err.Error())
	}
	c := openRunning(t, 3)
	script, err := filepath.Abs("../../scripts/kafka-python-admin.py")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, debianPython, script, strings.Join(seeds(c), ","), "8").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

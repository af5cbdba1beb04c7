package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/broker"
)

// TestDescribeLogDirsClusterTopicPartitions asks a paused lab's brokers,
// with franz-go's admin client, what an observer asks a Kafka cluster:
// DescribeLogDirs (every partition's size equals its .log files on disk,
// no lag, the volume's bytes), DescribeCluster (cluster id, brokers, a
// broker as controller), and DescribeTopicPartitions, which pages by its
// cursor and, once a crash took the ISR below min.insync.replicas under
// kraft-elr, shows the crashed broker in the ELR.
func TestDescribeLogDirsClusterTopicPartitions(t *testing.T) {
	c := openPaused(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateTopic("strict", 2, 3, map[string]string{"min.insync.replicas": "3"}); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if _, err := c.Produce(ctx, "strict", p, 1, []Record{{Value: []byte("a")}, {Value: []byte("bb")}}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	stepFetchAll(t, c, 1, 2, 3)
	adm := adminClient(t, c)

	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{1, 2, 3} {
		path, _ := filepath.Abs(broker.LogDirPath(c.opts.DataDir, id))
		d, ok := dirs[id][path]
		if !ok || d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Fatalf("broker %d: dirs %+v, want %s", id, dirs[id], path)
		}
		for p := range int32(2) {
			dp, ok := d.Topics.Lookup("strict", p)
			if want := logFilesSize(t, filepath.Join(path, "strict-"+strconv.Itoa(int(p)))); !ok || dp.Size != want || dp.Size == 0 || dp.OffsetLag != 0 || dp.IsFuture {
				t.Fatalf("broker %d strict-%d: %+v, want size %d on disk, lag 0", id, p, dp, want)
			}
		}
	}
	only, err := adm.DescribeBrokerLogDirs(ctx, 1, kadm.TopicsSet{"strict": {1: {}}, "nope": {0: {}}})
	if ps := only.SortedPartitions(); err != nil || len(ps) != 1 || ps[0].Topic != "strict" || ps[0].Partition != 1 {
		t.Fatalf("filtered to strict-1: %v %+v", err, ps)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for _, b := range dc.Brokers {
		if b.Host != "127.0.0.1" || b.Port <= 0 || b.Rack != nil {
			t.Fatalf("broker %+v", b)
		}
		ids = append(ids, b.NodeID)
	}
	if dc.ErrorCode != 0 || dc.ClusterID != broker.ClusterID || dc.ControllerID != 1 || !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("DescribeCluster %+v", dc)
	}
	wrong := kmsg.NewPtrDescribeClusterRequest()
	wrong.EndpointType = 2 // the controller's: not a broker's listener
	if dc, err := wrong.RequestWith(ctx, cl); err != nil || dc.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("controller endpoint type: %v %+v", err, dc)
	}

	// Bounded by what exists: 100,000 partitions named, the two hosted answered.
	many := kadm.TopicsSet{"strict": {}}
	for p := range int32(100_000) {
		many["strict"][p] = struct{}{}
	}
	if d, err := adm.DescribeBrokerLogDirs(ctx, 2, many); err != nil || len(d.SortedPartitions()) != 2 {
		t.Fatalf("100,000 partitions named: %v %d answered", err, len(d.SortedPartitions()))
	}
	bad := kmsg.NewPtrDescribeTopicPartitionsRequest()
	bad.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "strict"}}
	bad.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "other"}
	if resp, err := bad.RequestWith(ctx, cl); err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("cursor outside the named topics: %v %+v", err, resp)
	}

	// Crash a follower of strict-0: fenced, it leaves the ISR below
	// min.insync.replicas (3) and joins the ELR.
	snap := c.Snapshot()
	p0 := snap.Partition("strict", 0)
	victim := p0.Replicas[0]
	if victim == p0.Leader {
		victim = p0.Replicas[1]
	}
	if err := c.Crash(victim); err != nil {
		t.Fatal(err)
	}
	for range 2 { // past the session timeout; then heartbeats bring the brokers the new metadata
		if err := c.Step(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Step(time.Second); err != nil { // heartbeats: every broker has the controller's latest metadata
		t.Fatal(err)
	}
	want, _ := c.Controller().Topic("strict")
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "strict"}, {Topic: "nope"}}
	req.ResponsePartitionLimit = 1
	var got []kmsg.DescribeTopicPartitionsResponseTopicPartition
	for pages := 1; ; pages++ {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			switch *rt.Topic {
			case "nope":
				if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("nope: %+v", rt)
				}
			case "strict":
				if rt.ErrorCode != 0 || rt.TopicID != want.ID || len(rt.Partitions) != 1 {
					t.Fatalf("page %d: %+v", pages, rt)
				}
				got = append(got, rt.Partitions...)
			}
		}
		if resp.NextCursor == nil {
			if pages != 2 {
				t.Fatalf("%d pages of one partition each, want 2", pages)
			}
			break
		}
		req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	for i, p := range want.Partitions {
		g := got[i]
		if g.Partition != p.Partition || g.LeaderID != p.Leader || g.LeaderEpoch != p.LeaderEpoch || !slices.Equal(g.Replicas, p.Replicas) ||
			!slices.Equal(g.ISR, p.ISR) || !slices.Equal(g.EligibleLeaderReplicas, p.ELR) || !slices.Equal(g.OfflineReplicas, []int32{victim}) {
			t.Fatalf("strict-%d: %+v, controller %+v", p.Partition, g, p)
		}
	}
	if elr := got[0].EligibleLeaderReplicas; !slices.Contains(elr, victim) {
		t.Fatalf("strict-0 ELR %v, want %d in it", elr, victim)
	}
}

// logFilesSize is the bytes of the .log segment files in a partition's
// directory.
func logFilesSize(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: %v %v", dir, files, err)
	}
	var n int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

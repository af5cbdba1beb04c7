package broker

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/server/wire"
	"tidemark/storage"
)

// directController is the controller without a network in between.
type directController struct{ c *controller.Controller }

func (d directController) Register(reg controller.Registration) (int64, error) {
	return d.c.Register(reg)
}
func (d directController) ReportLogs(id int32, epoch int64, logs []controller.LogInfo) error {
	return d.c.ReportLogs(id, epoch, logs)
}
func (d directController) Heartbeat(id int32, epoch int64) (uint64, error) {
	return d.c.Heartbeat(id, epoch)
}
func (d directController) Metadata() (controller.Metadata, error) { return d.c.Metadata(), nil }
func (d directController) QuorumLeader(topic string, partition, brokerID int32, brokerEpoch int64, term int32) error {
	return d.c.QuorumLeader(topic, partition, brokerID, brokerEpoch, term)
}
func (d directController) PipelineFailed(topic string, partition, brokerID int32, brokerEpoch int64, stamp, failed int32) error {
	return d.c.PipelineFailed(topic, partition, brokerID, brokerEpoch, stamp, failed)
}

func (d directController) PipelineCaughtUp(topic string, partition, brokerID int32, brokerEpoch int64, stamp int32) error {
	return d.c.PipelineCaughtUp(topic, partition, brokerID, brokerEpoch, stamp)
}

func (d directController) AlterPartition(topic string, partition, brokerID int32, brokerEpoch int64, req replication.AlterPartitionRequest) (replication.AlterPartitionResponse, error) {
	return d.c.AlterPartition(topic, partition, brokerID, brokerEpoch, req), nil
}

type openNetwork struct{}

func (openNetwork) Allowed(from, to int32) bool        { return true }
func (openNetwork) Delay(from, to int32) time.Duration { return 0 }

// pausedClock stands still: the brokers' loops idle and the test steps them.
type pausedClock struct{ t time.Time }

func (c pausedClock) Now() time.Time { return c.t }
func (pausedClock) Paused() bool     { return true }

func (pausedClock) Real(d time.Duration) time.Duration { return d }
func (pausedClock) RateChanged() <-chan struct{}       { return nil }

// testBrokers starts n brokers (ids 1..n) on a paused clock with a real
// controller, heartbeats each once and stops them at the end of the test.
func testBrokers(t *testing.T, n int32, onHalt func(int32, error)) (*controller.Controller, map[int32]*Broker) {
	t.Helper()
	dir := t.TempDir()
	clk := pausedClock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	ctl, err := controller.Open(filepath.Join(dir, "meta"), controller.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	brokers := map[int32]*Broker{}
	for id := int32(1); id <= n; id++ {
		b, err := Start(Config{ID: id, LogDir: LogDirPath(dir, id), ListenAddr: "127.0.0.1:0",
			Controller: directController{ctl}, Network: openNetwork{}, Clock: clk, OnHalt: onHalt})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Crash() })
		b.Heartbeat()
		brokers[id] = b
	}
	return ctl, brokers
}

// TestStaleFetchResponseDroppedAfterBecomingLeader: a follower sends a
// Fetch, becomes leader before the answer arrives, and then gets the
// answer. It must drop it whole: appending its old leader's records as the
// new leader would put the log ahead of the rules' LEO, and the new leader
// would then tell followers its epoch ends below its real end (they
// truncated and refetched forever, and the HW froze).
func TestStaleFetchResponseDroppedAfterBecomingLeader(t *testing.T) {
	ctl, brokers := testBrokers(t, 2, nil)
	tc, err := ctl.CreateTopic("t", 1, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		b.RefreshMetadata()
	}
	leaderID := tc.Partitions[0].Leader
	followerID := 3 - leaderID
	leader, follower := brokers[leaderID], brokers[followerID]
	if res := leader.Produce(context.Background(), "t", 0, 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}

	r := follower.replicaFor("t", 0)
	sent, ok := r.nextFetch(leaderID)
	if !ok {
		t.Fatal("the follower has no fetch to send")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, leader.Addr(), "test-follower")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaState.ID, req.ReplicaState.Epoch, req.MaxBytes, req.SessionEpoch = followerID, follower.BrokerEpoch(), 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = tc.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.PartitionMaxBytes = sent.FetchOffset, sent.CurrentLeaderEpoch, sent.LastFetchedEpoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	answer := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if len(answer.RecordBatches) == 0 {
		t.Fatal("the leader sent no records")
	}

	// The leader is fenced; the follower is elected and learns it before
	// the answer to its fetch arrives.
	ctl.FenceBroker(leaderID)
	follower.RefreshMetadata()
	if st := r.rp.Status(); st.Role != replication.RoleLeader {
		t.Fatalf("broker %d is %s, want leader", followerID, st.Role)
	}
	r.handleFetchResponse(leaderID, sent, &answer, -1, false)

	st := (&Replica{r}).Status()
	if leo := r.log.LogEndOffset(); leo != 0 || st.LogEndOffset != 0 {
		t.Fatalf("after a stale fetch response: log LEO %d, rules' LEO %d; want both 0 (nothing appended)", leo, st.LogEndOffset)
	}
}

// TestHeartbeatDoesNotWaitForMetadata: while metadata is being applied
// (here: held), the heartbeat loop still beats, so a broker applying a
// topic with many partitions is not fenced for missing its session.
func TestHeartbeatDoesNotWaitForMetadata(t *testing.T) {
	ctl, brokers := testBrokers(t, 1, nil)
	b := brokers[1]
	if _, err := ctl.CreateTopic("t", 1, 1, nil); err != nil { // the metadata changes
		t.Fatal(err)
	}
	b.applyMu.Lock() // an apply in progress
	done := make(chan struct{})
	go func() { b.heartbeatOnce(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the heartbeat waited for the metadata apply")
	}
	b.applyMu.Unlock()
	b.RefreshMetadata()
	if b.replicaFor("t", 0) == nil {
		t.Fatal("the metadata was not applied afterwards")
	}
}

// TestListenerStopHaltsBroker: a broker whose Kafka listener stops for good
// halts (the lab then shows it down) instead of looking up while nobody can
// reach it.
func TestListenerStopHaltsBroker(t *testing.T) {
	halted := make(chan error, 1)
	_, brokers := testBrokers(t, 1, func(id int32, cause error) { halted <- cause })
	b := brokers[1]
	b.ln.Close() // the listener dies under the broker
	select {
	case cause := <-halted:
		if cause == nil {
			t.Fatal("halted without a cause")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not halt")
	}
}

// TestUIRecords checks that a produced batch's newest records, as
// validation decoded them, become the append event's records: keys and
// values intact (a null key shows as none), offsets relative to the batch.
func TestUIRecords(t *testing.T) {
	batch := storage.NewBatch([]storage.Record{
		{Value: []byte("first")},
		{Key: []byte{}, Value: []byte("")},
		{Key: []byte("k"), Value: []byte("last value")},
	})
	h, tail, err := storage.ValidateProducedBatchTail(batch, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := uiRecords(h, tail)
	want := []events.Record{{Offset: 1, LeaderEpoch: -1}, {Offset: 2, LeaderEpoch: -1, Key: "k", Value: "last value"}}
	if !slices.Equal(got, want) {
		t.Fatalf("uiRecords = %+v, want %+v", got, want)
	}
}

package broker

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/leaderepoch"
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
func (d directController) Heartbeat(id int32, epoch int64, answer func(uint64, error)) {
	answer(d.c.Heartbeat(id, epoch))
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

func (d directController) AlterPartition(topic string, partition, brokerID int32, brokerEpoch int64, req replication.AlterPartitionRequest, answer func(replication.AlterPartitionResponse, error)) {
	answer(d.c.AlterPartition(topic, partition, brokerID, brokerEpoch, req), nil)
}

type openNetwork struct{}

func (openNetwork) Allowed(from, to int32) bool        { return true }
func (openNetwork) Delay(from, to int32) time.Duration { return 0 }
func (openNetwork) Carry(from, to int32, arrive func(bool)) bool {
	go arrive(true)
	return true
}

// pausedClock stands still: the brokers' loops idle and the test steps them.
type pausedClock struct{ t time.Time }

func (c pausedClock) Now() time.Time { return c.t }
func (pausedClock) Paused() bool     { return true }

func (pausedClock) Real(d time.Duration) time.Duration { return d }
func (pausedClock) RateChanged() <-chan struct{}       { return nil }
func (pausedClock) Resumed() <-chan struct{}           { return nil } // never: stepped by hand

// testBrokers starts n brokers (ids 1..n) on a paused clock with a real
// controller, heartbeats each once and stops them at the end of the test.
func testBrokers(t *testing.T, n int32, onHalt func(int32, error)) (*controller.Controller, map[int32]*Broker) {
	t.Helper()
	return startBrokers(t, n, pausedClock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, nil, nil, onHalt)
}

// startBrokers is testBrokers on clk, each broker reaching the controller
// through link(ctl) (directController when link is nil) and publishing its
// events to pub (none when nil).
func startBrokers(t *testing.T, n int32, clk Clock, link func(*controller.Controller) Controller, pub Publisher, onHalt func(int32, error)) (*controller.Controller, map[int32]*Broker) {
	t.Helper()
	dir := t.TempDir()
	ctl, err := controller.Open(filepath.Join(dir, "meta"), controller.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	var via Controller = directController{ctl}
	if link != nil {
		via = link(ctl)
	}
	brokers := map[int32]*Broker{}
	for id := int32(1); id <= n; id++ {
		b, err := Start(Config{ID: id, LogDir: LogDirPath(dir, id), ListenAddr: "127.0.0.1:0",
			Controller: via, Network: openNetwork{}, Clock: clk, Events: pub, OnHalt: onHalt})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Crash() })
		b.Heartbeat()
		brokers[id] = b
	}
	return ctl, brokers
}

// leaderAndFollower creates topic "t" (one partition on brokers 1 and 2,
// with configs), has both brokers apply it and returns its leader and
// follower.
func leaderAndFollower(t *testing.T, ctl *controller.Controller, brokers map[int32]*Broker, configs map[string]string) (controller.Topic, *Broker, *Broker) {
	t.Helper()
	tc, err := ctl.CreateTopic("t", 1, 2, configs)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range brokers {
		b.RefreshMetadata()
	}
	leaderID := tc.Partitions[0].Leader
	return tc, brokers[leaderID], brokers[3-leaderID]
}

// TestStaleFetchResponseDroppedAfterBecomingLeader: a follower sends a
// Fetch, becomes leader before the answer arrives, and then gets the
// answer. It must drop it whole: appending its old leader's records as the
// new leader would put the log ahead of the rules' LEO, and the new leader
// would then tell followers its epoch ends below its real end (they
// truncated and refetched forever, and the HW froze).
func TestStaleFetchResponseDroppedAfterBecomingLeader(t *testing.T) {
	ctl, brokers := testBrokers(t, 2, nil)
	tc, leader, follower := leaderAndFollower(t, ctl, brokers, nil)
	leaderID, followerID := leader.ID(), follower.ID()
	if res := leader.Produce(context.Background(), "t", 0, 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}

	r := follower.replicaFor("t", 0)
	sent, ok := r.nextFetch(leaderID)
	if !ok {
		t.Fatal("the follower has no fetch to send")
	}
	answer := sendFollowerFetch(t, leader, follower, tc.ID, sent, 0)
	if len(answer.RecordBatches) == 0 {
		t.Fatal("the leader sent no records")
	}

	// The leader is fenced; the follower is elected and learns it before
	// the answer to its fetch arrives.
	ctl.FenceBroker(leaderID)
	follower.RefreshMetadata()
	if st := r.status(); st.Role != replication.RoleLeader {
		t.Fatalf("broker %d is %s, want leader", followerID, st.Role)
	}
	r.handleFetchResponse(leaderID, sent, &answer, -1, false)

	st := (&Replica{r}).Status()
	if leo := r.log.LogEndOffset(); leo != 0 || st.LogEndOffset != 0 {
		t.Fatalf("after a stale fetch response: log LEO %d, rules' LEO %d; want both 0 (nothing appended)", leo, st.LogEndOffset)
	}
}

// sendFollowerFetch sends leader the Fetch sent as follower (one partition
// of topic id, no session, waiting up to maxWait for data) and returns the
// leader's answer for it.
func sendFollowerFetch(t *testing.T, leader, follower *Broker, id [16]byte, sent replication.FetchRequest, maxWait time.Duration) kmsg.FetchResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, leader.Addr(), "test-follower")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaState.ID, req.ReplicaState.Epoch, req.MaxBytes, req.SessionEpoch = follower.cfg.ID, follower.BrokerEpoch(), 1<<20, -1
	req.MaxWaitMillis, req.MinBytes = int32(maxWait.Milliseconds()), 1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.PartitionMaxBytes = sent.FetchOffset, sent.CurrentLeaderEpoch, sent.LastFetchedEpoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response %+v: want one partition", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// TestFollowerLongPollLastStableOffset: a follower's fetch at the leader's
// LEO waits for data (the long poll); when it is answered the HW is read
// again, and so must the LastStableOffset be (without transactions it is
// the HW). It used to stay at the HW from before the fetch was counted.
func TestFollowerLongPollLastStableOffset(t *testing.T) {
	ctl, brokers := testBrokers(t, 2, nil)
	tc, leader, follower := leaderAndFollower(t, ctl, brokers, nil)
	leaderID := leader.ID()
	if res := leader.Produce(context.Background(), "t", 0, 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := follower.FetchRound(ctx); err != nil { // the follower gets m1
		t.Fatal(err)
	}
	sent, ok := follower.replicaFor("t", 0).nextFetch(leaderID)
	if !ok || sent.FetchOffset != 1 {
		t.Fatalf("the follower's next fetch %+v, %v; want one at offset 1", sent, ok)
	}
	// Counting this fetch moves the leader's HW to 1 after the answer's HW
	// was read (0); nothing more comes, so the long poll runs out and the
	// answer is read again.
	answer := sendFollowerFetch(t, leader, follower, tc.ID, sent, 100*time.Millisecond)
	if answer.ErrorCode != 0 || answer.HighWatermark != 1 || answer.LastStableOffset != 1 {
		t.Fatalf("long-poll answer: error %d, HW %d, LastStableOffset %d; want 0, 1, 1", answer.ErrorCode, answer.HighWatermark, answer.LastStableOffset)
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

// TestFollowerEpochCacheShown: a follower appends a fetched batch and its
// log assigns the batch's epoch itself; the UI must still be told of that
// entry (an epoch event), and, once the follower leads, of its new epoch
// after it. The snapshot used to show a follower no epoch cache at all.
func TestFollowerEpochCacheShown(t *testing.T) {
	bus := events.NewBus(events.BusOptions{})
	ctl, brokers := startBrokers(t, 2, pausedClock{time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, nil, bus, nil)
	_, leader, follower := leaderAndFollower(t, ctl, brokers, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, v := range []string{"m1", "m2"} {
		if res := leader.Produce(ctx, "t", 0, 1, storage.NewBatch([]storage.Record{{Value: []byte(v)}}), time.Second); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	if err := follower.FetchRound(ctx); err != nil {
		t.Fatal(err)
	}
	shown := func() (cache []events.EpochEntry) {
		evs, _ := bus.Since(0, 0)
		for _, e := range evs {
			if e.Kind == events.KindEpoch && e.Broker == follower.ID() {
				cache, _ = leaderepoch.Assign(cache, events.EpochEntry{Epoch: e.Leader.LeaderEpoch, StartOffset: e.Leader.StartOffset})
			}
		}
		return cache
	}
	if got, want := shown(), []events.EpochEntry{{Epoch: 0, StartOffset: 0}}; !slices.Equal(got, want) {
		t.Fatalf("follower's epoch cache as shown: %v, want %v", got, want)
	}
	ctl.FenceBroker(leader.ID())
	follower.RefreshMetadata()
	want := []events.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}
	if got := shown(); !slices.Equal(got, want) {
		t.Fatalf("new leader's epoch cache as shown: %v, want %v", got, want)
	}
	if got := follower.replicaFor("t", 0).log.Epochs(); !slices.Equal(got, []replication.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}) {
		t.Fatalf("new leader's log epoch cache %v", got)
	}
}

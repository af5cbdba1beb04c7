package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/server/wire"
	"tidemark/storage"
)

// sessionFetch sends a consumer's Fetch of session id at epoch, naming
// parts of topic (partition → fetch offset) and forgetting forget, and
// returns the answered partitions by number.
func sessionFetch(t *testing.T, cl *wire.Client, topic [16]byte, id, epoch int32, parts map[int32]int64, forget ...int32) (*kmsg.FetchResponse, map[int32]kmsg.FetchResponseTopicPartition) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaState.ID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, id, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = topic
		for p := range int32(len(parts) + 8) { // in partition order
			off, ok := parts[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.PartitionMaxBytes = p, off, -1, -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.TopicID, ft.Partitions = topic, forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.FetchResponse)
	got := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			got[p.Partition] = p
		}
	}
	return resp, got
}

// consumerOfTopic starts one broker (paused) with topic t of n partitions
// and connects a Kafka client to it, closed at the end of the test.
func consumerOfTopic(t *testing.T, n int32) (*Broker, controller.Topic, *wire.Client) {
	t.Helper()
	ctl, brokers := testBrokers(t, 1, nil)
	b := brokers[1]
	tc, err := ctl.CreateTopic("t", n, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.RefreshMetadata()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "test-consumer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return b, tc, cl
}

// TestFetchSession plays KIP-227 against a broker as a client does: a full
// fetch opens a session, incremental fetches name only changed partitions
// and are answered only for partitions with news, a forgotten partition
// leaves the session, a wrong epoch or id is refused with Kafka's codes,
// and epoch -1 closes it.
func TestFetchSession(t *testing.T) {
	b, tc, cl := consumerOfTopic(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	produce := func(p int32, v string) {
		t.Helper()
		if res := b.Produce(ctx, "t", p, 1, storage.NewBatch([]storage.Record{{Value: []byte(v)}}), time.Second); res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	want := func(got map[int32]kmsg.FetchResponseTopicPartition, step string, parts ...int32) {
		t.Helper()
		if len(got) != len(parts) {
			t.Fatalf("%s: answered partitions %v, want %v", step, keys(got), parts)
		}
		for _, p := range parts {
			if _, ok := got[p]; !ok {
				t.Fatalf("%s: answered partitions %v, want %v", step, keys(got), parts)
			}
		}
	}

	resp, got := sessionFetch(t, cl, tc.ID, 0, initialSessionEpoch, map[int32]int64{0: 0, 1: 0})
	id := resp.SessionID
	if resp.ErrorCode != 0 || id == 0 {
		t.Fatalf("full fetch: error %d, session %d; want a new session", resp.ErrorCode, id)
	}
	want(got, "full fetch", 0, 1)

	produce(1, "m1")
	_, got = sessionFetch(t, cl, tc.ID, id, 1, nil)
	want(got, "incremental fetch after a produce to partition 1", 1)
	if p := got[1]; p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("partition 1: HW %d, %d record bytes; want HW 1 and the record", p.HighWatermark, len(p.RecordBatches))
	}
	_, got = sessionFetch(t, cl, tc.ID, id, 2, map[int32]int64{1: 1})
	want(got, "incremental fetch with nothing new")

	resp, _ = sessionFetch(t, cl, tc.ID, id, 2, nil)
	if resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 2 again: error %d, want INVALID_FETCH_SESSION_EPOCH", resp.ErrorCode)
	}
	resp, _ = sessionFetch(t, cl, tc.ID, id+1, 3, nil)
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("another session id: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}

	_, got = sessionFetch(t, cl, tc.ID, id, 3, nil, 0)
	want(got, "forgetting partition 0")
	produce(0, "m2")
	_, got = sessionFetch(t, cl, tc.ID, id, 4, nil)
	want(got, "a produce to the forgotten partition")
	_, got = sessionFetch(t, cl, tc.ID, id, 5, map[int32]int64{0: 0})
	want(got, "partition 0 named again", 0)

	resp, got = sessionFetch(t, cl, tc.ID, id, finalSessionEpoch, map[int32]int64{1: 1})
	if resp.SessionID != 0 {
		t.Fatalf("closing fetch answered session %d, want 0", resp.SessionID)
	}
	want(got, "closing fetch (answered in full)", 1)
	resp, _ = sessionFetch(t, cl, tc.ID, id, 6, nil)
	if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", resp.ErrorCode)
	}
}

func keys(m map[int32]kmsg.FetchResponseTopicPartition) []int32 {
	var out []int32
	for p := range m {
		out = append(out, p)
	}
	return out
}

// TestKgoConsumerUsesFetchSession: a franz-go consumer, which uses fetch
// sessions unless told not to, reads every record through incremental
// fetches and the broker holds its session.
func TestKgoConsumerUsesFetchSession(t *testing.T) {
	ctl, brokers := testBrokers(t, 1, nil)
	b := brokers[1]
	if _, err := ctl.CreateTopic("t", 3, 1, nil); err != nil {
		t.Fatal(err)
	}
	b.RefreshMetadata()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("t"), kgo.FetchMaxWait(50*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := 0
	for round := range 3 {
		for p := range int32(3) {
			v := fmt.Sprintf("r%dp%d", round, p)
			if res := b.Produce(ctx, "t", p, 1, storage.NewBatch([]storage.Record{{Value: []byte(v)}}), time.Second); res.Err != nil {
				t.Fatal(res.Err)
			}
		}
		for seen < 3*(round+1) {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read %d of %d records: %v", seen, 3*(round+1), err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("%s/%d: %v", topic, p, err) })
			seen += fs.NumRecords()
		}
	}
	if seen != 9 {
		t.Fatalf("read %d records, want 9", seen)
	}
	b.sessions.mu.Lock()
	defer b.sessions.mu.Unlock()
	if len(b.sessions.byID) != 1 {
		t.Fatalf("%d fetch sessions, want the consumer's", len(b.sessions.byID))
	}
	for _, s := range b.sessions.byID {
		s.mu.Lock()
		epoch, parts := s.epoch, len(s.parts)
		s.mu.Unlock()
		if s.replicaID != -1 || parts != 3 || epoch < 3 {
			t.Fatalf("session of replica %d with %d partitions at epoch %d; want the consumer's, 3 partitions, incremental fetches", s.replicaID, parts, epoch)
		}
	}
}

// followerPair starts a leader and a follower (brokers 1 and 2, paused)
// with topic t of n partitions, and one-partition topics named by extra,
// all led by broker 1, and has the follower's fetcher open its session.
func followerPair(t *testing.T, n int32, extra ...string) (ctl *controller.Controller, leader, follower *Broker, f *fetcher) {
	t.Helper()
	ctl, brokers := testBrokers(t, 2, nil)
	want := int(n)
	if _, err := ctl.CreateTopic("t", n, 2, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range extra {
		if _, err := ctl.CreateTopic(name, 1, 2, nil); err != nil {
			t.Fatal(err)
		}
		want++
	}
	for _, b := range brokers {
		b.RefreshMetadata()
	}
	// Lead everything from broker 1: fence broker 2, then let it back.
	ctl.FenceBroker(2)
	for _, b := range brokers {
		b.RefreshMetadata()
	}
	brokers[2].Heartbeat()
	brokers[1].Heartbeat()
	leader, follower = brokers[1], brokers[2]
	follower.mu.Lock()
	f = follower.fetchers[1]
	follower.mu.Unlock()
	if f == nil || len(f.parts) != want {
		t.Fatalf("broker 2 has no fetcher from broker 1 for the %d partitions", want)
	}
	if err := follower.FetchRound(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ctl, leader, follower, f
}

// leaderSessionParts counts the partitions b's fetch sessions hold.
func leaderSessionParts(b *Broker) (n int) {
	b.sessions.mu.Lock()
	defer b.sessions.mu.Unlock()
	for _, s := range b.sessions.byID {
		s.mu.Lock()
		n += len(s.parts)
		s.mu.Unlock()
	}
	return n
}

// TestFollowerFetchSession: a follower's fetcher opens a session with its
// leader, its idle rounds go on in it, records still arrive and move the HW,
// and when the leader loses the session (a restart) the follower gets
// FETCH_SESSION_ID_NOT_FOUND once and opens a new one.
func TestFollowerFetchSession(t *testing.T) {
	_, leader, follower, f := followerPair(t, 3)
	ctx := context.Background()
	for range 3 {
		if err := follower.FetchRound(ctx); err != nil {
			t.Fatal(err)
		}
	}
	id, epoch := f.session.id, f.session.epoch
	if id == 0 || epoch < 4 {
		t.Fatalf("follower's session %d at epoch %d, want one at epoch 4 or later", id, epoch)
	}
	// acks=all: the follower's next round fetches the record, the round
	// after reports its new LEO (the leader's HW moves, the produce is
	// answered) and a third tells the follower the new HW.
	acked := make(chan ProduceResult, 1)
	go func() {
		acked <- leader.Produce(ctx, "t", 2, -1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), 10*time.Second)
	}()
	for leader.replicaFor("t", 2).log.LogEndOffset() == 0 {
		time.Sleep(time.Millisecond) // bounded by the produce's timeout below
	}
	for range 2 {
		if err := follower.FetchRound(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if res := <-acked; res.Err != nil {
		t.Fatal(res.Err)
	}
	if err := follower.FetchRound(ctx); err != nil {
		t.Fatal(err)
	}
	r := follower.replicaFor("t", 2)
	r.mu.Lock()
	leo, hw := r.log.LogEndOffset(), r.hw
	r.mu.Unlock()
	if leo != 1 || hw != 1 {
		t.Fatalf("follower's partition 2: LEO %d, HW %d; want 1 and 1", leo, hw)
	}
	if f.session.id != id {
		t.Fatalf("session changed from %d to %d", id, f.session.id)
	}

	leader.sessions.close(id) // as a restart loses it
	if err := follower.FetchRound(ctx); err == nil || !errors.Is(err, kerr.FetchSessionIDNotFound) {
		t.Fatalf("round after the leader lost the session: %v, want FETCH_SESSION_ID_NOT_FOUND", err)
	}
	if err := follower.FetchRound(ctx); err != nil {
		t.Fatal(err)
	}
	if f.session.id == 0 || f.session.id == id {
		t.Fatalf("follower's session %d after the loss of %d, want a new one", f.session.id, id)
	}
}

// TestIdleFollowerFetchAllocs: an idle follower's long poll (a fetch round
// with nothing new, both sides) allocates the same whatever the number of
// partitions: the request names none, the leader answers none.
func TestIdleFollowerFetchAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 200 partitions")
	}
	allocs := func(n int32) float64 {
		_, _, _, f := followerPair(t, n)
		round := func() {
			if _, err := f.round(context.Background(), 0, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		round() // the full fetch that opens the session
		return testing.AllocsPerRun(20, round)
	}
	few, many := allocs(4), allocs(200)
	t.Logf("allocations per idle round: %.0f with 4 partitions, %.0f with 200", few, many)
	if many > few+3 || few > 60 {
		t.Fatalf("allocations per idle round: %.0f with 4 partitions, %.0f with 200; want at most 60, not growing with partitions", few, many)
	}
}

// TestFollowerForgetsPartition: a partition the follower stops fetching
// leaves the leader's session (a forgotten topic), so the leader no longer
// counts fetches for it; with nothing left to fetch the follower starts
// over with a full fetch next time.
func TestFollowerForgetsPartition(t *testing.T) {
	_, leader, follower, f := followerPair(t, 2)
	if n := leaderSessionParts(leader); n != 2 {
		t.Fatalf("the leader's session holds %d partitions, want 2", n)
	}
	follower.replicaFor("t", 1).stop()
	if err := follower.FetchRound(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := leaderSessionParts(leader); n != 1 {
		t.Fatalf("after the follower stopped fetching partition 1 the leader's session holds %d partitions, want 1", n)
	}
	follower.replicaFor("t", 0).stop()
	if err := follower.FetchRound(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.session.id != 0 || f.session.epoch != initialSessionEpoch {
		t.Fatalf("with nothing to fetch the follower keeps session %d at epoch %d, want a full fetch next", f.session.id, f.session.epoch)
	}
}

// TestDeletedTopicLeavesSession: a deleted topic's partitions leave the
// leader's session although the leader can no longer name the topic's id
// (a follower forgets topics by id). Kept, they were answered
// UNKNOWN_TOPIC_OR_PARTITION in every idle long poll.
func TestDeletedTopicLeavesSession(t *testing.T) {
	ctl, leader, follower, _ := followerPair(t, 1, "gone")
	if n := leaderSessionParts(leader); n != 2 {
		t.Fatalf("the leader's session holds %d partitions, want 2", n)
	}
	if err := ctl.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	leader.RefreshMetadata()
	follower.RefreshMetadata()
	if err := follower.FetchRound(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := leaderSessionParts(leader); n != 1 {
		t.Fatalf("after the topic's deletion the leader's session holds %d partitions, want 1", n)
	}
}

// TestSessionTopicLearntLateByLeader: a follower that applies a new topic
// before its leader does names the topic's id in its session while the
// leader cannot resolve it (UNKNOWN_TOPIC_ID). Its fetch parameters do not
// change after that error, so its incremental requests leave the partition
// out, and the leader must name it from its id again once it knows the
// topic: it used to keep the name it gave the unknown id and answer
// UNKNOWN_TOPIC_ID for good, never counting the follower's fetches, which
// is how a follower dropped from an ISR never rejoined it under CPU load.
func TestSessionTopicLearntLateByLeader(t *testing.T) {
	ctl, leader, follower, _ := followerPair(t, 1)
	tc, err := ctl.CreateTopic("late", 2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := slices.IndexFunc(tc.Partitions, func(p controller.Partition) bool { return p.Leader == leader.cfg.ID })
	if p < 0 {
		t.Fatalf("broker %d leads no partition of %+v", leader.cfg.ID, tc.Partitions)
	}
	ctx := context.Background()
	follower.RefreshMetadata() // the leader has not applied it yet
	if err := follower.FetchRound(ctx); err == nil || !strings.Contains(err.Error(), "1 partition(s)") {
		t.Fatalf("round before the leader knows the topic: %v, want one partition answered UNKNOWN_TOPIC_ID", err)
	}
	leader.RefreshMetadata()
	if res := leader.Produce(ctx, "late", int32(p), 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}
	// One round fetches the record, the next reports the follower's LEO.
	for i := range 2 {
		if err := follower.FetchRound(ctx); err != nil {
			t.Fatalf("round %d after the leader learnt the topic: %v", i+1, err)
		}
	}
	if leo := follower.replicaFor("late", int32(p)).log.LogEndOffset(); leo != 1 {
		t.Fatalf("follower's LEO %d after the leader learnt the topic, want 1", leo)
	}
	st := leader.Replica("late", int32(p)).Status()
	i := slices.IndexFunc(st.Followers, func(f replication.FollowerStatus) bool { return f.ID == follower.cfg.ID })
	if i < 0 || st.Followers[i].LogEndOffset != 1 || st.HighWatermark != 1 {
		t.Fatalf("leader's view: followers %+v, HW %d; want follower %d at LEO 1 and HW 1", st.Followers, st.HighWatermark, follower.cfg.ID)
	}
}

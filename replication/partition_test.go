package replication

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestEndOffsetForEpoch(t *testing.T) {
	cache := []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 5}, {Epoch: 5, StartOffset: 9}}
	for _, tc := range []struct {
		cache     []EpochEntry
		requested int32
		want      EpochEndOffset
	}{
		{nil, 0, EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset}},
		{cache, -1, EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset}},
		{cache, 0, EpochEndOffset{Epoch: 0, EndOffset: 5}},
		{cache, 1, EpochEndOffset{Epoch: 0, EndOffset: 5}}, // largest epoch ≤ 1 is 0 (KIP-279)
		{cache, 2, EpochEndOffset{Epoch: 2, EndOffset: 9}},
		{cache, 4, EpochEndOffset{Epoch: 2, EndOffset: 9}},
		{cache, 5, EpochEndOffset{Epoch: 5, EndOffset: 12}}, // latest epoch ends at the LEO
		{cache, 6, EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset}},
		{[]EpochEntry{{Epoch: 3, StartOffset: 4}}, 1, EpochEndOffset{Epoch: 1, EndOffset: 4}}, // older than all: requested, first start
	} {
		if got := EndOffsetForEpoch(tc.cache, 12, tc.requested); got != tc.want {
			t.Errorf("EndOffsetForEpoch(%v, 12, %d) = %v, want %v", tc.cache, tc.requested, got, tc.want)
		}
	}
}

func TestAssignEpoch(t *testing.T) {
	c, ok := assignEpoch(nil, EpochEntry{Epoch: 0, StartOffset: 0})
	if !ok || !slices.Equal(c, []EpochEntry{{Epoch: 0, StartOffset: 0}}) {
		t.Fatalf("first assign: %v %v", c, ok)
	}
	if _, ok := assignEpoch(c, EpochEntry{Epoch: 0, StartOffset: 3}); ok {
		t.Fatal("same epoch at a later offset must not change the cache")
	}
	// Epoch 1 never got a record: epoch 2 at the same offset replaces it.
	c, _ = assignEpoch([]EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 4}}, EpochEntry{Epoch: 2, StartOffset: 4})
	if !slices.Equal(c, []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 4}}) {
		t.Fatalf("empty epoch not dropped: %v", c)
	}
	c, _ = truncateEpochsFromEnd([]EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 4}, {Epoch: 3, StartOffset: 6}}, 4)
	if !slices.Equal(c, []EpochEntry{{Epoch: 0, StartOffset: 0}}) {
		t.Fatalf("truncateEpochsFromEnd: %v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(3); err != nil {
		t.Fatal(err)
	}
	bad := []Config{
		{MinInsyncReplicas: 0, ReplicaLagTimeMaxMs: 1},
		{MinInsyncReplicas: 4, ReplicaLagTimeMaxMs: 1},
		{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 0},
		{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 1, TruncationRule: 7},
	}
	for _, c := range bad {
		if c.Validate(3) == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := ParseRule("hw"); err == nil {
		t.Error("ParseRule accepted hw")
	}
	for _, r := range []Rule{RuleLeaderEpoch, RuleHighWatermark} {
		if got, err := ParseRule(r.String()); err != nil || got != r {
			t.Errorf("ParseRule(%q) = %v, %v", r, got, err)
		}
	}
}

func leaderOf(t *testing.T, leo int64) *Partition {
	t.Helper()
	p, err := New(1, DefaultConfig(), LogState{LogEndOffset: leo, HighWatermark: leo, EpochCache: []EpochEntry{{Epoch: 0, StartOffset: 0}}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	p.Ready()
	return p
}

func TestFollowerFetchValidation(t *testing.T) {
	p := leaderOf(t, 3)
	for _, tc := range []struct {
		req  FetchRequest
		want error
	}{
		{FetchRequest{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1}, kerr.FencedLeaderEpoch},
		{FetchRequest{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 2, LastFetchedEpoch: -1}, kerr.UnknownLeaderEpoch},
		{FetchRequest{ReplicaID: 9, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1}, kerr.ReplicaNotAvailable},
		{FetchRequest{ReplicaID: 2, FetchOffset: 4, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1}, kerr.OffsetOutOfRange},
		{FetchRequest{ReplicaID: 2, FetchOffset: -1, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1}, kerr.OffsetOutOfRange},
		{FetchRequest{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: 7}, kerr.OffsetOutOfRange},
		{FetchRequest{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: 0}, nil},
	} {
		if res := p.FollowerFetch(tc.req); !errors.Is(res.Err, tc.want) && res.Err != tc.want {
			t.Errorf("%+v: err %v, want %v", tc.req, res.Err, tc.want)
		}
	}
	// The leader's epoch 1 starts at 3, so a follower at offset 5 of epoch 0
	// diverges: epoch 0 ends at 3.
	p2 := leaderOf(t, 3)
	if err := p2.ProduceAppended(ProduceRequest{ID: 1, Acks: 1, Batch: Batch{BaseOffset: 3, LastOffset: 5, Epoch: 1}}); err != nil {
		t.Fatal(err)
	}
	res := p2.FollowerFetch(FetchRequest{ReplicaID: 2, FetchOffset: 5, CurrentLeaderEpoch: 1, LastFetchedEpoch: 0})
	if res.DivergingEpoch == nil || *res.DivergingEpoch != (EpochEndOffset{Epoch: 0, EndOffset: 3}) {
		t.Fatalf("diverging epoch = %v, want {0 3}", res.DivergingEpoch)
	}
}

func TestProduceChecks(t *testing.T) {
	p := leaderOf(t, 0)
	if _, err := p.CheckProduce(2); err != kerr.InvalidRequiredAcks {
		t.Errorf("acks=2: %v", err)
	}
	if err := p.SetConfig(Config{MinInsyncReplicas: 3, ReplicaLagTimeMaxMs: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CheckProduce(-1); err != kerr.NotEnoughReplicas {
		t.Errorf("acks=all under min ISR: %v", err)
	}
	if _, err := p.CheckProduce(1); err != nil {
		t.Errorf("acks=1 under min ISR: %v", err)
	}
	if err := p.ProduceAppended(ProduceRequest{ID: 1, Acks: 1, Batch: Batch{BaseOffset: 5, LastOffset: 5, Epoch: 1}}); err == nil {
		t.Error("a batch with a gap was accepted")
	}
	if err := p.ProduceAppended(ProduceRequest{ID: 1, Acks: 1, Batch: Batch{BaseOffset: 0, LastOffset: 0, Epoch: 0}}); err == nil {
		t.Error("a batch with a stale epoch was accepted")
	}
	f, _ := New(2, DefaultConfig(), LogState{}, 0)
	if _, err := f.CheckProduce(1); err != kerr.NotLeaderForPartition {
		t.Errorf("follower CheckProduce: %v", err)
	}
}

func TestLeaderAndIsrValidation(t *testing.T) {
	p := leaderOf(t, 0)
	for _, st := range []PartitionState{
		{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}},
		{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{2}},
		{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 3}},
		{Leader: 2, LeaderEpoch: 2, Replicas: []int32{2, 3}, ISR: []int32{2}},
	} {
		if p.LeaderAndIsr(st) == nil {
			t.Errorf("%+v accepted", st)
		}
	}
	if err := p.LeaderAndIsr(PartitionState{Leader: 2, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{2}}); err != kerr.FencedLeaderEpoch {
		t.Errorf("older leader epoch: %v", err)
	}
	if _, err := New(1, DefaultConfig(), LogState{LogStartOffset: 5, LogEndOffset: 2}, 0); err == nil {
		t.Error("New accepted log start after log end")
	}
	if _, err := New(1, DefaultConfig(), LogState{LogEndOffset: 9, EpochCache: []EpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 1, StartOffset: 3}}}, 0); err == nil {
		t.Error("New accepted a decreasing epoch cache")
	}
}

// A rule switch at run time changes what the next fetch sends.
func TestRuleSwitch(t *testing.T) {
	p, _ := New(2, DefaultConfig(), LogState{LogEndOffset: 4, HighWatermark: 2, EpochCache: []EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}}, 0)
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if rd := p.Ready(); len(rd.Truncations) != 0 {
		t.Fatalf("leader-epoch rule truncated before asking: %+v", rd.Truncations)
	}
	req, ok := p.NextFetch()
	if !ok || req.FetchOffset != 4 || req.LastFetchedEpoch != 1 || req.CurrentLeaderEpoch != 3 {
		t.Fatalf("NextFetch = %+v, %v", req, ok)
	}
	cfg := DefaultConfig()
	cfg.TruncationRule = RuleHighWatermark
	if err := p.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if req, _ := p.NextFetch(); req.LastFetchedEpoch != UndefinedEpoch {
		t.Fatalf("high-watermark rule sends last fetched epoch %d", req.LastFetchedEpoch)
	}
	// A diverging answer that changes nothing is an error, not a loop.
	if err := p.HandleFetchResponse(FetchResult{DivergingEpoch: &EpochEndOffset{Epoch: 1, EndOffset: 9}}, nil); err == nil {
		t.Fatal("no-progress diverging epoch accepted")
	}
}

// TestISRProposalsCarryBrokerEpochs: a proposal names, for each member, the
// broker epoch of its last fetch (KIP-903), and -1 for the leader.
func TestISRProposalsCarryBrokerEpochs(t *testing.T) {
	p, err := New(1, DefaultConfig(), LogState{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}}); err != nil {
		t.Fatal(err)
	}
	p.Ready()
	p.FollowerFetch(FetchRequest{ReplicaID: 2, FetchOffset: 0, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1, ReplicaEpoch: 42})
	rd := p.Ready()
	if rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1, 2, 3}) ||
		!slices.Equal(rd.AlterPartition.NewISRBrokerEpochs, []int64{-1, 42, -1}) {
		t.Fatalf("proposal %+v; want ISR [1 2 3] with broker epochs [-1 42 -1]", rd.AlterPartition)
	}
}

// TestIneligibleReplicaRetried: an ISR proposal refused with
// INELIGIBLE_REPLICA is dropped and made again at the next fetch (the
// controller kept the committed state); one refused with
// INVALID_UPDATE_VERSION waits for new state.
func TestIneligibleReplicaRetried(t *testing.T) {
	for _, tc := range []struct {
		err     error
		retried bool
	}{{kerr.IneligibleReplica, true}, {kerr.InvalidUpdateVersion, false}, {kerr.FencedLeaderEpoch, false}, {kerr.StaleBrokerEpoch, true}} {
		p, _ := New(1, DefaultConfig(), LogState{}, 0)
		p.LeaderAndIsr(PartitionState{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}})
		p.Ready()
		fetch := FetchRequest{ReplicaID: 2, CurrentLeaderEpoch: 0, LastFetchedEpoch: -1}
		p.FollowerFetch(fetch)
		rd := p.Ready()
		if rd.AlterPartition == nil {
			t.Fatal("no proposal")
		}
		p.AlterPartitionResponse(*rd.AlterPartition, AlterPartitionResponse{Err: tc.err})
		p.FollowerFetch(fetch)
		if got := p.Ready().AlterPartition != nil; got != tc.retried {
			t.Errorf("after %v: proposed again %v, want %v", tc.err, got, tc.retried)
		}
	}
}

// TestNextTickMs: nothing is due while the follower is at the LEO; after an
// acks=all append it is due when the follower stops counting as caught up
// (replica.lag.time.max.ms after it last was), and once that ISR proposal is
// in flight only the produce's deadline is left.
func TestNextTickMs(t *testing.T) {
	p := leaderOf(t, 3)
	p.Tick(1000) // within the default 3 s: the follower still counts as caught up
	p.FollowerFetch(FetchRequest{ReplicaID: 2, FetchOffset: 3, CurrentLeaderEpoch: 1, LastFetchedEpoch: 0})
	if err := p.SetConfig(Config{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 100}); err != nil {
		t.Fatal(err)
	}
	if rd := p.Ready(); rd.AlterPartition != nil {
		t.Fatalf("unexpected proposal %+v", rd.AlterPartition)
	}
	if n := p.NextTickMs(); n != math.MaxInt64 {
		t.Fatalf("follower at the LEO: NextTickMs = %d, want none", n)
	}
	if err := p.ProduceAppended(ProduceRequest{ID: 1, Acks: -1, Batch: Batch{BaseOffset: 3, LastOffset: 5, Epoch: 1}, DeadlineMs: 5000}); err != nil {
		t.Fatal(err)
	}
	if n := p.NextTickMs(); n != 1101 {
		t.Fatalf("follower behind: NextTickMs = %d, want 1101", n)
	}
	p.Tick(1100)
	if rd := p.Ready(); rd.AlterPartition != nil {
		t.Fatalf("ISR shrink proposed at 1100, before it was due: %+v", rd.AlterPartition)
	}
	p.Tick(1101)
	if rd := p.Ready(); rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1}) {
		t.Fatalf("at 1101: proposal %+v, want ISR [1]", rd.AlterPartition)
	}
	if n := p.NextTickMs(); n != 5000 {
		t.Fatalf("proposal in flight: NextTickMs = %d, want the produce deadline 5000", n)
	}
}

// proposingLeader is leader 1 of [1 2 3] (partition epoch 0, lag 100 ms,
// min.insync.replicas 1) holding one record that follower 2 fetched at 50
// ms and follower 3 never did: at 101 ms it proposes ISR [1 2], returned.
func proposingLeader(t *testing.T) (*Partition, AlterPartitionRequest) {
	t.Helper()
	p, err := New(1, Config{MinInsyncReplicas: 1, ReplicaLagTimeMaxMs: 100}, LogState{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceAppended(ProduceRequest{ID: 1, Acks: 1, Batch: Batch{BaseOffset: 0, LastOffset: 0, Epoch: 0}}); err != nil {
		t.Fatal(err)
	}
	p.Tick(50)
	p.FollowerFetch(FetchRequest{ReplicaID: 2, FetchOffset: 1, CurrentLeaderEpoch: 0, LastFetchedEpoch: 0})
	p.Ready()
	p.Tick(101)
	rd := p.Ready()
	if rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1, 2}) {
		t.Fatalf("at 101 ms: proposal %+v, want ISR [1 2]", rd.AlterPartition)
	}
	return p, *rd.AlterPartition
}

// wantISR checks the committed ISR, partition epoch and the proposal in
// flight (nil: none).
func wantISR(t *testing.T, p *Partition, when string, isr []int32, partitionEpoch int32, pending []int32) {
	t.Helper()
	st := p.Status()
	if !slices.Equal(st.ISR, isr) || st.PartitionEpoch != partitionEpoch || !slices.Equal(st.PendingISR, pending) {
		t.Fatalf("%s: ISR %v at partition epoch %d, pending %v; want %v at %d, pending %v",
			when, st.ISR, st.PartitionEpoch, st.PendingISR, isr, partitionEpoch, pending)
	}
}

// TestStaleAlterPartitionErrorIgnored: the leader proposes ISR A; the
// controller commits it but the answer is lost, and the committed state
// arrives as LeaderAndIsr; the leader proposes B. The retried A is then
// answered INVALID_UPDATE_VERSION: that answers A, not B, so B stays in
// flight (it used to be dropped and the leader fenced from proposing until
// the next metadata update) and B's own answer applies.
func TestStaleAlterPartitionErrorIgnored(t *testing.T) {
	p, a := proposingLeader(t)
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	p.FollowerFetch(FetchRequest{ReplicaID: 3, FetchOffset: 1, CurrentLeaderEpoch: 0, LastFetchedEpoch: 0})
	rd := p.Ready()
	if rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1, 2, 3}) || rd.AlterPartition.Proposal == a.Proposal {
		t.Fatalf("after follower 3 caught up: proposal %+v, want a new one for ISR [1 2 3]", rd.AlterPartition)
	}
	b := *rd.AlterPartition
	for _, err := range []error{kerr.InvalidUpdateVersion, kerr.FencedLeaderEpoch, kerr.IneligibleReplica} {
		if err := p.AlterPartitionResponse(a, AlterPartitionResponse{Err: err, PartitionEpoch: 1, ISR: []int32{1, 2}}); err != nil {
			t.Fatal(err)
		}
		wantISR(t, p, fmt.Sprintf("after a late %v for the older proposal", err), []int32{1, 2}, 1, []int32{1, 2, 3})
	}
	if err := p.AlterPartitionResponse(b, AlterPartitionResponse{PartitionEpoch: 2, ISR: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	wantISR(t, p, "after the current proposal's answer", []int32{1, 2, 3}, 2, nil)
}

// TestStaleAlterPartitionSuccessIgnored: the leader proposes ISR A = [1 2];
// its answer times out, so the leader goes back to the committed ISR and
// later proposes B = [1]. A's acceptance then arrives late: it must not
// install [1 2] over B (B stays in flight, the committed state arrives by
// LeaderAndIsr), and B's own rejection fences it until that metadata comes.
func TestStaleAlterPartitionSuccessIgnored(t *testing.T) {
	p, a := proposingLeader(t)
	// Follower 2 falls behind too: a new record it does not fetch.
	p.Tick(150)
	if err := p.ProduceAppended(ProduceRequest{ID: 2, Acks: 1, Batch: Batch{BaseOffset: 1, LastOffset: 1, Epoch: 0}}); err != nil {
		t.Fatal(err)
	}
	if err := p.AlterPartitionResponse(a, AlterPartitionResponse{Err: kerr.RequestTimedOut}); err != nil {
		t.Fatal(err)
	}
	p.Tick(200)
	rd := p.Ready()
	if rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1}) {
		t.Fatalf("at 200 ms: proposal %+v, want ISR [1]", rd.AlterPartition)
	}
	b := *rd.AlterPartition
	if err := p.AlterPartitionResponse(a, AlterPartitionResponse{PartitionEpoch: 1, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	wantISR(t, p, "after the older proposal's late acceptance", []int32{1, 2, 3}, 0, []int32{1})
	if err := p.AlterPartitionResponse(b, AlterPartitionResponse{Err: kerr.InvalidUpdateVersion, PartitionEpoch: 1, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	wantISR(t, p, "after the current proposal's rejection", []int32{1, 2, 3}, 0, nil)
	if p.Tick(250); p.Ready().AlterPartition != nil {
		t.Fatal("a proposal made before newer state arrived")
	}
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	p.Tick(300)
	if rd := p.Ready(); rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1}) || rd.AlterPartition.PartitionEpoch != 1 {
		t.Fatalf("after LeaderAndIsr: proposal %+v, want ISR [1] at partition epoch 1", rd.AlterPartition)
	}
}

// TestHWFrozenUnderMinISR is Kafka since 3.7 (KAFKA-15583,
// Partition.maybeIncrementLeaderHW and checkEnoughReplicasReachOffset):
// leader 1 of [1 2 3] with min.insync.replicas=2 holds an acks=all request
// the followers have not fetched; once the ISR shrinks to [1] the request
// is not failed at once (as NOT_ENOUGH_REPLICAS_AFTER_APPEND was before
// 3.7) but waits for the frozen HW and expires with REQUEST_TIMED_OUT; an
// acks=1 record appended meanwhile is acknowledged but stays above the HW
// even after a follower has fetched it, until the ISR is back at two.
func TestHWFrozenUnderMinISR(t *testing.T) {
	p, err := New(1, Config{MinInsyncReplicas: 2, ReplicaLagTimeMaxMs: 100}, LogState{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LeaderAndIsr(PartitionState{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceAppended(ProduceRequest{ID: 1, Acks: -1, Batch: Batch{BaseOffset: 0, LastOffset: 0, Epoch: 0}, DeadlineMs: 30_000}); err != nil {
		t.Fatal(err)
	}
	p.Tick(101)
	rd := p.Ready()
	if rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1}) {
		t.Fatalf("proposal %+v, want ISR [1]", rd.AlterPartition)
	}
	if err := p.AlterPartitionResponse(*rd.AlterPartition, AlterPartitionResponse{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if rd := p.Ready(); len(rd.Completed) != 0 {
		t.Fatalf("ISR below min.insync.replicas answered the waiting acks=all request at once: %+v (Kafka 3.7+ lets it wait)", rd.Completed)
	}
	// acks=1 is acknowledged; a follower fetching it cannot move the HW.
	if _, err := p.CheckProduce(1); err != nil {
		t.Fatalf("acks=1 under min ISR: %v", err)
	}
	if err := p.ProduceAppended(ProduceRequest{ID: 2, Acks: 1, Batch: Batch{BaseOffset: 1, LastOffset: 1, Epoch: 0}}); err != nil {
		t.Fatal(err)
	}
	if rd := p.Ready(); len(rd.Completed) != 1 || rd.Completed[0].ID != 2 || rd.Completed[0].Err != nil {
		t.Fatalf("acks=1 under min ISR: %+v, want acknowledged", rd.Completed)
	}
	p.Tick(200)
	p.FollowerFetch(FetchRequest{ReplicaID: 2, FetchOffset: 2, CurrentLeaderEpoch: 0, LastFetchedEpoch: 0})
	if hw := p.Status().HighWatermark; hw != 0 {
		t.Fatalf("HW %d under min ISR, want 0 (frozen)", hw)
	}
	expand := p.Ready().AlterPartition
	p.Tick(30_000)
	rd = p.Ready()
	if len(rd.Completed) != 1 || rd.Completed[0].ID != 1 || rd.Completed[0].Err != kerr.RequestTimedOut {
		t.Fatalf("at the deadline: %+v, want request 1 REQUEST_TIMED_OUT", rd.Completed)
	}
	// Broker 2 back in the ISR: the HW moves over both records.
	rd.AlterPartition = expand
	if rd.AlterPartition == nil || !slices.Equal(rd.AlterPartition.NewISR, []int32{1, 2}) {
		t.Fatalf("proposal %+v, want ISR [1 2]", rd.AlterPartition)
	}
	if err := p.AlterPartitionResponse(*rd.AlterPartition, AlterPartitionResponse{LeaderEpoch: 0, PartitionEpoch: 2, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if hw := p.Status().HighWatermark; hw != 2 {
		t.Fatalf("HW %d with the ISR back at min.insync.replicas, want 2", hw)
	}
}

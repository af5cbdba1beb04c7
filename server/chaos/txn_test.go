package chaos

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestTxnChaos runs the transactional workload (txn.go) under leader and
// coordinator crashes (before a transaction, in its middle, or during its
// EndTxn) for a few seeds and requires exactly-once under
// read_committed. TIDEMARK_TXN_SEEDS=n runs seeds 1..n instead (by hand).
func TestTxnChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes brokers of running labs")
	}
	n := 3
	if s := os.Getenv("TIDEMARK_TXN_SEEDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		res, err := RunTxns(ctx, TxnConfig{Seed: seed})
		cancel()
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		t.Logf("seed %d: %d committed, %d aborted, %d unknown, %d crashes, %d failed produces, %d records read, %s",
			seed, res.Committed, res.Aborted, res.Unknown, res.Crashes, res.FailedProduces, res.Read, res.Elapsed.Round(time.Millisecond))
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
	}
}

// TestCheckTxns: the checker finds each kind of violation.
func TestCheckTxns(t *testing.T) {
	records := []TxnRecord{
		{ID: 0, Outcome: TxnCommitted, Acked: []string{"a", "b"}, Sent: []string{"a", "b"}},
		{ID: 1, Outcome: TxnAborted, Acked: []string{"c"}, Sent: []string{"c"}},
		{ID: 2, Outcome: TxnUnknown, Acked: []string{"d", "e"}, Sent: []string{"d", "e"}},
		{ID: 3, Outcome: TxnUnknown, Acked: []string{"f"}, Sent: []string{"f"}},
	}
	if bad := CheckTxns(records, map[int32][]string{0: {"a", "d"}, 1: {"b", "e"}}); len(bad) != 0 {
		t.Fatalf("a clean read: %q", bad)
	}
	bad := CheckTxns(records, map[int32][]string{0: {"a", "c", "d", "x"}, 1: {"a"}})
	want := []string{"a read 2 times", "read records never sent", "transaction 0 was committed", "transaction 1 was aborted", "transaction 2 (its end unknown) was read in part"}
	if len(bad) != len(want) {
		t.Fatalf("violations %q, want %d", bad, len(want))
	}
	for i, w := range want {
		if len(bad[i]) < len(w) || bad[i][:len(w)] != w {
			t.Fatalf("violation %d is %q, want it to start %q", i, bad[i], w)
		}
	}
}

package chaos

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"tidemark/server/controller"
)

// TestCompare plays one seeded schedule on one topic per protocol and
// checks that every protocol's figures are there and agree with each
// other. Seed 3's 100 actions lost two acknowledged writes on the pipeline
// while its recovery let a power-lost member set the agreed length.
func TestCompare(t *testing.T) {
	const seed = 3
	actions := Generate(seed, DefaultActions)
	cmp, err := Compare(context.Background(), seed, actions, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Protocols) != len(Protocols) || len(cmp.Outcomes) != len(actions) || cmp.LatencyClock != "lab" {
		t.Fatalf("%d protocols, %d outcomes for %d actions, clock %q", len(cmp.Protocols), len(cmp.Outcomes), len(actions), cmp.LatencyClock)
	}
	for i, pr := range cmp.Protocols {
		t.Logf("%s: accepted %d/%d (%.2f), lost %d, latency p50 %.0f p99 %.0f ms (%d), messages %d %v for %d committed (%.1f each), replicas %s %v",
			pr.Protocol, pr.Accepted, pr.Attempted, pr.Availability, pr.Lost, pr.LatencyMs.P50, pr.LatencyMs.P99, pr.LatencyMs.N,
			pr.MessagesTotal, pr.Messages, pr.Committed, pr.MessagesPerRecord, pr.ReplicasFormula, pr.ReplicasFor)
		if pr.Protocol != Protocols[i] || pr.Skipped != "" {
			t.Errorf("column %d is %s, skipped %q", i, pr.Protocol, pr.Skipped)
		}
		if pr.Attempted == 0 || pr.Accepted == 0 || pr.Accepted > pr.Attempted {
			t.Errorf("%s: accepted %d of %d", pr.Protocol, pr.Accepted, pr.Attempted)
		}
		if pr.Lost != 0 {
			t.Errorf("%s lost %d acknowledged writes under strict settings: %+v", pr.Protocol, pr.Lost, pr.Losses)
		}
		if pr.MessagesTotal <= 0 || pr.Committed <= 0 || pr.MessagesPerRecord <= 0 {
			t.Errorf("%s: %d messages for %d committed records", pr.Protocol, pr.MessagesTotal, pr.Committed)
		}
		if pr.Committed > pr.Attempted+pr.Counts.Duplicated {
			t.Errorf("%s: %d records committed, more than the %d writes sent (%d duplicated)", pr.Protocol, pr.Committed, pr.Attempted, pr.Counts.Duplicated)
		}
		if pr.LatencyMs.N != pr.Accepted || pr.LatencyMs.P50 > pr.LatencyMs.P99 {
			t.Errorf("%s: latency %+v for %d accepted", pr.Protocol, pr.LatencyMs, pr.Accepted)
		}
		if want, _ := ReplicasNeeded(pr.Protocol, 1); len(pr.ReplicasFor) != 2 || pr.ReplicasFor[0].Replicas != want {
			t.Errorf("%s: replicas %v", pr.Protocol, pr.ReplicasFor)
		}
		if len(pr.Series) < len(actions) {
			t.Errorf("%s: %d samples for %d actions", pr.Protocol, len(pr.Series), len(actions))
		} else if last := pr.Series[len(pr.Series)-1]; last.Writes != pr.Attempted || last.Acked != pr.Accepted {
			t.Errorf("%s: last sample %+v, result %d/%d", pr.Protocol, last, pr.Accepted, pr.Attempted)
		}
	}
	if _, err := json.Marshal(cmp); err != nil {
		t.Fatal(err)
	}
}

// TestCompareSkipsRefusedProtocol: a protocol the controller does not
// accept is skipped with the reason, and the others run.
func TestCompareSkipsRefusedProtocol(t *testing.T) {
	ps, err := ParseProtocols([]string{"isr", "gossip"})
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(context.Background(), 1, Generate(1, 10), ps, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Protocols) != 2 || cmp.Protocols[0].Skipped != "" || cmp.Protocols[1].SkippedCode != "INVALID_CONFIG" || strings.Contains(cmp.Protocols[1].Skipped, "INVALID_CONFIG") || cmp.Protocols[1].Skipped == "" {
		t.Fatalf("%+v", cmp.Protocols)
	}
	if _, err := Compare(context.Background(), 1, Generate(1, 10), []controller.ReplicationProtocol{"gossip"}, Options{}); err == nil {
		t.Fatal("a comparison with no protocol the controller accepts ran")
	}
	for _, bad := range [][]string{{"isr", "isr"}, {"Quorum"}, {"a b"}, {strings.Repeat("x", 40)}} {
		if _, err := ParseProtocols(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReplicasNeeded(t *testing.T) {
	for _, c := range []struct {
		p       controller.ReplicationProtocol
		f, n    int
		formula string
	}{{controller.ProtocolISR, 1, 2, "f+1"}, {controller.ProtocolQuorum, 1, 3, "2f+1"}, {controller.ProtocolQuorum, 2, 5, "2f+1"}, {controller.ProtocolPipeline, 2, 3, "f+1"}, {"gossip", 1, -1, ""}} {
		if n, formula := ReplicasNeeded(c.p, c.f); n != c.n || formula != c.formula {
			t.Errorf("%s f=%d: %d %q, want %d %q", c.p, c.f, n, formula, c.n, c.formula)
		}
	}
}

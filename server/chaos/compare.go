package chaos

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/server/controller"
	"tidemark/server/kafkaerr"
)

// CompareTopicPrefix starts each comparison topic's name: compare-isr,
// compare-quorum.
const CompareTopicPrefix = "compare-"

// Comparison is a finished comparison run: the same seeded schedule played
// on one cluster with one topic per replication protocol, each with RF 3,
// acks=all and min.insync.replicas=2 (Strict), and each protocol's
// figures. Its JSON is the export.
type Comparison struct {
	Seed    uint64   `json:"seed"`
	Actions []Action `json:"actions"`
	// Outcomes is each action's outcome; a produce's names each topic's,
	// in the order of Protocols, space-separated.
	Outcomes     []string `json:"outcomes"`
	SettleRounds int      `json:"settle_rounds"`
	// LatencyClock says what the latencies measure: "lab", the lab clock,
	// which a stepped run moves only with the schedule's steps.
	LatencyClock string           `json:"latency_clock"`
	Protocols    []ProtocolResult `json:"protocols"`
	// Recording is the run's events for the stage to play back.
	Recording *Recording `json:"-"`
}

// ProtocolResult is one protocol's column of a comparison.
type ProtocolResult struct {
	Protocol controller.ReplicationProtocol `json:"protocol"`
	Topic    string                         `json:"topic"`
	// Skipped says why the protocol did not run (the controller refused
	// its topic), SkippedCode with Kafka's error name; the figures are
	// then zero.
	Skipped     string `json:"skipped,omitempty"`
	SkippedCode string `json:"skipped_code,omitempty"`
	// Attempted and Accepted count the acks=all writes sent and
	// acknowledged; Availability is Accepted/Attempted (0 without writes).
	Attempted    int     `json:"attempted"`
	Accepted     int     `json:"accepted"`
	Availability float64 `json:"availability"`
	// Lost counts acknowledged writes the checker found lost (power loss
	// before any fsync apart, in Counts.UnsyncedLost).
	Lost   int    `json:"lost"`
	Counts Counts `json:"counts"`
	Losses []Loss `json:"losses"`
	// LatencyMs is each acknowledged write's lab time from its first send
	// to its acknowledgement; LatencyActions the same in schedule actions.
	LatencyMs      Percentiles `json:"latency_ms"`
	LatencyActions Percentiles `json:"latency_actions"`
	// ReplicasFormula and ReplicasFor are the replicas the protocol needs
	// to survive f failed brokers (ReplicasNeeded), for f = 1 and 2.
	ReplicasFormula string         `json:"replicas_formula"`
	ReplicasFor     []FailureNeeds `json:"replicas_for"`
	// Messages counts the replication messages the lab's links carried for
	// the protocol from the schedule's start to the end of settling, by
	// kind (heartbeats not counted); Committed is the records a consumer
	// read back; MessagesPerRecord is their ratio (0 when none committed).
	Messages          map[string]int64 `json:"messages"`
	MessagesTotal     int64            `json:"messages_total"`
	Committed         int              `json:"committed"`
	MessagesPerRecord float64          `json:"messages_per_committed_record"`
	// Series is the protocol's live counts after every action and settle
	// round, for the charts.
	Series []Sample `json:"series"`
	// Writes is every write to the topic as it ended.
	Writes []Write `json:"writes"`
}

// Percentiles are the 50th and 99th percentiles of N values (nearest
// rank); zero when N is 0.
type Percentiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// FailureNeeds is how many replicas survive F failures.
type FailureNeeds struct {
	F        int `json:"f"`
	Replicas int `json:"replicas"`
}

// Sample is one protocol's counts after an action (or settle round).
type Sample struct {
	Action int `json:"action"`
	Writes int `json:"writes"`
	Acked  int `json:"acked"`
	Lost   int `json:"lost"`
}

// ReplicasNeeded returns how many replicas protocol p needs so that f
// failed brokers lose no acknowledged write, and the formula: f+1 for isr
// (acks=all waits for every in-sync replica, and any of them may lead) and
// pipeline (every datanode of the pipeline has the block before the
// acknowledgement), 2f+1 for quorum (a write commits on a majority, and a
// majority must be left to elect and commit). -1 and "" for a protocol it
// does not know.
func ReplicasNeeded(p controller.ReplicationProtocol, f int) (int, string) {
	switch p {
	case controller.ProtocolISR, controller.ProtocolPipeline:
		return f + 1, "f+1"
	case controller.ProtocolQuorum:
		return 2*f + 1, "2f+1"
	}
	return -1, ""
}

// protocolName is what a protocol name may look like (it names a topic).
var protocolName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// ParseProtocols checks the protocols a comparison is asked for: nil or
// empty is Protocols; INVALID_REQUEST for a repeated name or one that
// cannot name a topic. A name the controller does not accept is not an
// error here: the comparison skips it and says why.
func ParseProtocols(names []string) ([]controller.ReplicationProtocol, error) {
	if len(names) == 0 {
		return slices.Clone(Protocols), nil
	}
	if len(names) > 8 {
		return nil, kafkaerr.WithKey(fmt.Errorf("%w: %d protocols; at most 8", kerr.InvalidRequest, len(names)),
			"chaos.refused.protocols", strconv.Itoa(len(names)))
	}
	var out []controller.ReplicationProtocol
	for _, n := range names {
		p := controller.ReplicationProtocol(n)
		switch {
		case !protocolName.MatchString(n):
			return nil, kafkaerr.WithKey(fmt.Errorf("%w: protocol %s: lowercase letters, digits and '-', at most 32", kerr.InvalidRequest, kafkaerr.Quote(n)),
				"chaos.refused.protocol-name", kafkaerr.Quote(n))
		case slices.Contains(out, p):
			return nil, kafkaerr.WithKey(fmt.Errorf("%w: protocol %q named twice", kerr.InvalidRequest, n),
				"chaos.refused.protocol-twice", strconv.Quote(n))
		}
		out = append(out, p)
	}
	return out, nil
}

// Compare plays actions once on a fresh cluster with one topic per
// protocol, each under Strict, and returns every protocol's figures. A
// protocol whose topic the controller refuses (replication.protocol not
// accepted) is skipped, with the reason; INVALID_CONFIG if all are.
func Compare(ctx context.Context, seed uint64, actions []Action, protocols []controller.ReplicationProtocol, o Options) (*Comparison, error) {
	if err := validActions(actions); err != nil {
		return nil, err
	}
	ts, err := RunTopics(ctx, seed, Strict.spec(), CompareTopics(protocols), actions, o)
	if err != nil {
		return nil, err
	}
	return ComparisonOf(seed, actions, ts), nil
}

// CompareTopics are a comparison's topics: one per protocol (nil:
// Protocols), compare-PROTOCOL, each under StrictOn(protocol).
func CompareTopics(protocols []controller.ReplicationProtocol) []TopicSpec {
	if len(protocols) == 0 {
		protocols = Protocols
	}
	var out []TopicSpec
	for _, p := range protocols {
		out = append(out, TopicSpec{Name: CompareTopicPrefix + string(p), Configs: StrictOn(p).TopicConfigs()})
	}
	return out
}

// ComparisonOf is a finished run of several topics as a comparison: a
// column per topic.
func ComparisonOf(seed uint64, actions []Action, ts *Topics) *Comparison {
	cmp := &Comparison{Seed: seed, Actions: actions, LatencyClock: "lab", Outcomes: ts.Outcomes, SettleRounds: ts.SettleRounds, Recording: ts.Recording}
	for _, t := range ts.Topics {
		cmp.Protocols = append(cmp.Protocols, t.Column)
	}
	return cmp
}

// addSamples adds a progress report's per-topic counts to series (by
// topic name).
func addSamples(series map[string][]Sample, p Progress) {
	if p.Phase != PhaseSchedule && p.Phase != PhaseSettle {
		return
	}
	for _, pc := range p.Protocols {
		series[pc.Topic] = append(series[pc.Topic], Sample{Action: p.Action, Writes: pc.Counts.Writes, Acked: pc.Counts.Acked, Lost: pc.Counts.Lost})
	}
}

// result is the topic's column: before and after are the links' message
// counts for its protocol when the schedule started and at the end.
func (t *topicRun) result(before, after map[string]int64) ProtocolResult {
	pr := ProtocolResult{Protocol: t.protocol, Topic: t.name, Losses: []Loss{}, Messages: map[string]int64{}, Series: []Sample{}, Writes: []Write{}}
	for _, f := range []int{1, 2} {
		n, formula := ReplicasNeeded(t.protocol, f)
		pr.ReplicasFormula = formula
		pr.ReplicasFor = append(pr.ReplicasFor, FailureNeeds{F: f, Replicas: n})
	}
	if t.created != nil {
		pr.Skipped, pr.SkippedCode = kafkaerr.Detail(t.created.Error()), kafkaName(t.created)
		return pr
	}
	writes := t.results()
	pr.Writes = writes
	rep := t.check(writes)
	pr.Counts = rep.Counts()
	pr.Attempted, pr.Accepted, pr.Lost, pr.Losses = pr.Counts.Writes, pr.Counts.Acked, pr.Counts.Lost, rep.Lost
	if pr.Attempted > 0 {
		pr.Availability = float64(pr.Accepted) / float64(pr.Attempted)
	}
	pr.LatencyMs, pr.LatencyActions = Latencies(writes)
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			pr.Messages[k] = d
			pr.MessagesTotal += d
		}
	}
	for _, recs := range t.final.Consumed {
		pr.Committed += len(recs)
	}
	if pr.Committed > 0 {
		pr.MessagesPerRecord = float64(pr.MessagesTotal) / float64(pr.Committed)
	}
	return pr
}

// Latencies returns the acknowledged writes' latencies: lab time and
// schedule actions from the first send to the acknowledgement.
func Latencies(writes []Write) (ms, actions Percentiles) {
	var m, a []float64
	for _, w := range writes {
		if w.Acked {
			m = append(m, float64(w.AckedMs-w.SentMs))
			a = append(a, float64(w.AckedAction-w.SentAction))
		}
	}
	return percentiles(m), percentiles(a)
}

// percentiles returns the 50th and 99th percentiles of xs (nearest rank).
func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Sorted(slices.Values(xs))
	rank := func(q float64) float64 { return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)] }
	return Percentiles{N: len(s), P50: rank(0.50), P99: rank(0.99)}
}

package lessons

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"tidemark/replication"
	"tidemark/server/cluster"
	"tidemark/storage"
)

// The scenario tests' part of the vocabulary: a replica's own view of its
// partition (role, epoch, ISR, epoch cache, records) on both back-ends,
// and on the pure rules alone what happened in the last action (each
// fetch, ISR proposal, controller answer, truncation and election), so a
// scenario checks every step of a KIP-101 story fetch by fetch.

// rulesOnlyActions and rulesOnlyQueries exist on the rules back-end only.
var (
	rulesOnlyActions = map[string]bool{}
	rulesOnlyQueries = map[string]bool{}
)

// rulesCheckpointKey is a create-topic option of the rules back-end:
// replica.high.watermark.checkpoint.interval.ms=0 checkpoints every HW
// change at once; by default only do checkpoint writes it, as on the lab.
const rulesCheckpointKey = "replica.high.watermark.checkpoint.interval.ms"

// statusQueries read a replica's replication.Status; "down" when it is not
// running. They run on both back-ends.
var statusQueries = map[string]func(s replication.Status) Value{
	"role":          func(s replication.Status) Value { return str(s.Role.String()) },
	"replica-epoch": func(s replication.Status) Value { return num(int64(s.LeaderEpoch)) },
	"replica-isr":   func(s replication.Status) Value { return ints32(s.ISR) },
	"pending-isr":   func(s replication.Status) Value { return ints32(s.PendingISR) },
	"epoch-start":   func(s replication.Status) Value { return num(s.EpochStartOffset) },
	"epoch-cache": func(s replication.Status) Value {
		return list(mapS(s.EpochCache, func(e replication.EpochEntry) string { return fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset) }))
	},
}

// recText is a record as the scenario queries write it: OFFSET:value/eEPOCH.
func recText(offset int64, value string, epoch int32) string {
	return fmt.Sprintf("%d:%s/e%d", offset, value, epoch)
}

// timeoutOf is a produce's timeout=MS option; 30 s without it.
func timeoutOf(opt map[string]string) time.Duration {
	if ms, err := strconv.Atoi(opt["timeout"]); err == nil {
		return time.Duration(ms) * time.Millisecond
	}
	return 30 * time.Second
}

// topicArg is the position of a query's topic argument.
func topicArg(args string) int { return slices.Index(strings.Fields(args), "topic") }

// addScenarioVocab registers the above in both back-ends' vocabularies.
func addScenarioVocab() {
	for name, f := range statusQueries {
		queries[name] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
			st, ok := e.Status(id(a[0]), a[1])
			if !ok {
				return str("down"), nil
			}
			return f(st), nil
		}}
	}
	notOnCluster := func(*Env, []string) (Value, error) { return Value{}, fmt.Errorf("only on the rules back-end") }
	for name, args := range RulesLastQueries {
		queries[name] = querySpec{args, notOnCluster}
		rulesOnlyQueries[name] = true
	}
	// Queries of the rules' disk and clock, which the lab shows otherwise.
	for name, args := range map[string]string{"clock": "", "config": "topic word", "flushed": "broker topic",
		"disk-records": "broker topic", "fenced": "broker topic", "isolated": "broker topic", "consumed-records": "topic"} {
		queries[name] = querySpec{args, notOnCluster}
		rulesOnlyQueries[name] = true
	}
	for name, args := range map[string]string{"notice": "broker+", "elect": "broker"} {
		actions[name] = actionSpec{args, nil, rulesOnly}
		rulesOnlyActions[name] = true
	}

	queries["partition-epoch"] = querySpec{"topic", func(e *Env, a []string) (Value, error) {
		return num(int64(e.Meta(a[0]).PartitionEpoch)), nil
	}}
	queries["records"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		return list(mapS(e.Records(id(a[0]), a[1]), func(r Rec) string { return recText(r.Offset, r.Value, r.Epoch) })), nil
	}}
	queries["leader-records"] = querySpec{"topic", func(e *Env, a []string) (Value, error) {
		return queries["records"].get(e, []string{strconv.Itoa(int(e.Meta(a[0]).Leader)), a[0]})
	}}
	queries["record-at"] = querySpec{"broker topic int", func(e *Env, a []string) (Value, error) {
		off, _ := strconv.ParseInt(a[2], 10, 64)
		for _, r := range e.Records(id(a[0]), a[1]) {
			if r.Offset == off {
				return str(fmt.Sprintf("%s/e%d", r.Value, r.Epoch)), nil
			}
		}
		return str("none"), nil
	}}
	queries["truncated-records"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		return list(mapS(e.Truncated(id(a[0]), a[1]), func(r eventsTruncated) string {
			return recText(r.Offset, e.valueOf(r.Digest), r.LeaderEpoch)
		})), nil
	}}
	queries["event-about"] = querySpec{"topic word+", func(e *Env, a []string) (Value, error) {
		// The newest event of the topic whose message holds the words.
		want := strings.Join(a[1:], " ")
		evs, _ := e.c.Bus().Since(e.start, 0)
		for i := len(evs) - 1; i >= 0; i-- {
			if evs[i].Topic == a[0] && strings.Contains(evs[i].Message, want) {
				return str(evs[i].Message), nil
			}
		}
		return str("none"), nil
	}}
	queries["consumed-hw"] = querySpec{"topic", func(e *Env, a []string) (Value, error) { return num(e.consumedHW[a[0]]), nil }}
	queries["visible-hw"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		hw, ok, err := e.visibleHW(a[1], id(a[0]))
		if err != nil || !ok {
			return str("none"), err
		}
		return num(hw), nil
	}}
	queries["leader-knows"] = querySpec{"topic", func(e *Env, a []string) (Value, error) {
		m := e.Meta(a[0])
		st, ok := e.Status(m.Leader, a[0])
		return truth(ok && st.Role == replication.RoleLeader && st.LeaderEpoch == m.LeaderEpoch), nil
	}}
	actions["send-to"] = actionSpec{"broker topic word key=value*", []string{"timeout"}, func(e *Env, a []string, opt map[string]string) error {
		// An acks=all produce to a given broker, as a client with stale
		// metadata sends it; the answer comes later (await).
		batch := storage.NewBatch([]storage.Record{{Value: []byte(a[2]), Timestamp: e.c.Clock().Now().UnixMilli()}})
		p, err := e.produceBytesTo(id(a[0]), a[1], a[2], batch, timeoutOf(opt))
		if err != nil {
			return err
		}
		e.setResult(a[1], a[2], &result{pending: p})
		return nil
	}}
	queries["same-logs"] = querySpec{"topic", func(e *Env, a []string) (Value, error) { return truth(e.sameLogs(a[0])), nil }}
	actions["isolate"] = actionSpec{"broker", nil, func(e *Env, a []string, _ map[string]string) error {
		for n := int32(cluster.ControllerNode); n <= int32(len(e.c.BrokerIDs())); n++ {
			if n != id(a[0]) {
				if err := e.c.Cut(id(a[0]), n, false); err != nil {
					return err
				}
			}
		}
		e.wait()
		return nil
	}}
}

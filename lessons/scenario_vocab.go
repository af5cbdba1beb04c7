package lessons

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"tidemark/replication"
	"tidemark/replication/rulestest"
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

// lastQueries read what happened in the rules' last action, for broker
// a[0] (or the topic's controller), from the records rulestest keeps.
var lastQueries = map[string]struct {
	args string
	get  func(r *rulesEnv, c *rulestest.Cluster, a []string) Value
}{
	"fetch-offset": {"broker topic", lastFetch(func(f rulestest.Fetch) Value { return num(f.Offset) })},
	"fetch-epoch":  {"broker topic", lastFetch(func(f rulestest.Fetch) Value { return num(int64(f.LastEpoch)) })},
	"fetch-from":   {"broker topic", lastFetch(func(f rulestest.Fetch) Value { return num(int64(f.Leader)) })},
	"fetched":      {"broker topic", lastFetch(func(f rulestest.Fetch) Value { return list(f.Records) })},
	"fetch-hw":     {"broker topic", lastFetch(func(f rulestest.Fetch) Value { return num(f.HW) })},
	"fetch-error":  {"broker topic", lastFetch(func(f rulestest.Fetch) Value { return errValue(f.Err) })},
	"fetch-log": {"broker topic", lastFetch(func(f rulestest.Fetch) Value {
		return str(fmt.Sprintf("[%d,%d)", f.LogStart, f.LogEnd))
	})},
	"fetch-diverging": {"broker topic", lastFetch(func(f rulestest.Fetch) Value {
		if f.Diverging == "" {
			return str("none")
		}
		return str(f.Diverging)
	})},
	"truncated-to":      {"broker topic", lastTruncation(func(t rulestest.Truncation) Value { return num(t.To) })},
	"truncation-rule":   {"broker topic", lastTruncation(func(t rulestest.Truncation) Value { return str(t.Rule) })},
	"truncation-cause":  {"broker topic", lastTruncation(func(t rulestest.Truncation) Value { return str(t.Cause) })},
	"truncation-reason": {"broker topic", lastTruncation(func(t rulestest.Truncation) Value { return str(t.Reason) })},
	"proposed":          {"broker topic", lastProposal(func(p rulestest.Proposal) Value { return ints32(p.ISR) })},
	"proposed-epoch":    {"broker topic", lastProposal(func(p rulestest.Proposal) Value { return num(int64(p.PartitionEpoch)) })},
	"proposal-queued":   {"broker topic", lastProposal(func(p rulestest.Proposal) Value { return truth(p.Queued) })},
	"happened": {"topic", func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
		return list(c.Happened[r.mark(a[0]).happened:])
	}},
	"alter-error": {"topic", lastAlter(func(x rulestest.AlterAnswer) Value { return errValue(x.Err) })},
	"alter-isr":   {"topic", lastAlter(func(x rulestest.AlterAnswer) Value { return ints32(x.Request.NewISR) })},
	"alter-leader-epoch": {"topic", lastAlter(func(x rulestest.AlterAnswer) Value {
		return num(int64(x.Request.LeaderEpoch))
	})},
	"alter-partition-epoch": {"topic", lastAlter(func(x rulestest.AlterAnswer) Value {
		return num(int64(x.Request.PartitionEpoch))
	})},
	"election": {"topic", func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
		es := c.Elections[r.mark(a[0]).elections:]
		switch {
		case len(es) == 0:
			return str("none")
		case es[len(es)-1].Leader < 0:
			return str("offline")
		case es[len(es)-1].Unclean:
			return str("unclean")
		}
		return str("clean")
	}},
}

// marks are the lengths of a topic's rulestest records when the current
// action began: the queries above read what came after.
type marks struct{ fetches, proposals, alters, truncations, elections, happened int }

func (r *rulesEnv) mark(topic string) marks { return r.marks[topic] }

// setMarks starts a new action.
func (r *rulesEnv) setMarks() {
	for t, c := range r.topics {
		r.marks[t] = marks{len(c.Fetches), len(c.Proposals), len(c.Alters), len(c.Truncations), len(c.Elections), len(c.Happened)}
	}
}

func lastFetch(f func(rulestest.Fetch) Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
		fs := c.Fetches[r.mark(a[1]).fetches:]
		for i := len(fs) - 1; i >= 0; i-- {
			if fs[i].Broker == id(a[0]) {
				return f(fs[i])
			}
		}
		return str("no fetch")
	}
}

// lastAlter reads the controller's last answer to an ISR proposal.
func lastAlter(f func(rulestest.AlterAnswer) Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
		as := c.Alters[r.mark(a[0]).alters:]
		if len(as) == 0 {
			return str("no answer")
		}
		return f(as[len(as)-1])
	}
}

func lastTruncation(f func(rulestest.Truncation) Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
		ts := c.Truncations[r.mark(a[1]).truncations:]
		for i := len(ts) - 1; i >= 0; i-- {
			if ts[i].Broker == id(a[0]) {
				return f(ts[i])
			}
		}
		return str("no truncation")
	}
}

func lastProposal(f func(rulestest.Proposal) Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) Value {
		ps := c.Proposals[r.mark(a[1]).proposals:]
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i].Broker == id(a[0]) {
				return f(ps[i])
			}
		}
		return str("no proposal")
	}
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
		rulesQueries[name] = func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[1])
			if err != nil {
				return Value{}, err
			}
			st, ok := c.Status(id(a[0]))
			if !ok {
				return str("down"), nil
			}
			return f(st), nil
		}
	}
	notOnCluster := func(*Env, []string) (Value, error) { return Value{}, fmt.Errorf("only on the rules back-end") }
	for name, q := range lastQueries {
		queries[name] = querySpec{q.args, notOnCluster}
		rulesOnlyQueries[name] = true
		rulesQueries[name] = func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[topicArg(q.args)])
			if err != nil {
				return Value{}, err
			}
			return q.get(r, c, a), nil
		}
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

package rulesplay

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"tidemark/lessons"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
	"tidemark/invariant"
	"tidemark/replication"
	"tidemark/replication/rulestest"
)

// The pure rules' back-end: the same actions and queries, played on
// rulestest.Cluster (replication.Partition state machines with in-memory
// logs and a tiny ZooKeeper-era controller) instead of a lab cluster. Each
// topic is its own rulestest.Cluster with every broker as a replica of its
// one partition, so a script can tell two truncation rules side by side.
// Only the vocabulary below exists here; a script that runs on the rules
// says so (backends rules cluster) and the parser refuses an action or a
// query this back-end lacks.

// rulesSession is broker.session.timeout.ms in the lab (its default):
// the rules' controller notices a stopped broker once it passed.
const rulesSession = 2 * time.Second

// rulesEnv is one run of a script on the rules.
type rulesEnv struct {
	brokers int
	topics  map[string]*rulestest.Cluster
	order   []string                    // topics in creation order
	log     map[string]*strings.Builder // each topic's transcript
	now     time.Duration
	// downSince: brokers stopped that the controller has not noticed yet.
	downSince map[int32]time.Duration
	sent      map[string]bool
	marks     map[string]marks // see setMarks
	isolated  map[int32]bool
	// What each topic's last consume read, the HW it was told and its error.
	consumed   map[string][]rulestest.Record
	consumedHW map[string]int64
	consumeErr map[string]error
}

func newRulesEnv(brokers int) *rulesEnv {
	return &rulesEnv{brokers: brokers, topics: map[string]*rulestest.Cluster{}, log: map[string]*strings.Builder{},
		downSince: map[int32]time.Duration{}, sent: map[string]bool{}, marks: map[string]marks{}, isolated: map[int32]bool{},
		consumed: map[string][]rulestest.Record{}, consumedHW: map[string]int64{}, consumeErr: map[string]error{}}
}

func (r *rulesEnv) topic(name string) (*rulestest.Cluster, error) {
	c := r.topics[name]
	if c == nil {
		return nil, fmt.Errorf("no topic %s", name)
	}
	return c, nil
}

// each runs f on every topic's cluster, in creation order.
func (r *rulesEnv) each(f func(c *rulestest.Cluster) error) error {
	for _, t := range r.order {
		if err := f(r.topics[t]); err != nil {
			return fmt.Errorf("topic %s: %w", t, err)
		}
	}
	return nil
}

func (r *rulesEnv) run(cmd string, args ...string) error {
	pos, kv := rulestest.ParseArgs(args)
	return r.each(func(c *rulestest.Cluster) error { return c.Run(cmd, pos, kv) })
}

// violations lists the invariants a setting may break that topic broke so
// far, named as in an expect line ("lost m2", "diverged 1").
func (r *rulesEnv) violations(topic string) []string {
	c := r.topics[topic]
	if c == nil {
		return nil
	}
	var out []string
	for _, v := range c.Violations {
		out = append(out, v.Key())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lanes is every topic's transcript and lanes, for a failing scenario.
func (r *rulesEnv) lanes() string {
	var b strings.Builder
	for _, t := range r.order {
		fmt.Fprintf(&b, "topic %s:\n%s\n%s\n", t, strings.TrimRight(r.log[t].String(), "\n"), r.topics[t].Lanes())
	}
	return b.String()
}

// check runs the harness's invariants; a structural one broken fails.
func (r *rulesEnv) check() error {
	return r.each(func(c *rulestest.Cluster) error {
		c.Check()
		if errs := c.Errs(); len(errs) > 0 {
			return fmt.Errorf("invariant broken: %s", strings.Join(errs, "; "))
		}
		return nil
	})
}

type rulesAction func(r *rulesEnv, a []string, opt map[string]string) error

type rulesQuery func(r *rulesEnv, a []string) (lessons.Value, error)

var rulesActions map[string]rulesAction

var rulesQueries map[string]rulesQuery

// rulesProduce sends value with the lab's produce timeout (30 s, the
// cluster back-end's too), so an acks=all request under a frozen HW
// expires with REQUEST_TIMED_OUT on both.
func rulesProduce(r *rulesEnv, topic, value, acks string) error {
	r.sent[value] = true
	return r.topics[topic].Run("produce", nil, map[string]string{"value": value, "acks": acks, "timeout": "30000"})
}

func rulesResult(r *rulesEnv, a []string) (*rulestest.ProduceResult, error) {
	c, err := r.topic(a[0])
	if err != nil {
		return nil, err
	}
	res := c.Result(a[1])
	if res == nil {
		return nil, fmt.Errorf("%s was never sent to %s", a[1], a[0])
	}
	return res, nil
}

func rulesStatus(f func(s replication.Status) int64) rulesQuery {
	return rulesStatusValue(func(s replication.Status) lessons.Value { return lessons.Num(f(s)) })
}

// rulesStatusValue reads broker a[0]'s replica of topic a[1]: "down" when
// it is not running.
func rulesStatusValue(f func(s replication.Status) lessons.Value) rulesQuery {
	return func(r *rulesEnv, a []string) (lessons.Value, error) {
		c, err := r.topic(a[1])
		if err != nil {
			return lessons.Value{}, err
		}
		st, ok := c.Status(lessons.BrokerID(a[0]))
		if !ok {
			return lessons.Str("down"), nil
		}
		return f(st), nil
	}
}

func rulesMeta(f func(m replication.PartitionState) lessons.Value) rulesQuery {
	return func(r *rulesEnv, a []string) (lessons.Value, error) {
		c, err := r.topic(a[0])
		if err != nil {
			return lessons.Value{}, err
		}
		return f(c.Meta()), nil
	}
}

// rulesValues is what a replica's log holds; nothing when it is down, as
// on the lab (whose query reads the running replica).
func rulesValues(r *rulesEnv, broker int32, topic string) ([]string, error) {
	c, err := r.topic(topic)
	if err != nil {
		return nil, err
	}
	if !c.Up(broker) {
		return nil, nil
	}
	return c.Values(broker), nil
}

func init() {
	rulesActions = map[string]rulesAction{
		"create-topic": func(r *rulesEnv, a []string, opt map[string]string) error {
			if r.topics[a[0]] != nil {
				return fmt.Errorf("topic %s exists", a[0])
			}
			kv := map[string]string{}
			for k, v := range opt {
				switch k {
				case "rf":
					if v != strconv.Itoa(r.brokers) {
						return fmt.Errorf("the rules back-end replicates to every broker: rf=%s, want %d", v, r.brokers)
					}
				case "partitions":
					if v != "1" {
						return fmt.Errorf("the rules back-end has one partition per topic")
					}
				case "min.insync.replicas":
					kv["min-isr"] = v
				case "unclean.leader.election.enable":
					kv["unclean"] = v
				case "truncation.rule":
					kv["rule"] = v
				case "replica.lag.time.max.ms":
					kv["lag"] = v
				case lessons.RulesCheckpointKey:
					if v != "0" {
						return fmt.Errorf("%s: want 0 (every HW change) or no option (do checkpoint)", k)
					}
				default:
					return fmt.Errorf("the rules back-end has no topic config %s", k)
				}
			}
			c := rulestest.New(r.brokers, replication.DefaultConfig(), false)
			c.ExplicitCheckpoints = opt[lessons.RulesCheckpointKey] == ""
			c.Render = englishReason
			r.log[a[0]] = &strings.Builder{}
			c.SetOutput(r.log[a[0]])
			if err := c.SetConfig(kv); err != nil {
				return err
			}
			r.topics[a[0]] = c
			r.order = append(r.order, a[0])
			return nil
		},
		"produce": func(r *rulesEnv, a []string, opt map[string]string) error {
			if _, ok := opt["timestamp"]; ok {
				return fmt.Errorf("the rules back-end keeps no timestamps: produce takes no timestamp")
			}
			acks := opt["acks"]
			if acks == "" {
				acks = "1"
			}
			return rulesProduce(r, a[0], a[1], acks)
		},
		"send": func(r *rulesEnv, a []string, _ map[string]string) error { return rulesProduce(r, a[0], a[1], "all") },
		"await": func(r *rulesEnv, a []string, _ map[string]string) error {
			// The rules answer within the fetch that decides; nothing waits.
			for _, v := range a[1:] {
				res, err := rulesResult(r, []string{a[0], v})
				if err != nil {
					return err
				}
				if !res.Answered {
					return fmt.Errorf("await %s: the producer of %s is still waiting (no fetch has acknowledged it)", a[0], v)
				}
			}
			return nil
		},
		"fetch": func(r *rulesEnv, a []string, _ map[string]string) error {
			for _, b := range a {
				if err := r.each(func(c *rulestest.Cluster) error {
					if st, ok := c.Status(lessons.BrokerID(b)); ok && st.Role == replication.RoleFollower {
						return c.Run("fetch", []string{b}, nil)
					}
					return nil
				}); err != nil {
					return err
				}
			}
			return nil
		},
		"settle": func(r *rulesEnv, _ []string, _ map[string]string) error { return r.run("sync") },
		"notice": func(r *rulesEnv, a []string, _ map[string]string) error {
			// The controller notices now what a session timeout would tell it.
			for _, b := range lessons.BrokerIDs(a) {
				delete(r.downSince, b)
				_ = r.each(func(c *rulestest.Cluster) error { c.Lost(b); return nil })
			}
			return nil
		},
		"isolate": func(r *rulesEnv, a []string, _ map[string]string) error {
			b := lessons.BrokerID(a[0])
			r.downSince[b], r.isolated[b] = r.now, true
			return r.each(func(c *rulestest.Cluster) error { return c.Isolate(b) })
		},
		"heal": func(r *rulesEnv, _ []string, _ map[string]string) error {
			for b := range r.isolated {
				delete(r.downSince, b)
			}
			clear(r.isolated)
			return r.each(func(c *rulestest.Cluster) error { c.HealAll(); return nil })
		},
		"elect": func(r *rulesEnv, a []string, _ map[string]string) error {
			return r.each(func(c *rulestest.Cluster) error { return c.Elect(lessons.BrokerID(a[0])) })
		},
		"send-to": func(r *rulesEnv, a []string, opt map[string]string) error {
			return rulesActions["produce-to"](r, a, map[string]string{"acks": "all", "timeout": opt["timeout"]})
		},
		"produce-to": func(r *rulesEnv, a []string, opt map[string]string) error {
			acks := opt["acks"]
			if acks == "" {
				acks = "1"
			}
			r.sent[a[2]] = true
			kv := map[string]string{"value": a[2], "acks": acks, "to": a[0]}
			if t := opt["timeout"]; t != "" {
				kv["timeout"] = t
			}
			return r.topics[a[1]].Run("produce", nil, kv)
		},
		"consume": func(r *rulesEnv, a []string, opt map[string]string) error {
			// What a consumer of the leader reads: its log below its HW.
			if _, ok := opt["isolation"]; ok {
				return fmt.Errorf("the rules back-end has no transactions: consume takes no isolation")
			}
			c, err := r.topic(a[0])
			if err != nil {
				return err
			}
			from := int64(0)
			if len(a) > 1 {
				from, _ = strconv.ParseInt(a[1], 10, 64)
			}
			r.consumed[a[0]], r.consumedHW[a[0]], r.consumeErr[a[0]] = nil, 0, nil
			if st, ok := c.Status(c.Meta().Leader); ok {
				r.consumedHW[a[0]] = st.HighWatermark
				r.consumed[a[0]] = c.Log(st.BrokerID)[min(from, st.HighWatermark):st.HighWatermark]
			}
			switch m := c.Meta(); {
			case m.Leader < 0:
				r.consumeErr[a[0]] = kerr.LeaderNotAvailable
			case !c.Up(m.Leader):
				r.consumeErr[a[0]] = kerr.NotLeaderForPartition
			}
			return nil
		},
		"crash":   func(r *rulesEnv, a []string, _ map[string]string) error { return r.kill(a, false) },
		"restart": func(r *rulesEnv, a []string, _ map[string]string) error { return r.start(a) },
		"power-loss": func(r *rulesEnv, a []string, _ map[string]string) error {
			return r.kill(a, true)
		},
		"step": func(r *rulesEnv, a []string, _ map[string]string) error {
			d, _ := time.ParseDuration(a[0])
			r.now += d
			if err := r.run("tick", strconv.FormatInt(d.Milliseconds(), 10)); err != nil {
				return err
			}
			// The controller notices the brokers whose session expired.
			var lost []int32
			for b, since := range r.downSince {
				if r.now-since >= rulesSession {
					lost = append(lost, b)
				}
			}
			slices.Sort(lost)
			for _, b := range lost {
				delete(r.downSince, b)
				_ = r.each(func(c *rulestest.Cluster) error { c.Lost(b); return nil })
			}
			return nil
		},
		"checkpoint": func(r *rulesEnv, a []string, _ map[string]string) error {
			return r.each(func(c *rulestest.Cluster) error {
				for _, b := range lessons.BrokerIDs(a) {
					c.Checkpoint(b)
				}
				return nil
			})
		},
		"flush": func(r *rulesEnv, a []string, _ map[string]string) error {
			for _, b := range a {
				if err := r.run("flush", b); err != nil {
					return err
				}
			}
			return nil
		},
		"alter": func(r *rulesEnv, a []string, _ map[string]string) error {
			c, err := r.topic(a[0])
			if err != nil {
				return err
			}
			key := rulesConfigKeys[a[1]]
			if key == "" {
				return fmt.Errorf("the rules back-end has no topic config %s", a[1])
			}
			return c.SetConfig(map[string]string{key: a[2]})
		},
		// lanes, say and the pointers show the lab's panel; on the rules
		// the transcript holds everything.
		"lanes":           func(*rulesEnv, []string, map[string]string) error { return nil },
		"point-log":       func(*rulesEnv, []string, map[string]string) error { return nil },
		"point-truncated": func(*rulesEnv, []string, map[string]string) error { return nil },
		"point-replica":   func(*rulesEnv, []string, map[string]string) error { return nil },
	}
	rulesQueries = map[string]rulesQuery{
		"leo": rulesStatus(func(s replication.Status) int64 { return s.LogEndOffset }),
		"hw":  rulesStatus(func(s replication.Status) int64 { return s.HighWatermark }),
		"values": func(r *rulesEnv, a []string) (lessons.Value, error) {
			v, err := rulesValues(r, lessons.BrokerID(a[0]), a[1])
			return lessons.List(v), err
		},
		"value-at": func(r *rulesEnv, a []string) (lessons.Value, error) {
			v, err := rulesValues(r, lessons.BrokerID(a[0]), a[1])
			off, _ := strconv.Atoi(a[2])
			if err != nil || off < 0 || off >= len(v) {
				return lessons.Str("none"), err
			}
			return lessons.Str(v[off]), nil
		},
		"leader-values": func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return lessons.Value{}, err
			}
			v, err := rulesValues(r, c.Meta().Leader, a[0])
			return lessons.List(v), err
		},
		"isr":          rulesMeta(func(m replication.PartitionState) lessons.Value { return lessons.Ints32(m.ISR) }),
		"replicas":     rulesMeta(func(m replication.PartitionState) lessons.Value { return lessons.Ints32(m.Replicas) }),
		"leader":       rulesMeta(func(m replication.PartitionState) lessons.Value { return lessons.Num(int64(m.Leader)) }),
		"leader-epoch": rulesMeta(func(m replication.PartitionState) lessons.Value { return lessons.Num(int64(m.LeaderEpoch)) }),
		"answered": func(r *rulesEnv, a []string) (lessons.Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return lessons.Value{}, err
			}
			return lessons.Truth(res.Answered), nil
		},
		"acked": func(r *rulesEnv, a []string) (lessons.Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return lessons.Value{}, err
			}
			return lessons.Truth(res.Answered && res.Err == nil), nil
		},
		"error": func(r *rulesEnv, a []string) (lessons.Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return lessons.Value{}, err
			}
			return lessons.ErrValue(res.Err), nil
		},
		"offset": func(r *rulesEnv, a []string) (lessons.Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return lessons.Value{}, err
			}
			if !res.Answered || res.Err != nil {
				return lessons.Num(-1), nil
			}
			return lessons.Num(res.Offset), nil
		},
		"clock": func(r *rulesEnv, a []string) (lessons.Value, error) {
			if len(r.order) == 0 {
				return lessons.Num(0), nil
			}
			return lessons.Num(r.topics[r.order[0]].Now()), nil
		},
		"config": func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return lessons.Value{}, err
			}
			cfg, unclean := c.Config()
			switch a[1] {
			case "min.insync.replicas":
				return lessons.Num(int64(cfg.MinInsyncReplicas)), nil
			case "replica.lag.time.max.ms":
				return lessons.Num(cfg.ReplicaLagTimeMaxMs), nil
			case "truncation.rule":
				return lessons.Str(cfg.TruncationRule.String()), nil
			case "unclean.leader.election.enable":
				return lessons.Str(strconv.FormatBool(unclean)), nil
			}
			return lessons.Value{}, fmt.Errorf("the rules back-end has no topic config %s", a[1])
		},
		"partition-epoch": rulesMeta(func(m replication.PartitionState) lessons.Value { return lessons.Num(int64(m.PartitionEpoch)) }),
		"records":         rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value { return lessons.List(c.Records(b)) }, true),
		"leader-records": func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return lessons.Value{}, err
			}
			return rulesQueries["records"](r, []string{strconv.Itoa(int(c.Meta().Leader)), a[0]})
		},
		"disk-records":    rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value { return lessons.List(c.Records(b)) }, false),
		"flushed":         rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value { return lessons.Num(int64(c.Flushed(b))) }, false),
		"checkpointed-hw": rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value { return lessons.Num(c.CheckpointedHW(b)) }, false),
		"fenced":          rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value { return lessons.Truth(c.Fenced(b)) }, false),
		"isolated":        rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value { return lessons.Truth(c.Isolated(b)) }, false),
		"truncated-records": rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value {
			var out []string
			for _, t := range c.Truncations {
				if t.Broker == b {
					out = append(out, t.Removed...)
				}
			}
			return lessons.List(out)
		}, false),
		"record-at": func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[1])
			if err != nil || !c.Up(lessons.BrokerID(a[0])) {
				return lessons.Str("none"), err
			}
			recs := c.Log(lessons.BrokerID(a[0]))
			off, _ := strconv.Atoi(a[2])
			if off < 0 || off >= len(recs) {
				return lessons.Str("none"), nil
			}
			return lessons.Str(fmt.Sprintf("%s/e%d", recs[off].Value, recs[off].Epoch)), nil
		},
		"same-logs": func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return lessons.Value{}, err
			}
			var first []string
			seen := false
			for _, b := range c.Meta().Replicas {
				if !c.Up(b) {
					continue
				}
				if recs := c.Records(b); seen && !slices.Equal(first, recs) {
					return lessons.Truth(false), nil
				} else if !seen {
					first, seen = recs, true
				}
			}
			return lessons.Truth(true), nil
		},
		"consumed": func(r *rulesEnv, a []string) (lessons.Value, error) {
			return lessons.List(lessons.MapStrings(r.consumed[a[0]], func(x rulestest.Record) string { return x.Value })), nil
		},
		"consume-error": func(r *rulesEnv, a []string) (lessons.Value, error) { return lessons.ErrValue(r.consumeErr[a[0]]), nil },
		"consumed-hw":   func(r *rulesEnv, a []string) (lessons.Value, error) { return lessons.Num(r.consumedHW[a[0]]), nil },
		"visible-hw": rulesBroker(func(c *rulestest.Cluster, b int32) lessons.Value {
			// What ListOffsets latest answers: the leader's HW, none below its
			// epoch's start (KIP-207).
			st, ok := c.Status(b)
			if !ok || st.Role != replication.RoleLeader || st.HighWatermark < st.EpochStartOffset {
				return lessons.Str("none")
			}
			return lessons.Num(st.HighWatermark)
		}, false),
		"leader-knows": func(r *rulesEnv, a []string) (lessons.Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return lessons.Value{}, err
			}
			m := c.Meta()
			st, ok := c.Status(m.Leader)
			return lessons.Truth(ok && st.Role == replication.RoleLeader && st.LeaderEpoch == m.LeaderEpoch), nil
		},
		"consumed-records": func(r *rulesEnv, a []string) (lessons.Value, error) {
			return lessons.List(lessons.MapStrings(r.consumed[a[0]], rulestest.Record.String)), nil
		},
		"running": func(r *rulesEnv, a []string) (lessons.Value, error) {
			up := true
			_ = r.each(func(c *rulestest.Cluster) error { up = up && c.Up(lessons.BrokerID(a[0])); return nil })
			return lessons.Truth(up), nil
		},
	}
	register()
}

// rulesConfigKeys are the topic configs the rules have, by their names there.
var rulesConfigKeys = map[string]string{"min.insync.replicas": "min-isr", "unclean.leader.election.enable": "unclean",
	"truncation.rule": "rule", "replica.lag.time.max.ms": "lag"}

// rulesBroker reads one broker's replica of a topic; up: none while it is
// down, as on the lab.
func rulesBroker(f func(c *rulestest.Cluster, b int32) lessons.Value, up bool) rulesQuery {
	return func(r *rulesEnv, a []string) (lessons.Value, error) {
		c, err := r.topic(a[1])
		if err != nil {
			return lessons.Value{}, err
		}
		if up && !c.Up(lessons.BrokerID(a[0])) {
			return lessons.List(nil), nil
		}
		return f(c, lessons.BrokerID(a[0])), nil
	}
}

// kill stops brokers at once; the controller notices after the session
// timeout (step), as on the lab.
func (r *rulesEnv) kill(a []string, powerLoss bool) error {
	for _, b := range lessons.BrokerIDs(a) {
		if err := r.each(func(c *rulestest.Cluster) error { return c.Kill(b, powerLoss) }); err != nil {
			return err
		}
		r.downSince[b] = r.now
	}
	return nil
}

// start boots stopped brokers; one back within its session keeps its ISR
// place (the ZooKeeper-era rule).
func (r *rulesEnv) start(a []string) error {
	for _, b := range lessons.BrokerIDs(a) {
		delete(r.downSince, b)
		if err := r.each(func(c *rulestest.Cluster) error { return c.Start(b) }); err != nil {
			return err
		}
	}
	return nil
}

// lastQueries read what happened in the rules' last action, for broker
// a[0] (or the topic's controller), from the records rulestest keeps;
// their arguments are lessons.RulesLastQueries.
var lastQueries = map[string]func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value{
	"fetch-offset": lastFetch(func(f rulestest.Fetch) lessons.Value { return lessons.Num(f.Offset) }),
	"fetch-epoch":  lastFetch(func(f rulestest.Fetch) lessons.Value { return lessons.Num(int64(f.LastEpoch)) }),
	"fetch-from":   lastFetch(func(f rulestest.Fetch) lessons.Value { return lessons.Num(int64(f.Leader)) }),
	"fetched":      lastFetch(func(f rulestest.Fetch) lessons.Value { return lessons.List(f.Records) }),
	"fetch-hw":     lastFetch(func(f rulestest.Fetch) lessons.Value { return lessons.Num(f.HW) }),
	"fetch-error":  lastFetch(func(f rulestest.Fetch) lessons.Value { return lessons.ErrValue(f.Err) }),
	"fetch-log": lastFetch(func(f rulestest.Fetch) lessons.Value {
		return lessons.Str(fmt.Sprintf("[%d,%d)", f.LogStart, f.LogEnd))
	}),
	"fetch-diverging": lastFetch(func(f rulestest.Fetch) lessons.Value {
		if f.Diverging == "" {
			return lessons.Str("none")
		}
		return lessons.Str(f.Diverging)
	}),
	"truncated-to":      lastTruncation(func(t rulestest.Truncation) lessons.Value { return lessons.Num(t.To) }),
	"truncation-rule":   lastTruncation(func(t rulestest.Truncation) lessons.Value { return lessons.Str(t.Rule) }),
	"truncation-cause":  lastTruncation(func(t rulestest.Truncation) lessons.Value { return lessons.Str(t.Cause) }),
	"truncation-reason": lastTruncation(func(t rulestest.Truncation) lessons.Value { return lessons.Str(t.Reason) }),
	"proposed":          lastProposal(func(p rulestest.Proposal) lessons.Value { return lessons.Ints32(p.ISR) }),
	"proposed-epoch":    lastProposal(func(p rulestest.Proposal) lessons.Value { return lessons.Num(int64(p.PartitionEpoch)) }),
	"proposal-queued":   lastProposal(func(p rulestest.Proposal) lessons.Value { return lessons.Truth(p.Queued) }),
	"happened": func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
		return lessons.List(c.Happened[r.mark(a[0]).happened:])
	},
	"alter-error": lastAlter(func(x rulestest.AlterAnswer) lessons.Value { return lessons.ErrValue(x.Err) }),
	"alter-isr":   lastAlter(func(x rulestest.AlterAnswer) lessons.Value { return lessons.Ints32(x.Request.NewISR) }),
	"alter-leader-epoch": lastAlter(func(x rulestest.AlterAnswer) lessons.Value {
		return lessons.Num(int64(x.Request.LeaderEpoch))
	}),
	"alter-partition-epoch": lastAlter(func(x rulestest.AlterAnswer) lessons.Value {
		return lessons.Num(int64(x.Request.PartitionEpoch))
	}),
	"election": func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
		es := c.Elections[r.mark(a[0]).elections:]
		switch {
		case len(es) == 0:
			return lessons.Str("none")
		case es[len(es)-1].Leader < 0:
			return lessons.Str("offline")
		case es[len(es)-1].Unclean:
			return lessons.Str("unclean")
		}
		return lessons.Str("clean")
	},
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

func lastFetch(f func(rulestest.Fetch) lessons.Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
		fs := c.Fetches[r.mark(a[1]).fetches:]
		for i := len(fs) - 1; i >= 0; i-- {
			if fs[i].Broker == lessons.BrokerID(a[0]) {
				return f(fs[i])
			}
		}
		return lessons.Str("no fetch")
	}
}

// lastAlter reads the controller's last answer to an ISR proposal.
func lastAlter(f func(rulestest.AlterAnswer) lessons.Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
		as := c.Alters[r.mark(a[0]).alters:]
		if len(as) == 0 {
			return lessons.Str("no answer")
		}
		return f(as[len(as)-1])
	}
}

func lastTruncation(f func(rulestest.Truncation) lessons.Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
		ts := c.Truncations[r.mark(a[1]).truncations:]
		for i := len(ts) - 1; i >= 0; i-- {
			if ts[i].Broker == lessons.BrokerID(a[0]) {
				return f(ts[i])
			}
		}
		return lessons.Str("no truncation")
	}
}

func lastProposal(f func(rulestest.Proposal) lessons.Value) func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
	return func(r *rulesEnv, c *rulestest.Cluster, a []string) lessons.Value {
		ps := c.Proposals[r.mark(a[1]).proposals:]
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i].Broker == lessons.BrokerID(a[0]) {
				return f(ps[i])
			}
		}
		return lessons.Str("no proposal")
	}
}

// durableOf is a topic's state on the rules.
func (r *rulesEnv) durableOf(topic string) lessons.Durable {
	d := lessons.Durable{Leader: -1}
	c := r.topics[topic]
	for v := range r.sent {
		res := c.Result(v)
		if res == nil {
			continue
		}
		acked := res.Answered && res.Err == nil
		w := invariant.Write{Value: v, Acked: acked, Offset: -1}
		if acked {
			w.Offset = res.Offset
		}
		d.Writes = append(d.Writes, w)
	}
	m := c.Meta()
	d.LeaderEpoch, d.ISR, d.Assigned = m.LeaderEpoch, m.ISR, m.Replicas
	for _, b := range m.Replicas {
		st, ok := c.Status(b)
		if !ok {
			continue
		}
		rl := invariant.Replica{Broker: b, Leader: b == m.Leader, LogStart: st.LogStartOffset, HW: st.HighWatermark, LEO: st.LogEndOffset}
		for _, x := range c.Log(b) {
			rl.Records = append(rl.Records, invariant.Rec{Offset: x.Offset, Epoch: x.Epoch, Value: x.Value})
		}
		if rl.Leader {
			d.Leader = b
		}
		d.Replicas = append(d.Replicas, rl)
	}
	return d
}

// englishReason renders a truncation's reason as the transcripts show it.
func englishReason(key string, args ...any) string {
	english, _ := i18n.Text(key, args...)
	return english
}

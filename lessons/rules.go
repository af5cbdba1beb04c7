package lessons

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
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

// Back-ends a scenario runs on.
const (
	BackendCluster = "cluster"
	BackendRules   = "rules"
)

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
		switch v.Kind {
		case "lost":
			out = append(out, v.Kind+" "+v.Value)
		case "hw-back":
			out = append(out, v.Kind)
		default:
			out = append(out, v.Kind+" "+strconv.FormatInt(v.Offset, 10))
		}
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

type rulesQuery func(r *rulesEnv, a []string) (Value, error)

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
	return func(r *rulesEnv, a []string) (Value, error) {
		c, err := r.topic(a[1])
		if err != nil {
			return Value{}, err
		}
		st, ok := c.Status(id(a[0]))
		if !ok {
			return str("down"), nil
		}
		return num(f(st)), nil
	}
}

func rulesMeta(f func(m replication.PartitionState) Value) rulesQuery {
	return func(r *rulesEnv, a []string) (Value, error) {
		c, err := r.topic(a[0])
		if err != nil {
			return Value{}, err
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
				case rulesCheckpointKey:
					if v != "0" {
						return fmt.Errorf("%s: want 0 (every HW change) or no option (do checkpoint)", k)
					}
				default:
					return fmt.Errorf("the rules back-end has no topic config %s", k)
				}
			}
			c := rulestest.New(r.brokers, replication.DefaultConfig(), false)
			c.ExplicitCheckpoints = opt[rulesCheckpointKey] == ""
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
					if st, ok := c.Status(id(b)); ok && st.Role == replication.RoleFollower {
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
			for _, b := range ids(a) {
				delete(r.downSince, b)
				_ = r.each(func(c *rulestest.Cluster) error { c.Lost(b); return nil })
			}
			return nil
		},
		"isolate": func(r *rulesEnv, a []string, _ map[string]string) error {
			b := id(a[0])
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
			return r.each(func(c *rulestest.Cluster) error { return c.Elect(id(a[0])) })
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
		"consume": func(r *rulesEnv, a []string, _ map[string]string) error {
			// What a consumer of the leader reads: its log below its HW.
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
				for _, b := range ids(a) {
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
		"values": func(r *rulesEnv, a []string) (Value, error) {
			v, err := rulesValues(r, id(a[0]), a[1])
			return list(v), err
		},
		"value-at": func(r *rulesEnv, a []string) (Value, error) {
			v, err := rulesValues(r, id(a[0]), a[1])
			off, _ := strconv.Atoi(a[2])
			if err != nil || off < 0 || off >= len(v) {
				return str("none"), err
			}
			return str(v[off]), nil
		},
		"leader-values": func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return Value{}, err
			}
			v, err := rulesValues(r, c.Meta().Leader, a[0])
			return list(v), err
		},
		"isr":          rulesMeta(func(m replication.PartitionState) Value { return ints32(m.ISR) }),
		"replicas":     rulesMeta(func(m replication.PartitionState) Value { return ints32(m.Replicas) }),
		"leader":       rulesMeta(func(m replication.PartitionState) Value { return num(int64(m.Leader)) }),
		"leader-epoch": rulesMeta(func(m replication.PartitionState) Value { return num(int64(m.LeaderEpoch)) }),
		"answered": func(r *rulesEnv, a []string) (Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return Value{}, err
			}
			return truth(res.Answered), nil
		},
		"acked": func(r *rulesEnv, a []string) (Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return Value{}, err
			}
			return truth(res.Answered && res.Err == nil), nil
		},
		"error": func(r *rulesEnv, a []string) (Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return Value{}, err
			}
			return errValue(res.Err), nil
		},
		"offset": func(r *rulesEnv, a []string) (Value, error) {
			res, err := rulesResult(r, a)
			if err != nil {
				return Value{}, err
			}
			if !res.Answered || res.Err != nil {
				return num(-1), nil
			}
			return num(res.Offset), nil
		},
		"clock": func(r *rulesEnv, a []string) (Value, error) {
			if len(r.order) == 0 {
				return num(0), nil
			}
			return num(r.topics[r.order[0]].Now()), nil
		},
		"config": func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return Value{}, err
			}
			cfg, unclean := c.Config()
			switch a[1] {
			case "min.insync.replicas":
				return num(int64(cfg.MinInsyncReplicas)), nil
			case "replica.lag.time.max.ms":
				return num(cfg.ReplicaLagTimeMaxMs), nil
			case "truncation.rule":
				return str(cfg.TruncationRule.String()), nil
			case "unclean.leader.election.enable":
				return str(strconv.FormatBool(unclean)), nil
			}
			return Value{}, fmt.Errorf("the rules back-end has no topic config %s", a[1])
		},
		"partition-epoch": rulesMeta(func(m replication.PartitionState) Value { return num(int64(m.PartitionEpoch)) }),
		"records":         rulesBroker(func(c *rulestest.Cluster, b int32) Value { return list(c.Records(b)) }, true),
		"leader-records": func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return Value{}, err
			}
			return rulesQueries["records"](r, []string{strconv.Itoa(int(c.Meta().Leader)), a[0]})
		},
		"disk-records":    rulesBroker(func(c *rulestest.Cluster, b int32) Value { return list(c.Records(b)) }, false),
		"flushed":         rulesBroker(func(c *rulestest.Cluster, b int32) Value { return num(int64(c.Flushed(b))) }, false),
		"checkpointed-hw": rulesBroker(func(c *rulestest.Cluster, b int32) Value { return num(c.CheckpointedHW(b)) }, false),
		"fenced":          rulesBroker(func(c *rulestest.Cluster, b int32) Value { return truth(c.Fenced(b)) }, false),
		"isolated":        rulesBroker(func(c *rulestest.Cluster, b int32) Value { return truth(c.Isolated(b)) }, false),
		"truncated-records": rulesBroker(func(c *rulestest.Cluster, b int32) Value {
			var out []string
			for _, t := range c.Truncations {
				if t.Broker == b {
					out = append(out, t.Removed...)
				}
			}
			return list(out)
		}, false),
		"record-at": func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[1])
			if err != nil || !c.Up(id(a[0])) {
				return str("none"), err
			}
			recs := c.Log(id(a[0]))
			off, _ := strconv.Atoi(a[2])
			if off < 0 || off >= len(recs) {
				return str("none"), nil
			}
			return str(fmt.Sprintf("%s/e%d", recs[off].Value, recs[off].Epoch)), nil
		},
		"same-logs": func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return Value{}, err
			}
			var first []string
			seen := false
			for _, b := range c.Meta().Replicas {
				if !c.Up(b) {
					continue
				}
				if recs := c.Records(b); seen && !slices.Equal(first, recs) {
					return truth(false), nil
				} else if !seen {
					first, seen = recs, true
				}
			}
			return truth(true), nil
		},
		"consumed": func(r *rulesEnv, a []string) (Value, error) {
			return list(mapS(r.consumed[a[0]], func(x rulestest.Record) string { return x.Value })), nil
		},
		"consume-error": func(r *rulesEnv, a []string) (Value, error) { return errValue(r.consumeErr[a[0]]), nil },
		"consumed-hw":   func(r *rulesEnv, a []string) (Value, error) { return num(r.consumedHW[a[0]]), nil },
		"visible-hw": rulesBroker(func(c *rulestest.Cluster, b int32) Value {
			// What ListOffsets latest answers: the leader's HW, none below its
			// epoch's start (KIP-207).
			st, ok := c.Status(b)
			if !ok || st.Role != replication.RoleLeader || st.HighWatermark < st.EpochStartOffset {
				return str("none")
			}
			return num(st.HighWatermark)
		}, false),
		"leader-knows": func(r *rulesEnv, a []string) (Value, error) {
			c, err := r.topic(a[0])
			if err != nil {
				return Value{}, err
			}
			m := c.Meta()
			st, ok := c.Status(m.Leader)
			return truth(ok && st.Role == replication.RoleLeader && st.LeaderEpoch == m.LeaderEpoch), nil
		},
		"consumed-records": func(r *rulesEnv, a []string) (Value, error) {
			return list(mapS(r.consumed[a[0]], rulestest.Record.String)), nil
		},
		"running": func(r *rulesEnv, a []string) (Value, error) {
			up := true
			_ = r.each(func(c *rulestest.Cluster) error { up = up && c.Up(id(a[0])); return nil })
			return truth(up), nil
		},
	}
}

// rulesConfigKeys are the topic configs the rules have, by their names there.
var rulesConfigKeys = map[string]string{"min.insync.replicas": "min-isr", "unclean.leader.election.enable": "unclean",
	"truncation.rule": "rule", "replica.lag.time.max.ms": "lag"}

// rulesBroker reads one broker's replica of a topic; up: none while it is
// down, as on the lab.
func rulesBroker(f func(c *rulestest.Cluster, b int32) Value, up bool) rulesQuery {
	return func(r *rulesEnv, a []string) (Value, error) {
		c, err := r.topic(a[1])
		if err != nil {
			return Value{}, err
		}
		if up && !c.Up(id(a[0])) {
			return list(nil), nil
		}
		return f(c, id(a[0])), nil
	}
}

// kill stops brokers at once; the controller notices after the session
// timeout (step), as on the lab.
func (r *rulesEnv) kill(a []string, powerLoss bool) error {
	for _, b := range ids(a) {
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
	for _, b := range ids(a) {
		delete(r.downSince, b)
		if err := r.each(func(c *rulestest.Cluster) error { return c.Start(b) }); err != nil {
			return err
		}
	}
	return nil
}

// englishReason renders a truncation's reason as the transcripts show it.
func englishReason(key string, args ...any) string {
	english, _ := i18n.Text(key, args...)
	return english
}

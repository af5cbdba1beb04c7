package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/server/controller"
	"tidemark/server/kafkaerr"
)

// Config is a named setting the checker runs under; the names are API values.
type Config string

// The configurations.
const (
	// Strict is acks=all, min.insync.replicas=2, unclean election off,
	// truncation.rule=leader-epoch: nothing but unsynced power loss may lose
	// an acknowledged write.
	Strict Config = "strict"
	// Acks1 is Strict with acks=1 for the plain producers.
	Acks1 Config = "acks1"
	// Unclean is Strict with unclean.leader.election.enable=true.
	Unclean Config = "unclean"
	// HWTruncation is Strict with truncation.rule=high-watermark (before KIP-101).
	HWTruncation Config = "hw-truncation"
)

// Protocols are the replication protocols (topic config
// replication.protocol) the checker and the comparison run, isr first.
// Each protocol after isr has its strict-<protocol> configuration and a
// comparison column. A protocol the config refuses is skipped by a
// comparison, which says why.
var Protocols = []controller.ReplicationProtocol{controller.ProtocolISR, controller.ProtocolQuorum, controller.ProtocolPipeline}

// strictPrefix names Strict on another protocol: strict-quorum.
const strictPrefix = "strict-"

// StrictOn is Strict on a topic of protocol p: "strict" for isr,
// "strict-quorum" for quorum.
func StrictOn(p controller.ReplicationProtocol) Config {
	if p == controller.ProtocolISR || p == "" {
		return Strict
	}
	return Config(strictPrefix + string(p))
}

// Configs returns every configuration, Strict first, then Strict on each
// other protocol of Protocols.
func Configs() []Config {
	out := []Config{Strict, Acks1, Unclean, HWTruncation}
	for _, p := range Protocols[1:] {
		out = append(out, StrictOn(p))
	}
	return out
}

// ParseConfig returns the configuration named s; INVALID_CONFIG names the
// valid ones otherwise.
func ParseConfig(s string) (Config, error) {
	if c := Config(s); slices.Contains(Configs(), c) {
		return c, nil
	}
	name := kafkaerr.Quote(s)
	return "", kafkaerr.WithKey(fmt.Errorf("%w: no chaos configuration %s (one of %s)", kerr.InvalidConfig, name, joinNames(Configs())),
		"chaos.refused.config", name, joinNames(Configs()))
}

// Protocol is the replication protocol of c's topic: isr but for
// strict-<protocol>.
func (c Config) Protocol() controller.ReplicationProtocol {
	if p, ok := strings.CutPrefix(string(c), strictPrefix); ok {
		return controller.ReplicationProtocol(p)
	}
	return controller.ProtocolISR
}

// Acks is what the plain producers ask for under c: "all" or "1".
// Idempotent producers always ask for all, as Kafka requires.
func (c Config) Acks() string {
	if c == Acks1 {
		return "1"
	}
	return "all"
}

// TopicConfigs returns the topic configs of c's topic.
func (c Config) TopicConfigs() map[string]string {
	m := map[string]string{
		controller.ConfigMinInsyncReplicas:     "2",
		controller.ConfigUncleanLeaderElection: "false",
		controller.ConfigTruncationRule:        "leader-epoch",
	}
	switch c {
	case Unclean:
		m[controller.ConfigUncleanLeaderElection] = "true"
	case HWTruncation:
		m[controller.ConfigTruncationRule] = "high-watermark"
	}
	if p := c.Protocol(); p != controller.ProtocolISR {
		m[controller.ConfigReplicationProtocol] = string(p)
	}
	return m
}

// The cluster every run uses: 3 brokers, one topic of 3 partitions, RF 3.
const (
	Brokers    = 3
	Partitions = 3
	Topic      = "chaos"
)

// The producers: 1 and 2 are plain (the configuration's acks), 3 and 4
// idempotent (acks=all, producer id, epoch and sequence on every batch).
const Producers = 4

func idempotent(producer int) bool { return producer >= 3 }

// Lab timing the schedule steps past (the lab's defaults).
const (
	SessionTimeout      = 2 * time.Second // broker.session.timeout.ms
	ReplicaLagTimeMaxMs = 3000            // replica.lag.time.max.ms
)

// Kind names an action.
type Kind string

// The actions.
const (
	// ActProduce: Producer sends its next batch (or retries its failed one)
	// to Partition.
	ActProduce Kind = "produce"
	// ActFetch: Broker's followers each send one Fetch.
	ActFetch Kind = "fetch"
	// ActStep: the lab clock moves by StepMs.
	ActStep Kind = "step"
	// ActCrash, ActPowerLoss, ActRestart act on Broker.
	ActCrash     Kind = "crash"
	ActPowerLoss Kind = "power-loss"
	ActRestart   Kind = "restart"
	// ActCut cuts From→To, and back unless OneWay; node 0 is the controller.
	ActCut Kind = "cut"
	// ActDelay makes messages From→To, and back unless OneWay, wait DelayMs
	// of lab time (Cluster.DelayLink); heal removes it like a cut.
	ActDelay Kind = "delay"
	// ActHeal restores every link.
	ActHeal Kind = "heal"
)

// Action is one step of a schedule.
type Action struct {
	Kind      Kind  `json:"kind"`
	Producer  int   `json:"producer,omitempty"`
	Partition int32 `json:"partition,omitempty"`
	Broker    int32 `json:"broker,omitempty"`
	From      int32 `json:"from,omitempty"`
	To        int32 `json:"to,omitempty"`
	OneWay    bool  `json:"oneway,omitempty"`
	StepMs    int64 `json:"step_ms,omitempty"`
	DelayMs   int64 `json:"delay_ms,omitempty"`
	// Leader: a crash or power loss of whichever broker leads Partition
	// when the action is played (Broker is then 0), as an experiment's
	// fault schedule names it.
	Leader bool `json:"leader,omitempty"`
}

func (a Action) String() string {
	switch a.Kind {
	case ActProduce:
		return fmt.Sprintf("produce p%d→%d", a.Producer, a.Partition)
	case ActFetch:
		return fmt.Sprintf("fetch b%d", a.Broker)
	case ActStep:
		return fmt.Sprintf("step %dms", a.StepMs)
	case ActCut:
		if a.OneWay {
			return fmt.Sprintf("cut %d→%d", a.From, a.To)
		}
		return fmt.Sprintf("cut %d↔%d", a.From, a.To)
	case ActDelay:
		if a.OneWay {
			return fmt.Sprintf("delay %d→%d %dms", a.From, a.To, a.DelayMs)
		}
		return fmt.Sprintf("delay %d↔%d %dms", a.From, a.To, a.DelayMs)
	case ActHeal:
		return "heal"
	}
	if a.Leader {
		return fmt.Sprintf("%s leader of p%d", a.Kind, a.Partition)
	}
	return fmt.Sprintf("%s b%d", a.Kind, a.Broker)
}

// actionKinds are the kinds an action may have, in the order validate
// names them.
var actionKinds = []Kind{ActProduce, ActFetch, ActStep, ActCrash, ActPowerLoss, ActRestart, ActCut, ActDelay, ActHeal}

// validate rejects an action that names nothing the lab has:
// INVALID_REQUEST naming the unknown kind and the known ones, or the field
// (as the JSON names it) out of range and its range.
func (a Action) validate() error { return a.validateOn(Brokers, Partitions) }

// validateOn is validate on a cluster of brokers whose topics have at most
// partitions partitions.
func (a Action) validateOn(brokers, partitions int32) error {
	const maxMs = 60_000
	var errs []error
	field := func(name string, v, lo, hi int64) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("%s %d is outside [%d, %d]", name, v, lo, hi))
		}
	}
	switch a.Kind {
	case ActProduce:
		field("producer", int64(a.Producer), 1, Producers)
		field("partition", int64(a.Partition), 0, int64(partitions)-1)
	case ActCrash, ActPowerLoss:
		if a.Leader {
			field("broker", int64(a.Broker), 0, 0)
			field("partition", int64(a.Partition), 0, int64(partitions)-1)
		} else {
			field("broker", int64(a.Broker), 1, int64(brokers))
		}
	case ActFetch, ActRestart:
		field("broker", int64(a.Broker), 1, int64(brokers))
	case ActStep:
		field("step_ms", a.StepMs, 1, maxMs)
	case ActCut, ActDelay:
		field("from", int64(a.From), 0, int64(brokers)) // node 0 is the controller
		field("to", int64(a.To), 0, int64(brokers))
		if a.From == a.To {
			errs = append(errs, fmt.Errorf("from and to are both node %d", a.From))
		}
		if a.Kind == ActDelay {
			field("delay_ms", a.DelayMs, 1, maxMs)
		}
	case ActHeal:
	default:
		kind := kafkaerr.Quote(string(a.Kind))
		return kafkaerr.WithKey(fmt.Errorf("%w: unknown chaos action kind %s (one of %s)", kerr.InvalidRequest, kind, joinNames(actionKinds)),
			"chaos.refused.action-kind", kind, joinNames(actionKinds))
	}
	if err := errors.Join(errs...); err != nil {
		kind := kafkaerr.Quote(string(a.Kind))
		return kafkaerr.WithKey(fmt.Errorf("%w: chaos action %s: %s", kerr.InvalidRequest, kind, strings.ReplaceAll(err.Error(), "\n", "; ")),
			"chaos.refused.action", kind)
	}
	return nil
}

// MaxActions bounds a schedule; DefaultActions is a run's usual length.
const (
	MaxActions     = 400
	DefaultActions = 100
)

// Generate returns the schedule of n actions a seed gives: mostly produces
// and fetch rounds, with steps of time (some past the session timeout, some
// past replica.lag.time.max.ms) and faults picked at random. It keeps track
// of which brokers it stopped, so restarts restart a stopped broker and
// crashes stop a running one.
//
// Link delays come from a second stream of the same seed, drawn after each
// action: the other actions are those the seed gave before delays were
// added, in the same order, with delays between them (and the last few cut
// off to keep n).
//
// A stopped broker is restarted at the latest MaxDownActions actions after
// it stopped, without a draw: drawn restarts (5 in 100) came a little
// rarer than drawn stops (6 in 100), so brokers piled up down and most of
// a run's writes found no leader (seed 7: 22 of 31). What acks,
// min.insync.replicas and unclean election differ on is one broker down
// at a time, and coming back. A seed whose brokers all came back sooner
// gives the schedule it gave before.
func Generate(seed uint64, n int) []Action { return generate(seed, n, MaxDownActions) }

// generate is Generate with stopped brokers restarted after maxDown
// actions (0: only by a drawn restart, as schedules were before).
func generate(seed uint64, n, maxDown int) []Action {
	rng := rand.New(rand.NewPCG(seed, 0x7469_6465_6d61_726b))  // "tidemark"
	drng := rand.New(rand.NewPCG(seed, 0x6465_6c61_792d_6c6e)) // "delay-ln"
	broker := func() int32 { return 1 + rng.Int32N(Brokers) }
	down := map[int32]bool{}
	downAt := map[int32]int{} // when each stopped broker stopped: len(out)
	var out []Action
	for len(out) < n {
		if b := overdue(down, downAt, len(out), maxDown); maxDown > 0 && b != 0 {
			delete(down, b)
			out = append(out, Action{Kind: ActRestart, Broker: b})
			continue
		}
		var a Action
		switch x := rng.IntN(100); {
		case x < 36:
			a = Action{Kind: ActProduce, Producer: 1 + rng.IntN(Producers), Partition: rng.Int32N(Partitions)}
		case x < 65:
			a = Action{Kind: ActFetch, Broker: broker()}
		case x < 73:
			a = Action{Kind: ActStep, StepMs: 50 + rng.Int64N(450)}
		case x < 77:
			a = Action{Kind: ActStep, StepMs: SessionTimeout.Milliseconds() + 100 + rng.Int64N(500)}
		case x < 80:
			a = Action{Kind: ActStep, StepMs: ReplicaLagTimeMaxMs + 100 + rng.Int64N(500)}
		case x < 83:
			a = Action{Kind: ActCrash, Broker: broker()}
		case x < 86:
			a = Action{Kind: ActPowerLoss, Broker: broker()}
		case x < 91:
			// A stopped broker comes back (the lowest id among them; none
			// stopped: draw again), so faults do not pile up for good.
			a = Action{Kind: ActRestart, Broker: 0}
			for id := int32(1); id <= Brokers; id++ {
				if down[id] {
					a.Broker = id
					break
				}
			}
			if a.Broker == 0 {
				continue
			}
		case x < 96:
			from := rng.Int32N(Brokers + 1) // 0 is the controller
			to := (from + 1 + rng.Int32N(Brokers)) % (Brokers + 1)
			a = Action{Kind: ActCut, From: from, To: to, OneWay: rng.IntN(2) == 0}
		default:
			a = Action{Kind: ActHeal}
		}
		switch a.Kind {
		case ActCrash, ActPowerLoss:
			if down[a.Broker] {
				continue
			}
			down[a.Broker] = true
			downAt[a.Broker] = len(out)
		case ActRestart:
			if !down[a.Broker] {
				continue
			}
			delete(down, a.Broker)
		}
		out = append(out, a)
		if len(out) < n && drng.IntN(100) < delayPercent {
			out = append(out, delayAction(drng))
		}
	}
	return out
}

// delayPercent is how often, in percent, a link delay follows an action.
const delayPercent = 5

// MaxDownActions is how many actions a stopped broker stays down at most
// in a generated schedule (Generate).
const MaxDownActions = 15

// overdue returns the lowest stopped broker that stopped maxDown or more
// actions before action i, or 0.
func overdue(down map[int32]bool, downAt map[int32]int, i, maxDown int) int32 {
	for id := int32(1); id <= Brokers; id++ {
		if down[id] && i-downAt[id] >= maxDown {
			return id
		}
	}
	return 0
}

// delayAction draws a link delay: short ones (10–500 ms), ones around the
// session timeout (so fencing races with delayed messages) and ones past
// replica.lag.time.max.ms (so the ISR shrinks and expands while delayed).
func delayAction(rng *rand.Rand) Action {
	from := rng.Int32N(Brokers + 1) // 0 is the controller
	to := (from + 1 + rng.Int32N(Brokers)) % (Brokers + 1)
	a := Action{Kind: ActDelay, From: from, To: to, OneWay: rng.IntN(2) == 0}
	switch x := rng.IntN(10); {
	case x < 5:
		a.DelayMs = 10 + rng.Int64N(490)
	case x < 8:
		a.DelayMs = SessionTimeout.Milliseconds() - 500 + rng.Int64N(1000)
	default:
		a.DelayMs = ReplicaLagTimeMaxMs + 100 + rng.Int64N(1000)
	}
	return a
}

// joinNames lists names for a person: "a, b, c".
func joinNames[S ~string](names []S) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, ", ")
}

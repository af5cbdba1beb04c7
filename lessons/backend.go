package lessons

import "tidemark/invariant"

// Back-ends a scenario runs on.
const (
	BackendCluster = "cluster"
	BackendRules   = "rules"
)

// A Backend is a place other than the lab cluster where a scenario plays:
// the pure rules (package lessons/rulesplay) are one. It registers itself,
// so the lab binary, which plays lessons on its cluster only, links none
// of the rules' harness; a program that plays scenarios on the rules
// imports rulesplay for its side effect.
type Backend struct {
	// Actions and Queries are its vocabulary: the parser refuses any other
	// word in a file that runs on it.
	Actions, Queries map[string]bool
	// Fencing is the one fencing rule it plays under ("": every rule).
	Fencing string
	// Start begins one play with n brokers.
	Start func(brokers int) Play
}

// A Play is one run of a scenario on a Backend.
type Play interface {
	// Act runs an action (its invariants are checked by Check).
	Act(name string, args []string, opt map[string]string) error
	// Query answers a check's query.
	Query(name string, args []string) (Value, error)
	// Mark starts an action: what queries of "the last action" report
	// starts here.
	Mark()
	// Check runs the structural invariants after an action.
	Check() error
	// Lanes is every topic's transcript and replicas, for a failure.
	Lanes() string
	// Topics are the topics in creation order.
	Topics() []string
	// Violations are a topic's broken invariants named as in an expect
	// line ("lost m2", "diverged 1").
	Violations(topic string) []string
	// Durable is a topic's writes and replicas for the durability checker.
	Durable(topic string) Durable
}

var backends = map[string]*Backend{}

// RegisterBackend makes a back-end playable under name.
func RegisterBackend(name string, b *Backend) {
	if name == BackendCluster || backends[name] != nil {
		panic("lessons: back-end " + name + " registered twice")
	}
	backends[name] = b
}

// backend is the registered back-end name, or an error saying it is not
// linked into this program.
func backend(name string) (*Backend, error) {
	if b := backends[name]; b != nil {
		return b, nil
	}
	return nil, errk("lesson.error.no-backend", name)
}

// Durable is a topic's state as the durability checker reads it:
// partition 0 only.
type Durable struct {
	Writes   []invariant.Write
	Replicas []invariant.Replica // running replicas, the leader marked
	Leader   int32               // -1: no running leader (offline)
	// The controller's view, for a show line: the leader epoch, the ISR
	// and the assigned replicas.
	LeaderEpoch int32
	ISR         []int32
	Assigned    []int32
	// LSO is the leader's last stable offset, shown (HasLSO) once the
	// script used transactions.
	LSO    int64
	HasLSO bool
	// Topic is the topic's configs and NowMs the lab time the logs were
	// read at (a compacted topic's cleaner removes superseded records).
	Topic invariant.Topic
	NowMs int64
}

// RulesLastQueries are the rules-only queries of what happened in the
// last action, with their arguments; the rules back-end answers them.
var RulesLastQueries = map[string]string{
	"fetch-offset": "broker topic", "fetch-epoch": "broker topic", "fetch-from": "broker topic",
	"fetched": "broker topic", "fetch-hw": "broker topic", "fetch-error": "broker topic",
	"fetch-log": "broker topic", "fetch-diverging": "broker topic", "truncated-to": "broker topic",
	"truncation-rule": "broker topic", "truncation-cause": "broker topic", "truncation-reason": "broker topic",
	"proposed": "broker topic", "proposed-epoch": "broker topic", "proposal-queued": "broker topic",
	"happened": "topic", "alter-error": "topic", "alter-isr": "topic", "alter-leader-epoch": "topic",
	"alter-partition-epoch": "topic", "election": "topic",
}

// StatusQueries read a replica's replication.Status; "down" when it is
// not running. Every back-end answers them.
var StatusQueries = statusQueries

// Value constructors for a back-end's queries.
func Num(n int64) Value        { return num(n) }
func Str(s string) Value       { return str(s) }
func List(l []string) Value    { return list(l) }
func Truth(b bool) Value       { return truth(b) }
func ErrValue(err error) Value { return errValue(err) }
func Ints32(l []int32) Value   { return ints32(l) }

// RecText is a record as the scenario queries write it: OFFSET:value/eEPOCH.
func RecText(offset int64, value string, epoch int32) string { return recText(offset, value, epoch) }

// TopicArg is the position of a query's topic argument in its args spec.
func TopicArg(args string) int { return topicArg(args) }

// Timeout is a produce's timeout=MS option; 30 s without it.
var Timeout = timeoutOf

// BrokerID and BrokerIDs read a script's broker arguments (checked by the
// parser).
func BrokerID(s string) int32      { return id(s) }
func BrokerIDs(a []string) []int32 { return ids(a) }

// MapStrings applies f to each element of l.
func MapStrings[T any](l []T, f func(T) string) []string { return mapS(l, f) }

// RulesCheckpointKey is a create-topic option of the rules back-end (see
// rulesCheckpointKey).
const RulesCheckpointKey = rulesCheckpointKey

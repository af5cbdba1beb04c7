package class

import "sync"

// A seat's exercises are graded on what its learner did, not on whatever
// happened in the seat's cluster: "acks=all with a broker down" must not
// pass from a write somebody else sent (a Kafka client on the machine, a
// request sent before the crash and acknowledged after it), nor from a
// broker that halted on its own. The seat's pages and API reach the
// cluster through one value (the web's Lab); the class's NewHandler wraps
// it so that every produce and fault a learner sends is reported here,
// with its outcome, before the learner's request is answered.

// ActionKind is what a learner did.
type ActionKind string

// The learner's actions the exercises grade.
const (
	// ActionProduce: the learner produced (Topic, Partition, Acks); First
	// and Last are the offsets of an acknowledged produce (-1: none).
	ActionProduce ActionKind = "produce"
	// ActionDown: the learner stopped Broker (crash, power loss or a failed
	// disk).
	ActionDown ActionKind = "down"
	// ActionUp: the learner restarted Broker.
	ActionUp ActionKind = "up"
	// ActionCut: the learner cut a network link.
	ActionCut ActionKind = "cut"
)

// Action is one thing a learner did to their seat's cluster through a page
// or the API, and how it ended. Began is the Learner's count when it
// started (Learner.Begin); Err is nil when it succeeded.
type Action struct {
	Kind      ActionKind
	Began     uint64
	Broker    int32
	Topic     string
	Partition int32
	Acks      int16 // 0, 1 or -1 (all)
	First     int64
	Last      int64
	Err       error

	ended uint64
}

// maxPending bounds the actions kept between two gradings: a seat is
// graded after each of its requests, and one request does one action.
const maxPending = 1024

// Learner is the log of one awake seat's learner actions, kept until the
// grader reads them. Its methods are safe for concurrent use (the seat's
// requests run at once); the zero Learner is ready.
type Learner struct {
	mu      sync.Mutex
	n       uint64
	pending []Action
}

// Begin marks the start of an action and returns its place in the log's
// order, for Action.Began.
func (l *Learner) Begin() uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.n
}

// Did logs a finished action. Nil l logs nothing.
func (l *Learner) Did(a Action) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	a.ended = l.n
	if len(l.pending) < maxPending {
		l.pending = append(l.pending, a)
	}
}

// take returns the actions logged since the last take, in the order they
// finished.
func (l *Learner) take() []Action {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.pending
	l.pending = nil
	return out
}

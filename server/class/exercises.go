package class

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/server/cluster"
)

// Exercises are tasks stated in words (the i18n keys exercise.<id>.title
// and exercise.<id>.task) and checked on the seat's own cluster: two from
// the events its cluster publishes, graded live after each of the seat's
// requests, and one from its broker's log files, graded when the learner
// answers. A pass is kept in the roster.
var Exercises = []string{ExerciseLostAck, ExerciseAcksAllOneDown, ExerciseFindOffset, ExerciseISRRejoin, ExerciseFindTimestamp,
	ExerciseHWTruncation, ExercisePredictHW, ExerciseFPlusOne}

// The exercises.
const (
	// ExerciseLostAck: make an acknowledged write disappear using only acks
	// and unclean leader election. Passed when a record a produce was
	// acknowledged for is truncated from a replica after an unclean
	// election of its partition.
	ExerciseLostAck = "lost-ack"
	// ExerciseAcksAllOneDown: keep acks=all writes flowing while one broker
	// is down. Passed when a produce with acks=all is acknowledged while a
	// broker is not up.
	ExerciseAcksAllOneDown = "acks-all-one-down"
	// ExerciseFindOffset: find the segment and byte position of offset
	// FindOffset in partition demo-0 on broker 1. Passed by an answer that
	// names the segment (its file or base offset) and the position of the
	// batch holding the offset, as the broker's own lookup finds them.
	ExerciseFindOffset = "find-offset"
	// ExerciseISRRejoin: make a follower leave the ISR and rejoin it, and
	// say why it left. Passed by an answer naming the cause (Answer.Cause)
	// of a follower's leaving that came after a fault the learner caused
	// (a broker stopped, a link cut), the follower having joined again.
	ExerciseISRRejoin = "isr-rejoin"
	// ExerciseFindTimestamp: find a record by timestamp through the time
	// index. Passed by an answer naming a timestamp past demo-0's first
	// record on broker 1 and the offset broker 1's own lookup by that
	// timestamp (Kafka's ListOffsets) finds.
	ExerciseFindTimestamp = "find-timestamp"
)

// LeaveCauses are the answers ExerciseISRRejoin offers: why a follower
// leaves an ISR.
var LeaveCauses = []events.ISRCause{events.ISRLagged, events.ISRSessionExpired, events.ISRFenced, events.ISRRestarted, events.ISRUncleanRestart}

// FindOffset is the offset ExerciseFindOffset asks about: past the first
// batch, so that the answer takes a look at the index or the scan.
const FindOffset = 5

// Answer is a learner's answer to an exercise that asks for one.
type Answer struct {
	Segment  string `json:"segment,omitempty"`  // "00000000000000000000.log" or its base offset
	Position *int64 `json:"position,omitempty"` // byte position of the batch in the .log
	// Cause is why a follower left the ISR (ExerciseISRRejoin): one of
	// LeaveCauses.
	Cause events.ISRCause `json:"cause,omitempty"`
	// Timestamp (milliseconds since the Unix epoch) and Offset answer
	// ExerciseFindTimestamp: the first offset at or after Timestamp.
	Timestamp *int64 `json:"timestamp,omitempty"`
	Offset    *int64 `json:"offset,omitempty"`
	// HW answers ExercisePredictHW.
	HW *int64 `json:"hw,omitempty"`
}

// ExerciseResult is a seat's standing in an exercise: passed (and when),
// or the reason of the last check, as an i18n key and arguments, and the
// learner's checks so far.
type ExerciseResult struct {
	Exercise string   `json:"exercise"`
	Passed   bool     `json:"passed"`
	At       string   `json:"at,omitempty"` // RFC 3339, when passed
	Key      string   `json:"key"`
	Args     []string `json:"args,omitempty"`
	Tries    Tries    `json:"tries"`
}

// maxAnswerRunes bounds the segment of an answer kept with a failed check:
// a segment file's name is 24 characters.
const maxAnswerRunes = 40

// ErrUnknownExercise: no exercise has this id.
var ErrUnknownExercise = fmt.Errorf("%w: no such exercise", kerr.InvalidRequest)

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// offsetRange is an acknowledged produce's offsets; all: with acks=all.
type offsetRange struct {
	first, last int64
	all         bool
}

// maxAcked bounds the acknowledged ranges the grader remembers per
// partition: a learner's experiment is a handful of produces.
const maxAcked = 256

// grader follows one awake seat for the live exercises: its learner's
// actions (learner.go) and its cluster's events. Only what the learner
// did counts: the brokers they stopped, the writes they sent and were
// acknowledged; the events say what the cluster did with them (an unclean
// election, a truncation). It starts over when the seat wakes (a new
// cluster, a new bus, a new Learner); passes are in the roster.
type grader struct {
	bus     *events.Bus
	learner *Learner
	cursor  uint64
	// down holds the brokers the learner stopped and has not restarted;
	// downSince is the learner's count when the first of them went down.
	down      map[int32]bool
	downSince uint64
	acked     map[tp][]offsetRange // the learner's acknowledged produces
	unclean   map[tp]bool
	passed    map[string]bool
	// faulted: the learner stopped a broker or cut a link; left holds why
	// each follower left an ISR since, rejoins the followers that joined
	// again (at most maxRejoins, the newest).
	faulted bool
	left    map[replicaOf]events.ISRCause
	rejoins []rejoin
	// topics: each topic's truncation rule, protocol and replicas.
	topics map[string]topicFacts
	// ExerciseHWTruncation's two halves (exercises_more.go).
	hwLost, epochKept bool
	epochs            map[tp]epochStory
	missing           map[replicaOf]map[int64]bool // the learner's acks=all writes truncated from a replica
	// ExerciseFPlusOne: by the stopped brokers and the replication factor,
	// an ISR topic kept taking acks=all writes, a quorum topic did not.
	fsKept, fsStopped map[string]bool
}

// replicaOf is one broker's replica of a partition.
type replicaOf struct {
	tp
	broker int32
}

// rejoin is a follower that left an ISR, after a fault of the learner's,
// and joined it again.
type rejoin struct {
	replicaOf
	cause events.ISRCause
}

const maxRejoins = 64

// rejoined returns the rejoins seen so far.
func (g *grader) rejoined() []rejoin { return slices.Clone(g.rejoins) }

func newGrader(bus *events.Bus, snap events.Snapshot, learner *Learner) *grader {
	g := &grader{bus: bus, learner: learner, cursor: snap.Seq, down: map[int32]bool{}, acked: map[tp][]offsetRange{},
		unclean: map[tp]bool{}, passed: map[string]bool{}, left: map[replicaOf]events.ISRCause{}, topics: map[string]topicFacts{},
		epochs: map[tp]epochStory{}, missing: map[replicaOf]map[int64]bool{}, fsKept: map[string]bool{}, fsStopped: map[string]bool{}}
	for i := range snap.Topics {
		g.topics[snap.Topics[i].Name] = factsOf(&snap.Topics[i])
	}
	return g
}

// pass notes that id passed; it returns whether this is new.
func (g *grader) pass(id string) bool {
	if id == "" || g.passed[id] {
		return false
	}
	g.passed[id] = true
	return true
}

// advance reads the learner's actions and the events published since the
// last call and returns the live exercises they passed. Actions come
// first: an action is logged before its request is answered, so whatever
// the cluster did with it afterwards is in a later event.
func (g *grader) advance() []string {
	var out []string
	for _, a := range g.learner.take() {
		if a.Kind == ActionProduce {
			if id := g.tolerance(a); g.pass(id) {
				out = append(out, id)
			}
		}
		if id := g.act(a); g.pass(id) {
			out = append(out, id)
		}
	}
	for {
		evs, _ := g.bus.Since(g.cursor, 1024)
		if len(evs) == 0 {
			return out
		}
		for i := range evs {
			if id := g.apply(&evs[i]); g.pass(id) {
				out = append(out, id)
			}
		}
		g.cursor = evs[len(evs)-1].Seq
	}
}

// act folds one learner action in; it returns the exercise it passed (""
// none).
func (g *grader) act(a Action) string {
	if a.Err != nil {
		return ""
	}
	switch a.Kind {
	case ActionCut:
		g.faulted = true
	case ActionDown:
		g.faulted = true
		// "Down" is a broker the learner stopped; one that halted on its
		// own, or the controller's fencing, is not the learner's doing.
		if len(g.down) == 0 {
			g.downSince = a.ended
		}
		g.down[a.Broker] = true
	case ActionUp:
		delete(g.down, a.Broker)
		g.restartedBroker()
	case ActionProduce:
		if a.Acks == 0 || a.First < 0 || a.Last < a.First {
			return "" // not acknowledged with offsets, or nothing appended
		}
		p := tp{a.Topic, a.Partition}
		r := append(g.acked[p], offsetRange{a.First, a.Last, a.Acks == -1})
		g.acked[p] = r[max(0, len(r)-maxAcked):]
		// Sent while a broker the learner stopped was down, and
		// acknowledged before they restarted it: a write sent before the
		// crash and acknowledged after it does not count.
		if a.Acks == -1 && len(g.down) > 0 && g.downSince < a.Began {
			return ExerciseAcksAllOneDown
		}
	}
	return ""
}

// apply folds one event in; it returns the exercise the event passed ("" none).
func (g *grader) apply(e *events.Event) string {
	p := tp{e.Topic, e.Partition}
	var story string
	switch e.Kind {
	case events.KindTopic, events.KindConfig:
		g.noteTopic(e)
	case events.KindElection, events.KindISR:
		if e.Kind == events.KindElection && e.Leader != nil && e.Leader.Unclean {
			g.unclean[p] = true
		}
		if e.Kind == events.KindElection {
			story = g.electionStory(p, e)
		}
		for _, c := range e.ISRChanges {
			r := replicaOf{p, c.Broker}
			switch {
			case c.Joined:
				if cause, ok := g.left[r]; ok {
					delete(g.left, r)
					g.rejoins = append(g.rejoins, rejoin{r, cause})
					g.rejoins = g.rejoins[max(0, len(g.rejoins)-maxRejoins):]
				}
			case c.ToELR || c.Cause == events.ISRELRCleared:
			case g.faulted:
				if _, ok := g.left[r]; !ok { // the first reason it left
					g.left[r] = c.Cause
				}
			}
		}
	case events.KindAppend:
		g.appendStory(p, e)
	case events.KindTruncation:
		g.truncationStory(p, e)
		if !g.unclean[p] {
			return ""
		}
		for _, t := range e.Truncated {
			if slices.ContainsFunc(g.acked[p], func(r offsetRange) bool { return r.first <= t.Offset && t.Offset <= r.last }) {
				return ExerciseLostAck
			}
		}
	}
	return story
}

// gradeLocked runs the live exercises on st's new events and records their
// passes. st.mu is held.
func (c *Class) gradeLocked(st *seatRun) {
	if st.lab == nil {
		return
	}
	for _, id := range st.grader.advance() {
		if err := c.RecordExercise(st.id, id); err != nil {
			c.opts.Logger.Warn("class: recording an exercise", "seat", st.id, "err", err)
		}
	}
}

// Grade runs the live exercises on the events seat's cluster has published
// since it was last graded, if it is awake (it does not wake it). The
// leader publishes an acknowledgement after it answers, so the event can
// land after the request that caused it was graded; the seat's exercise
// list and the teacher's dashboard grade before they read, instead of
// waiting for the learner's next request.
func (c *Class) Grade(seat int) {
	st, err := c.run(seat)
	if err != nil {
		return
	}
	st.mu.Lock()
	c.gradeLocked(st)
	st.mu.Unlock()
}

// Check grades exercise id for seat now, on the seat's cluster (waking
// it), with answer for the exercises that ask for one, and returns the
// seat's standing (a pass stays a pass) with this check's outcome.
func (c *Class) Check(seat int, id string, answer Answer) (ExerciseResult, error) {
	if !slices.Contains(Exercises, id) {
		return ExerciseResult{}, ErrUnknownExercise
	}
	st, err := c.run(seat)
	if err != nil {
		return ExerciseResult{}, err
	}
	_, cl, err := c.acquire(st)
	if err != nil {
		return ExerciseResult{}, err
	}
	defer c.release(st)
	st.mu.Lock()
	c.gradeLocked(st)
	st.mu.Unlock()
	var key string
	var args []string
	if id == ExerciseISRRejoin {
		st.mu.Lock()
		var rejoins []rejoin
		if st.grader != nil {
			rejoins = st.grader.rejoined()
		}
		st.mu.Unlock()
		if key = checkISRRejoin(rejoins, answer); key == "" {
			if err := c.RecordExercise(seat, id); err != nil {
				return ExerciseResult{}, err
			}
		}
	}
	if id == ExercisePredictHW {
		if key = checkPredictHW(seat, answer); key == "" {
			if err := c.RecordExercise(seat, id); err != nil {
				return ExerciseResult{}, err
			}
		}
	}
	if id == ExerciseFindTimestamp {
		if key = checkFindTimestamp(cl, answer); key == "" {
			if err := c.RecordExercise(seat, id); err != nil {
				return ExerciseResult{}, err
			}
		}
	}
	if id == ExerciseFindOffset {
		if key, args = checkFindOffset(cl, answer); key == "" {
			if err := c.RecordExercise(seat, id); err != nil {
				return ExerciseResult{}, err
			}
		}
	}
	r, _ := c.Result(seat, id) // the standing; this check's outcome when it has one
	if key != "" {
		r.Key, r.Args = key, args
	}
	return r, nil
}

// Try is a learner's check of exercise id (Check), kept in the roster with
// its outcome: the teacher's dashboard shows who tries and fails, with the
// last failed answer. The teacher's own checks (an autograder) are not the
// learner's tries and go to Check.
func (c *Class) Try(seat int, id string, answer Answer) (ExerciseResult, error) {
	r, err := c.Check(seat, id, answer)
	if err != nil {
		return r, err
	}
	var failed *FailedCheck
	if r.Key != "exercise.passed.text" { // this check's own outcome was not a pass
		failed = &FailedCheck{Key: r.Key, Args: r.Args}
		if id == ExerciseFindOffset || id == ExerciseISRRejoin || id == ExerciseFindTimestamp || id == ExercisePredictHW {
			a := answer
			if rs := []rune(a.Segment); len(rs) > maxAnswerRunes {
				a.Segment = string(rs[:maxAnswerRunes]) + "…"
			}
			if rs := []rune(string(a.Cause)); len(rs) > maxAnswerRunes {
				a.Cause = events.ISRCause(string(rs[:maxAnswerRunes]) + "…")
			}
			failed.Answer = &a
		}
	}
	if err := c.RecordTry(seat, id, failed); err != nil {
		return r, err
	}
	standing, _ := c.Result(seat, id)
	r.Tries = standing.Tries
	return r, nil
}

// checkISRRejoin checks an answer to ExerciseISRRejoin against the
// followers that left an ISR after the learner's fault and joined again:
// "" when one of them left for the cause answered, else the i18n key of
// why not.
func checkISRRejoin(rejoins []rejoin, a Answer) string {
	switch {
	case len(rejoins) == 0:
		return "exercise.isr-rejoin.none"
	case !slices.Contains(LeaveCauses, a.Cause):
		return "exercise.isr-rejoin.answer"
	case slices.ContainsFunc(rejoins, func(r rejoin) bool { return r.cause == a.Cause }):
		return ""
	}
	return "exercise.isr-rejoin.wrong"
}

// checkFindTimestamp compares answer with broker 1's own lookup of the
// answer's timestamp in demo-0 of cl; "" when it matches, else the i18n
// key of why not.
func checkFindTimestamp(cl *cluster.Cluster, a Answer) string {
	b := cl.Broker(1)
	if b == nil {
		return "exercise.find-offset.broker-down"
	}
	r := b.Replica("demo", 0)
	if r == nil || r.Log().LogEndOffset() < 2 {
		return "exercise.find-timestamp.no-records"
	}
	if a.Timestamp == nil || a.Offset == nil {
		return "exercise.find-timestamp.answer"
	}
	off, ok, err := r.Log().OffsetForTimestamp(*a.Timestamp)
	switch {
	case err != nil || !ok:
		return "exercise.find-timestamp.too-late"
	case off == 0:
		return "exercise.find-timestamp.first"
	case off != *a.Offset:
		return "exercise.find-timestamp.wrong"
	}
	return ""
}

// checkFindOffset compares answer with broker 1's own lookup of FindOffset
// in demo-0 of cl; "" when it matches, else the i18n key and arguments of
// why not.
func checkFindOffset(cl *cluster.Cluster, a Answer) (string, []string) {
	n := strconv.Itoa(FindOffset)
	b := cl.Broker(1)
	if b == nil {
		return "exercise.find-offset.broker-down", nil
	}
	r := b.Replica("demo", 0)
	if r == nil {
		return "exercise.find-offset.no-offset", []string{n}
	}
	tr, err := r.Log().Lookup(FindOffset)
	if err != nil {
		return "exercise.find-offset.no-offset", []string{n}
	}
	if a.Position == nil || a.Segment == "" {
		return "exercise.find-offset.answer", []string{n}
	}
	// A segment is named by its base offset, 20 digits with leading zeros.
	// Which half is wrong is said apart: a wrong segment is a different
	// misunderstanding (how segments are named) from a wrong position.
	base, err := strconv.ParseInt(strings.TrimSuffix(path.Base(strings.TrimSpace(a.Segment)), ".log"), 10, 64)
	if err != nil || base != tr.SegmentBaseOffset {
		return "exercise.find-offset.wrong-segment", []string{n}
	}
	if *a.Position != tr.Position {
		return "exercise.find-offset.wrong", []string{n}
	}
	return "", nil
}

package class

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/replication/rulestest"
)

// Three exercises on the replication write-ups: the KIP-101 story on the
// learner's own cluster (ExerciseHWTruncation), the HW from given LEOs
// (ExercisePredictHW) and f+1 against 2f+1 (ExerciseFPlusOne).
const (
	// ExerciseHWTruncation: lose a committed record under the old HW
	// truncation rule and keep it under leader epochs. Passed when both
	// happened on the seat's cluster: on a truncation.rule=high-watermark
	// topic, a record the learner got acknowledged with acks=all truncated
	// from a replica, which was then elected leader cleanly before it had
	// fetched the record again (the record is gone); and, on a leader-epoch
	// topic, after acks=all writes of the learner's there and a broker they
	// restarted, a leader elected cleanly holding every one of them.
	ExerciseHWTruncation = "hw-truncation"
	// ExercisePredictHW: the leader's HW from given LEOs and ISR (the seat's
	// HWQuestion). Passed by an answer (Answer.HW) equal to the HW the
	// replication rules themselves reach in that state.
	ExercisePredictHW = "predict-hw"
	// ExerciseFPlusOne: f+1 against 2f+1 on the real cluster. Passed when,
	// with the same brokers stopped by the learner, an acks=all produce of
	// theirs to an ISR topic was acknowledged and one to a
	// replication.protocol=quorum topic of the same replication factor
	// failed, with a majority of its partition's replicas among the
	// stopped brokers.
	ExerciseFPlusOne = "f-plus-one"
)

// The configs the exercises read, as the controller spells them.
const (
	configTruncationRule = "truncation.rule"
	configProtocol       = "replication.protocol"
	ruleHighWatermark    = "high-watermark"
	protocolQuorum       = "quorum"
)

// topicFacts is what the grader knows of a topic: its truncation rule and
// replication protocol ("" the defaults: leader-epoch, isr) and each
// partition's replicas.
type topicFacts struct {
	rule, protocol string
	replicas       map[int32][]int32
}

func factsOf(t *events.Topic) topicFacts {
	f := topicFacts{rule: t.Configs[configTruncationRule], protocol: t.Configs[configProtocol], replicas: map[int32][]int32{}}
	for _, p := range t.Partitions {
		f.replicas[p.Partition] = slices.Clone(p.Replicas)
	}
	return f
}

// rf is the replication factor of the topic's partition p (its first
// partition's when p is unknown).
func (f topicFacts) rf(p int32) (int, []int32) {
	r, ok := f.replicas[p]
	if !ok {
		r = f.replicas[0]
	}
	return len(r), r
}

// epochStory follows a leader-epoch partition for ExerciseHWTruncation:
// restarted, a broker the learner restarted after an acks=all write of
// theirs was acknowledged here.
type epochStory struct{ restarted bool }

// maxMissing bounds the truncated offsets the grader follows per replica.
const maxMissing = 1024

// noteTopic folds a topic event or config change into the grader's facts.
func (g *grader) noteTopic(e *events.Event) {
	switch {
	case e.Kind == events.KindTopic && e.TopicCreated != nil:
		g.topics[e.TopicCreated.Name] = factsOf(e.TopicCreated)
	case e.Kind == events.KindTopic:
		delete(g.topics, e.Topic)
	case e.Kind == events.KindConfig && e.Topic != "" && e.Config != nil && e.Config.Key == configTruncationRule:
		if f, ok := g.topics[e.Topic]; ok {
			f.rule = e.Config.Value
			g.topics[e.Topic] = f
		}
	}
}

// ackedAll reports whether offset off of p was acknowledged to the learner
// with acks=all.
func (g *grader) ackedAll(p tp, off int64) bool {
	return slices.ContainsFunc(g.acked[p], func(r offsetRange) bool { return r.all && r.first <= off && off <= r.last })
}

// restartedBroker notes, after the learner restarted a broker, every
// leader-epoch partition holding acks=all writes of theirs.
func (g *grader) restartedBroker() {
	for p, rs := range g.acked {
		if g.topics[p.topic].rule == ruleHighWatermark || !slices.ContainsFunc(rs, func(r offsetRange) bool { return r.all }) {
			continue
		}
		st := g.epochs[p]
		st.restarted = true
		g.epochs[p] = st
	}
}

// truncationStory notes the learner's acks=all writes a truncation took
// from a replica: missing there until the replica appends them again.
func (g *grader) truncationStory(p tp, e *events.Event) {
	r := replicaOf{p, e.Broker}
	for _, t := range e.Truncated {
		if !g.ackedAll(p, t.Offset) {
			continue
		}
		if g.missing[r] == nil {
			g.missing[r] = map[int64]bool{}
		}
		if len(g.missing[r]) < maxMissing {
			g.missing[r][t.Offset] = true
		}
	}
}

// appendStory: a replica that appends an offset again holds it again.
func (g *grader) appendStory(p tp, e *events.Event) {
	r := replicaOf{p, e.Broker}
	if len(g.missing[r]) == 0 || e.Offsets == nil {
		return
	}
	for off := range g.missing[r] {
		if e.Offsets.Base <= off && off <= e.Offsets.Last {
			delete(g.missing[r], off)
		}
	}
}

// electionStory folds an election of p into ExerciseHWTruncation: a
// leader elected cleanly without some of the learner's acknowledged
// writes loses them (the high-watermark half); one elected after a
// restart of the learner's, with all of them, keeps them (the leader-epoch
// half).
func (g *grader) electionStory(p tp, e *events.Event) string {
	if e.Leader == nil || e.Leader.Unclean || e.Leader.Leader == events.NoBroker {
		return ""
	}
	lacks := len(g.missing[replicaOf{p, e.Leader.Leader}]) > 0
	switch {
	case g.topics[p.topic].rule == ruleHighWatermark:
		g.hwLost = g.hwLost || lacks
	case g.epochs[p].restarted && !lacks:
		g.epochKept = true
	}
	return g.truncationPassed()
}

func (g *grader) truncationPassed() string {
	if g.hwLost && g.epochKept {
		return ExerciseHWTruncation
	}
	return ""
}

// tolerance folds a produce of the learner's sent while brokers they
// stopped were down into ExerciseFPlusOne.
func (g *grader) tolerance(a Action) string {
	if len(g.down) == 0 || a.Began <= g.downSince {
		return ""
	}
	f, ok := g.topics[a.Topic]
	if !ok {
		return ""
	}
	rf, replicas := f.rf(a.Partition)
	ids := make([]string, 0, len(g.down))
	for id := range g.down {
		ids = append(ids, strconv.Itoa(int(id)))
	}
	slices.Sort(ids)
	key := strings.Join(ids, ",") + "/" + strconv.Itoa(rf)
	switch {
	case f.protocol == protocolQuorum && a.Err != nil:
		down := 0
		for _, r := range replicas {
			if g.down[r] {
				down++
			}
		}
		if down > rf/2 { // a majority gone: 2f+1 replicas tolerate f
			g.fsStopped[key] = true
		}
	case (f.protocol == "" || f.protocol == "isr") && a.Err == nil && a.Acks == -1 && a.First >= 0:
		g.fsKept[key] = true
	default:
		return ""
	}
	if g.fsKept[key] && g.fsStopped[key] {
		return ExerciseFPlusOne
	}
	return ""
}

// HWQuestion is a seat's ExercisePredictHW: partition p of 3 replicas
// with broker 1 leading; follower 3 left the ISR as it lagged. LEOs are
// by broker; HW is the answer the replication rules reach.
type HWQuestion struct {
	LEO map[int32]int64 `json:"leo"`
	ISR []int32         `json:"isr"`
	HW  int64           `json:"-"`
}

// QuestionHW returns seat's ExercisePredictHW question, each seat its own
// numbers. The state is built with the replication rules themselves
// (replication/rulestest: three replication.Partition machines): records
// synced to all, more fetched by follower 2 only, a tick past
// replica.lag.time.max.ms for follower 3, and more records the followers
// have not fetched yet.
func QuestionHW(seat int) (HWQuestion, error) {
	synced := 2 + seat%3
	fetched := synced + 2 + seat%4
	leo := fetched + 2 + seat%2
	c := rulestest.New(3, replication.DefaultConfig(), false)
	n := 0
	produce := func(upTo int) error {
		for ; n < upTo; n++ {
			if err := c.Run("produce", nil, map[string]string{"value": "m" + strconv.Itoa(n), "acks": "1"}); err != nil {
				return err
			}
		}
		return nil
	}
	steps := []func() error{
		func() error { return produce(synced) },
		func() error { return c.Run("sync", nil, nil) },
		func() error { return produce(fetched) },
		func() error { return c.Run("tick", []string{"2000"}, nil) },
		func() error { return c.Run("fetch", []string{"2"}, map[string]string{"times": "2"}) },
		func() error { return c.Run("tick", []string{"2000"}, nil) },
		func() error { return produce(leo) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return HWQuestion{}, fmt.Errorf("class: the HW question: %w", err)
		}
	}
	st, ok := c.Status(1)
	if !ok {
		return HWQuestion{}, fmt.Errorf("class: the HW question: broker 1 is down")
	}
	q := HWQuestion{LEO: map[int32]int64{}, ISR: slices.Clone(st.ISR), HW: st.HighWatermark}
	for id := int32(1); id <= 3; id++ {
		q.LEO[id] = int64(len(c.Log(id)))
	}
	return q, nil
}

// checkPredictHW checks an answer to seat's ExercisePredictHW; "" when it
// is the rules' HW, else the i18n key of why not: the leader's LEO (a
// record not on every ISR member is not committed) and the smallest LEO
// of all (a replica out of the ISR does not hold the HW back) are the two
// usual mistakes, said apart.
func checkPredictHW(seat int, a Answer) string {
	q, err := QuestionHW(seat)
	switch {
	case err != nil:
		return "exercise.predict-hw.answer"
	case a.HW == nil:
		return "exercise.predict-hw.answer"
	case *a.HW == q.HW:
		return ""
	case *a.HW == q.LEO[1]:
		return "exercise.predict-hw.leader-leo"
	case *a.HW == min(q.LEO[1], q.LEO[2], q.LEO[3]):
		return "exercise.predict-hw.out-of-isr"
	}
	return "exercise.predict-hw.wrong"
}

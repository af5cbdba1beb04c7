package class

import (
	"errors"
	"slices"
	"testing"

	"tidemark/events"
)

// TestQuestionHW: each seat's question is built by the replication rules
// themselves: follower 3 out of the ISR, the HW at follower 2's LEO, under
// the leader's; only that answer passes, and the two usual mistakes are
// told apart.
func TestQuestionHW(t *testing.T) {
	seen := map[int64]bool{}
	for seat := 1; seat <= 6; seat++ {
		q, err := QuestionHW(seat)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(q.ISR, []int32{1, 2}) || q.HW != q.LEO[2] || !(q.LEO[1] > q.LEO[2] && q.LEO[2] > q.LEO[3]) {
			t.Fatalf("seat %d: %+v (HW %d)", seat, q, q.HW)
		}
		seen[q.HW] = true
		hw := func(v int64) Answer { return Answer{HW: &v} }
		for a, want := range map[*Answer]string{{}: "exercise.predict-hw.answer", ptr(hw(q.LEO[1])): "exercise.predict-hw.leader-leo",
			ptr(hw(q.LEO[3])): "exercise.predict-hw.out-of-isr", ptr(hw(q.HW + 100)): "exercise.predict-hw.wrong", ptr(hw(q.HW)): ""} {
			if got := checkPredictHW(seat, *a); got != want {
				t.Errorf("seat %d, answer %v: %q, want %q", seat, a.HW, got, want)
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("six seats share %d HWs: the numbers should differ between neighbours", len(seen))
	}
}

func ptr[T any](v T) *T { return &v }

// TestGraderHWTruncation: the KIP-101 story must happen under both rules
// to the learner's own acks=all writes; either half alone, an unclean
// election, or writes that are not the learner's pass nothing.
func TestGraderHWTruncation(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 64})
	l := new(Learner)
	topic := func(name, rule string) events.Topic {
		return events.Topic{Name: name, Configs: map[string]string{"truncation.rule": rule},
			Partitions: []events.Partition{{Partition: 0, Replicas: []int32{1, 2}}}}
	}
	hw := topic("hw", "high-watermark")
	g := newGrader(bus, events.Snapshot{Topics: []events.Topic{hw}}, l)
	le := topic("le", "leader-epoch")
	bus.Publish(events.Event{Kind: events.KindTopic, Topic: "le", TopicCreated: &le})
	produce := func(topic string, acks int16, off int64) {
		l.Did(Action{Kind: ActionProduce, Began: l.Begin(), Topic: topic, Acks: acks, First: off, Last: off})
	}
	truncate := func(topic string, off int64) {
		bus.Publish(events.Event{Kind: events.KindTruncation, Topic: topic, Broker: 2, Truncated: []events.TruncatedRecord{{Offset: off}}})
	}
	elect := func(topic string, leader int32, unclean bool) {
		bus.Publish(events.Event{Kind: events.KindElection, Topic: topic, Leader: &events.Leadership{Leader: leader, Unclean: unclean}})
	}
	produce("hw", 1, 0) // acks=1: not committed when acknowledged
	produce("le", -1, 0)
	truncate("hw", 0)
	truncate("hw", 5) // offset 5 is nobody's write of the learner's
	elect("le", 2, false)
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("an acks=1 write truncated, an election without a restart: %v", got)
	}
	produce("hw", -1, 1)
	truncate("hw", 1) // the old rule loses a committed write: half the story
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("only the high-watermark half: %v", got)
	}
	l.Did(Action{Kind: ActionDown, Began: l.Begin(), Broker: 2})
	l.Did(Action{Kind: ActionUp, Began: l.Begin(), Broker: 2})
	elect("le", 2, true) // unclean: not the leader-epoch rule's doing
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("an unclean election on the leader-epoch topic: %v", got)
	}
	elect("le", 2, false)
	if got := g.advance(); !slices.Equal(got, []string{ExerciseHWTruncation}) {
		t.Fatalf("both halves: %v", got)
	}

	// The leader-epoch half fails when the write was lost there too.
	g = newGrader(bus, events.Snapshot{Seq: bus.LastSeq()}, l)
	g.topics["le"], g.topics["hw"] = factsOf(&le), factsOf(&hw)
	produce("le", -1, 3)
	produce("hw", -1, 3)
	l.Did(Action{Kind: ActionUp, Began: l.Begin(), Broker: 2})
	truncate("le", 3)
	truncate("hw", 3)
	elect("le", 1, false)
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("the write lost under leader epochs too: %v", got)
	}
}

// TestGraderFPlusOne: with the same two brokers of three stopped by the
// learner, their acks=all write to an ISR topic is acknowledged and their
// write to a quorum topic of the same RF fails: passed. One broker down, a
// write nobody stopped a broker for, or topics of different RF: not.
func TestGraderFPlusOne(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 64})
	l := new(Learner)
	three := []events.Partition{{Partition: 0, Replicas: []int32{1, 2, 3}}}
	snap := events.Snapshot{Topics: []events.Topic{{Name: "isr", Partitions: three},
		{Name: "raft", Configs: map[string]string{"replication.protocol": "quorum"}, Partitions: three},
		{Name: "two", Partitions: []events.Partition{{Partition: 0, Replicas: []int32{1, 2}}}}}}
	g := newGrader(bus, snap, l)
	ok := func(topic string, off int64) {
		l.Did(Action{Kind: ActionProduce, Began: l.Begin(), Topic: topic, Acks: -1, First: off, Last: off})
	}
	fail := func(topic string) {
		l.Did(Action{Kind: ActionProduce, Began: l.Begin(), Topic: topic, Acks: -1, First: -1, Last: -1, Err: errors.New("NOT_ENOUGH_REPLICAS")})
	}
	down := func(id int32) { l.Did(Action{Kind: ActionDown, Began: l.Begin(), Broker: id}) }
	up := func(id int32) { l.Did(Action{Kind: ActionUp, Began: l.Begin(), Broker: id}) }
	ok("isr", 0)
	fail("raft") // nothing down
	down(3)
	ok("isr", 1)
	fail("raft") // one of three down: a quorum keeps a majority, this failure is something else
	if got := g.advance(); slices.Contains(got, ExerciseFPlusOne) {
		t.Fatalf("one broker down: %v", got)
	}
	down(2)
	ok("two", 0) // RF 2
	fail("raft")
	if got := g.advance(); slices.Contains(got, ExerciseFPlusOne) {
		t.Fatalf("an RF-2 topic against an RF-3 quorum: %v", got)
	}
	up(2)
	down(2) // the same two down again
	ok("isr", 2)
	if got := g.advance(); !slices.Equal(got, []string{ExerciseFPlusOne}) {
		t.Fatalf("ISR writes with 2 of 3 down, the quorum's refused: %v", got)
	}
}

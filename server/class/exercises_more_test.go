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
// to the learner's own acks=all writes. A follower that truncated an
// acknowledged write and fetched it again before it led lost nothing;
// either half alone, an unclean election, an acks=1 write, or a leader
// under leader epochs that lacks a write pass nothing.
func TestGraderHWTruncation(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 256})
	l := new(Learner)
	topic := func(name, rule string) events.Topic {
		return events.Topic{Name: name, Configs: map[string]string{"truncation.rule": rule},
			Partitions: []events.Partition{{Partition: 0, Replicas: []int32{1, 2}}}}
	}
	hw, le := topic("hw", "high-watermark"), topic("le", "leader-epoch")
	g := newGrader(bus, events.Snapshot{Topics: []events.Topic{hw}}, l)
	bus.Publish(events.Event{Kind: events.KindTopic, Topic: "le", TopicCreated: &le})
	produce := func(topic string, acks int16, off int64) {
		l.Did(Action{Kind: ActionProduce, Began: l.Begin(), Topic: topic, Acks: acks, First: off, Last: off})
	}
	truncate := func(topic string, broker int32, off int64) {
		bus.Publish(events.Event{Kind: events.KindTruncation, Topic: topic, Broker: broker, Truncated: []events.TruncatedRecord{{Offset: off}}})
	}
	fetched := func(topic string, broker int32, off int64) {
		bus.Publish(events.Event{Kind: events.KindAppend, Topic: topic, Broker: broker, Offsets: &events.Offsets{Base: off, Last: off}})
	}
	elect := func(topic string, leader int32, unclean bool) {
		bus.Publish(events.Event{Kind: events.KindElection, Topic: topic, Leader: &events.Leadership{Leader: leader, Unclean: unclean}})
	}
	restart := func(broker int32) {
		l.Did(Action{Kind: ActionDown, Began: l.Begin(), Broker: broker})
		l.Did(Action{Kind: ActionUp, Began: l.Begin(), Broker: broker})
	}
	advance := func(what string, want ...string) {
		t.Helper()
		if got := g.advance(); !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	produce("hw", 1, 0) // acks=1: not committed when acknowledged
	truncate("hw", 2, 0)
	elect("hw", 2, false)
	advance("an acks=1 write lost")
	produce("hw", -1, 1)
	truncate("hw", 2, 1)
	fetched("hw", 2, 1) // fetched again before it leads: nothing lost
	elect("hw", 2, false)
	advance("a write fetched again before its replica led")

	produce("le", -1, 0)
	elect("le", 2, false) // no restart of the learner's before it
	advance("an election on the leader-epoch topic without a restart")
	restart(2)
	truncate("le", 2, 0)
	elect("le", 2, false) // the new leader lacks the write: not kept
	advance("the leader-epoch topic losing the write")
	elect("le", 1, false) // broker 1 holds it: kept, but only half the story
	advance("only the leader-epoch half")

	produce("hw", -1, 2)
	truncate("hw", 2, 2) // the follower's restart: truncated to its HW
	elect("hw", 2, false)
	advance("both halves", ExerciseHWTruncation)

	// An unclean election is lost-ack's story, not this one.
	g = newGrader(bus, events.Snapshot{Seq: bus.LastSeq(), Topics: []events.Topic{hw, le}}, l)
	g.epochs[tp{"le", 0}] = epochStory{restarted: true}
	g.epochKept = true
	produce("hw", -1, 5)
	truncate("hw", 2, 5)
	elect("hw", 2, true)
	if got := g.advance(); slices.Contains(got, ExerciseHWTruncation) {
		t.Fatalf("an unclean election passed %v", got)
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

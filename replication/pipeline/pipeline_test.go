package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// rec is one record of an in-memory log: its value and the generation
// stamp it was written under (the batch's leader epoch).
type rec struct {
	value string
	stamp int32
}

// lab is a partition's replicas as Members over an in-memory network that
// loses stopped brokers and cut links, with the controller's pipeline: each
// test steps it explicitly (produce, tick, crash), so nothing depends on
// timing. Delivery is in order, in the sender's turn, as the broker's
// transport delivers.
type lab struct {
	t       *testing.T
	minISR  int
	members map[int32]*Member // nil while down
	logs    map[int32][]rec   // survive a crash (the segment files)
	stamps  map[int32]int32   // each log's generation stamp (its epoch cache's last)
	cut     map[[2]int32]bool
	pl      Pipeline // the controller's
	nowMs   int64
	// queue holds messages not yet delivered; discards counts each
	// broker's discarded replicas.
	queue    []Message
	discards map[int32][]Truncation
	sent     map[Kind]int
}

const timeoutMs = 1000

func newLab(t *testing.T, n, minISR int) *lab {
	l := &lab{t: t, minISR: minISR, members: map[int32]*Member{}, logs: map[int32][]rec{}, stamps: map[int32]int32{},
		cut: map[[2]int32]bool{}, discards: map[int32][]Truncation{}, sent: map[Kind]int{}}
	for i := 1; i <= n; i++ {
		l.pl.Members = append(l.pl.Members, int32(i))
		l.stamps[int32(i)] = -1
	}
	for _, id := range l.pl.Members {
		l.start(id)
	}
	l.settle()
	return l
}

func (l *lab) start(id int32) {
	leo := int64(len(l.logs[id]))
	l.members[id] = New(Config{ID: id, TimeoutMs: timeoutMs}, LogState{LogEndOffset: leo, Stamp: l.stamps[id]}, l.nowMs)
	l.members[id].SetPipeline(l.pl)
}

// setPipeline is the controller publishing a new pipeline to every
// running replica.
func (l *lab) setPipeline(p Pipeline) {
	l.pl = p
	for _, id := range l.ids() {
		if m := l.members[id]; m != nil {
			m.SetPipeline(p)
		}
	}
}

// ids returns every broker id, in order.
func (l *lab) ids() []int32 { return slices.Sorted(maps.Keys(l.members)) }

// crash stops a broker; fence is the controller noticing it (its session
// expired): the pipeline is rebuilt without it.
func (l *lab) crash(id int32) { l.members[id] = nil }

func (l *lab) fence(id int32) {
	if p, ok := l.pl.Without(id); ok {
		l.setPipeline(p)
	}
	l.settle()
}

// restart brings a broker back and the controller adds it at the tail.
func (l *lab) restart(id int32) {
	l.start(id)
	if p, ok := l.pl.Rejoin(id); ok {
		l.setPipeline(p)
	}
	l.settle()
}

// produce has the head append value and run the pipeline; it returns
// whether an acks=all produce was acknowledged (the HW passed it), or the
// refusal.
func (l *lab) produce(value string) (bool, error) {
	head := l.members[l.pl.Head()]
	if head == nil {
		return false, kerr.NotLeaderForPartition
	}
	if err := head.CheckProduce(-1, l.minISR); err != nil {
		return false, err
	}
	id := l.pl.Head()
	l.logs[id] = append(l.logs[id], rec{value, l.pl.Stamp})
	l.stamps[id] = l.pl.Stamp
	off := int64(len(l.logs[id]) - 1)
	head.Produced(off + 1)
	l.settle()
	if head.Status().HighWatermark <= off || len(l.logs[id]) <= int(off) || l.logs[id][off].value != value {
		return false, nil
	}
	return true, head.AckError(-1, l.minISR)
}

func (l *lab) tick(ms int64) {
	l.nowMs += ms
	for _, id := range l.ids() {
		if m := l.members[id]; m != nil {
			m.Tick(l.nowMs)
		}
	}
	l.settle()
}

// settle drains every member and delivers messages until nothing moves.
func (l *lab) settle() {
	for range 1000 {
		moved := false
		for _, id := range l.ids() {
			if m := l.members[id]; m != nil && l.apply(id, m.Ready()) {
				moved = true
			}
		}
		for len(l.queue) > 0 {
			msg := l.queue[0]
			l.queue = l.queue[1:]
			moved = true
			to := l.members[msg.To]
			if to == nil || l.cut[[2]int32{msg.From, msg.To}] {
				if from := l.members[msg.From]; from != nil {
					from.Unreachable(msg.To)
				}
				continue
			}
			if err := to.Step(msg); err != nil {
				l.t.Logf("%d→%d %v refused: %v", msg.From, msg.To, msg.Kind, err)
			}
			l.apply(msg.To, to.Ready())
		}
		if !moved {
			return
		}
	}
	l.t.Fatal("the pipeline did not settle")
}

// apply does what a Ready says to the in-memory log, as the broker does
// to its segment files.
func (l *lab) apply(id int32, rd Ready) bool {
	if rd.Empty() {
		return false
	}
	m := l.members[id]
	if t := rd.Truncation; t != nil {
		if t.Discard {
			l.logs[id] = nil
			l.discards[id] = append(l.discards[id], *t)
		} else {
			l.logs[id] = l.logs[id][:t.ToOffset]
		}
	}
	if a := rd.Append; a != nil {
		from := l.logs[a.From]
		l.logs[id] = append(l.logs[id], from[a.BaseOffset:a.EndOffset]...)
		l.stamps[id] = from[a.EndOffset-1].stamp // as the epoch cache assigns it
		m.LogChanged(0, int64(len(l.logs[id])))
	}
	if rd.StampStart >= 0 {
		l.stamps[id] = rd.Stamp
	}
	for _, msg := range rd.Messages {
		l.sent[msg.Kind]++
		l.queue = append(l.queue, msg)
	}
	if f := rd.Failure; f != nil && f.Stamp == l.pl.Stamp {
		if p, ok := l.pl.Without(f.Failed); ok {
			l.setPipeline(p)
		}
	}
	return true
}

func (l *lab) values(id int32) []string {
	var out []string
	for _, r := range l.logs[id] {
		out = append(out, r.value)
	}
	return out
}

// mustAccept produces value and fails the test unless it is acknowledged.
func (l *lab) mustAccept(value string) {
	l.t.Helper()
	if ok, err := l.produce(value); !ok || err != nil {
		l.t.Fatalf("produce %s: acknowledged %v, err %v; pipeline %v", value, ok, err, l.pl)
	}
}

// survives checks that every acknowledged value is on every pipeline
// member, in order, and that the members' logs are equal.
func (l *lab) survives(acked []string) {
	l.t.Helper()
	for _, id := range l.pl.Members {
		if got := l.values(id); !slices.Equal(got[:min(len(got), len(acked))], acked) || len(got) < len(acked) {
			l.t.Errorf("member %d holds %v, want the acknowledged %v first", id, got, acked)
		}
		if got, want := l.values(id), l.values(l.pl.Head()); !slices.Equal(got, want) {
			l.t.Errorf("member %d holds %v, the head %v", id, got, want)
		}
	}
}

// TestPipelineFailures: RF 3 and RF 5 with f = 1 and f = 2 members failing
// one after the other. Each failure rebuilds the pipeline under a new stamp
// from the survivors; the write in flight when a member fails is not
// acknowledged (the survivors' length agreement cuts it from the head), the
// same write sent again is; every acknowledged write survives on every
// member; acks=all is refused with NOT_ENOUGH_REPLICAS once the pipeline is
// shorter than min.insync.replicas.
func TestPipelineFailures(t *testing.T) {
	for _, c := range []struct {
		rf, f, minISR int
		// accepted says, after each failure, whether acks=all writes are
		// still accepted.
		accepted []bool
	}{
		{rf: 3, f: 1, minISR: 2, accepted: []bool{true}},
		{rf: 3, f: 2, minISR: 2, accepted: []bool{true, false}},
		{rf: 3, f: 2, minISR: 1, accepted: []bool{true, true}},
		{rf: 5, f: 1, minISR: 3, accepted: []bool{true}},
		{rf: 5, f: 2, minISR: 3, accepted: []bool{true, true}},
		{rf: 5, f: 2, minISR: 4, accepted: []bool{true, false}},
	} {
		t.Run(fmt.Sprintf("rf%d-f%d-min%d", c.rf, c.f, c.minISR), func(t *testing.T) {
			l := newLab(t, c.rf, c.minISR)
			var acked []string
			l.mustAccept("a")
			acked = append(acked, "a")
			for i := range c.f {
				// The tail-most failing member first, then the middle: a
				// failed forward is reported up the pipeline.
				victim := l.pl.Members[len(l.pl.Members)-1]
				if i > 0 {
					victim = l.pl.Members[1]
				}
				stamp := l.pl.Stamp
				l.crash(victim)
				v := fmt.Sprintf("w%d", i)
				// The write in flight when the member fails: the survivors
				// keep it if every one of them has it (the failed member
				// was after them all), else the recovery cuts it.
				ok, err := l.produce(v)
				if l.pl.Stamp != stamp+1 || slices.Contains(l.pl.Members, victim) {
					t.Fatalf("after %d failed: pipeline %v, stamp %d; want it rebuilt without it under stamp %d", victim, l.pl.Members, l.pl.Stamp, stamp+1)
				}
				if !ok && err == nil {
					ok, err = l.produce(v) // the client's retry
				}
				if c.accepted[i] != (ok && err == nil) {
					t.Fatalf("after %d failures: write %s acknowledged %v (err %v), want %v", i+1, v, ok, err, c.accepted[i])
				}
				if c.accepted[i] {
					acked = append(acked, v)
				} else if !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) && !errors.Is(err, kerr.NotEnoughReplicas) {
					t.Fatalf("refused with %v, want NOT_ENOUGH_REPLICAS(_AFTER_APPEND)", err)
				}
				if !c.accepted[i] {
					if _, err := l.produce("x"); !errors.Is(err, kerr.NotEnoughReplicas) {
						t.Fatalf("a new write on %v: %v, want NOT_ENOUGH_REPLICAS", l.pl.Members, err)
					}
				}
				for _, id := range l.pl.Members {
					if got := l.values(id); !slices.Contains(got, v) && c.accepted[i] {
						t.Fatalf("member %d holds %v, not the acknowledged %s", id, got, v)
					}
				}
			}
			l.survives(acked)
			if len(l.pl.Members) != c.rf-c.f {
				t.Errorf("pipeline %v, want %d members", l.pl.Members, c.rf-c.f)
			}
		})
	}
}

// TestStaleStampDiscarded: a member that was down while the pipeline was
// rebuilt comes back with an older generation stamp; when it rejoins at
// the tail under a new stamp its replica is discarded (emptied, naming its
// stale stamp) and copied from its predecessor, after which writes flow
// through it again.
func TestStaleStampDiscarded(t *testing.T) {
	l := newLab(t, 3, 2)
	l.mustAccept("a")
	l.crash(2)
	l.fence(2) // its session expired: [1 3] under stamp 1
	if !slices.Equal(l.pl.Members, []int32{1, 3}) || l.pl.Stamp != 1 {
		t.Fatalf("pipeline %v stamp %d, want [1 3] stamp 1", l.pl.Members, l.pl.Stamp)
	}
	l.mustAccept("b")
	l.mustAccept("c")
	l.restart(2)
	if !slices.Equal(l.pl.Members, []int32{1, 3, 2}) || l.pl.Stamp != 2 {
		t.Fatalf("pipeline %v stamp %d, want [1 3 2] stamp 2", l.pl.Members, l.pl.Stamp)
	}
	if d := l.discards[2]; len(d) != 1 || d[0].StaleStamp != 0 || d[0].Stamp != 2 {
		t.Fatalf("broker 2's discards %+v, want one of stamp 0 under stamp 2", d)
	}
	if len(l.discards[1])+len(l.discards[3]) > 0 {
		t.Fatalf("survivors discarded: %v", l.discards)
	}
	l.mustAccept("d")
	l.survives([]string{"a", "b", "c", "d"})
	if got := l.logs[2][3].stamp; got != 2 {
		t.Errorf("record d has stamp %d, want 2", got)
	}
	if got := l.logs[2][1].stamp; got != 1 {
		t.Errorf("copied record b has stamp %d, want its own 1", got)
	}
}

// TestHeadFailure: the controller fences a crashed head; the next member
// heads the rebuilt pipeline and every acknowledged write is there.
func TestHeadFailure(t *testing.T) {
	l := newLab(t, 3, 2)
	l.mustAccept("a")
	l.crash(1)
	l.fence(1)
	if l.pl.Head() != 2 || l.pl.Stamp != 1 {
		t.Fatalf("pipeline %v stamp %d, want head 2 stamp 1", l.pl.Members, l.pl.Stamp)
	}
	l.mustAccept("b")
	l.survives([]string{"a", "b"})
	l.restart(1)
	l.mustAccept("c")
	l.survives([]string{"a", "b", "c"})
	if len(l.discards[1]) != 1 {
		t.Errorf("the old head's replica was not discarded: %v", l.discards)
	}
}

// TestAckTimeout: a one-way cut drops the tail's acks to the middle
// member. Nothing is unreachable, so nothing is reported at once; the
// middle member, whose timeout is half the head's, names its silent
// successor in an ack at timeoutMs/2, before the head would blame its own
// successor, and the pipeline is rebuilt without the tail. b was on every
// survivor, so the recovery keeps and commits it.
func TestAckTimeout(t *testing.T) {
	l := newLab(t, 3, 2)
	l.mustAccept("a")
	l.cut[[2]int32{3, 2}] = true
	if ok, _ := l.produce("b"); ok {
		t.Fatal("acknowledged without the tail's ack")
	}
	l.tick(timeoutMs/2 - 1)
	if l.pl.Stamp != 0 {
		t.Fatalf("rebuilt before the middle member's timeout: %v", l.pl)
	}
	l.tick(1)
	if !slices.Equal(l.pl.Members, []int32{1, 2}) || l.pl.Stamp != 1 {
		t.Fatalf("pipeline %v stamp %d, want [1 2] stamp 1: the tail is the silent one", l.pl.Members, l.pl.Stamp)
	}
	if hw := l.members[1].Status().HighWatermark; hw != 2 {
		t.Fatalf("head HW %d after the rebuild, want 2: b was on every survivor, so the recovery keeps and commits it", hw)
	}
	l.mustAccept("c")
	l.survives([]string{"a", "b", "c"})
}

// TestAckTimeoutBlame: in a pipeline of five, a one-way cut of the acks
// on each link in turn; the member just before the cut link times out
// first (timeouts shrink down the pipeline) and the member after it is the
// one taken out. A cut on the last hop into the head leaves only the head's
// own timeout, which names its successor: the nearest fault it can name.
func TestAckTimeoutBlame(t *testing.T) {
	for i := 1; i < 5; i++ {
		from, to := int32(i+1), int32(i)
		t.Run(fmt.Sprintf("cut-%d-%d", from, to), func(t *testing.T) {
			l := newLab(t, 5, 2)
			l.mustAccept("a")
			l.cut[[2]int32{from, to}] = true
			if ok, _ := l.produce("b"); ok {
				t.Fatal("acknowledged without the tail's ack")
			}
			for range timeoutMs / 50 {
				if l.pl.Stamp != 0 {
					break
				}
				l.tick(50)
			}
			if want := []int32{1, 2, 3, 4, 5}; !slices.Equal(l.pl.Members, slices.DeleteFunc(want, func(m int32) bool { return m == from })) {
				t.Fatalf("pipeline %v after the cut %d→%d; want %d taken out", l.pl.Members, from, to, from)
			}
			l.mustAccept("c")
			l.survives([]string{"a", "b", "c"})
		})
	}
}

// TestMessagesPerRecord: on a healthy pipeline of n members each write
// costs n−1 writes and n−1 acks.
func TestMessagesPerRecord(t *testing.T) {
	l := newLab(t, 3, 2)
	clear(l.sent)
	for i := range 10 {
		l.mustAccept(fmt.Sprint(i))
	}
	if l.sent[KindWrite] != 20 || l.sent[KindAck] != 20 {
		t.Errorf("sent %v for 10 records, want 20 writes and 20 acks", l.sent)
	}
}

// TestStaleWriteRefused: a write of an older stamp (a head that has not
// learned it was replaced) is FENCED_LEADER_EPOCH.
func TestStaleWriteRefused(t *testing.T) {
	m := New(Config{ID: 2, TimeoutMs: timeoutMs}, LogState{Stamp: -1}, 0)
	m.SetPipeline(Pipeline{Members: []int32{3, 2}, Stamp: 4})
	err := m.Step(Message{Kind: KindWrite, From: 1, To: 2, Stamp: 3, Members: []int32{1, 2}})
	if !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("stale write: %v, want FENCED_LEADER_EPOCH", err)
	}
	if err := m.CheckProduce(1, 1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("produce on a non-head: %v", err)
	}
}

// TestInFlightWriteCut: when the middle member fails, the write in flight
// reached the head only; the survivors (head and tail) agree on the tail's
// shorter length, the head truncates the write, and it is not
// acknowledged until the producer sends it again.
func TestInFlightWriteCut(t *testing.T) {
	l := newLab(t, 3, 2)
	l.mustAccept("a")
	l.crash(2)
	if ok, _ := l.produce("b"); ok {
		t.Fatal("b acknowledged although the tail never had it")
	}
	if !slices.Equal(l.pl.Members, []int32{1, 3}) || l.pl.Stamp != 1 {
		t.Fatalf("pipeline %v stamp %d, want [1 3] stamp 1", l.pl.Members, l.pl.Stamp)
	}
	if got := l.values(1); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("head holds %v after recovery, want only a", got)
	}
	l.mustAccept("b")
	l.survives([]string{"a", "b"})
}

// TestDiscardWaitsForCopy: a stale member whose copy cannot arrive (the
// link from its predecessor is cut) keeps its records: it is discarded
// only when the copy's first write comes, in the same Ready.
func TestDiscardWaitsForCopy(t *testing.T) {
	l := newLab(t, 3, 2)
	l.mustAccept("a")
	l.crash(3)
	l.fence(3)
	l.mustAccept("b")
	l.cut[[2]int32{2, 3}] = true
	l.restart(3) // [1 2 3]: the recovery write to 3 is lost, and retried at ticks
	if got := l.values(3); !slices.Equal(got, []string{"a"}) || len(l.discards[3]) != 0 {
		t.Fatalf("broker 3 holds %v (discards %v) with no copy in sight, want its a kept", got, l.discards[3])
	}
	delete(l.cut, [2]int32{2, 3})
	l.tick(1) // the recovery write is sent again
	l.mustAccept("c")
	if len(l.discards[3]) != 1 {
		t.Fatalf("broker 3's discards %v, want one once its copy came", l.discards[3])
	}
	l.survives([]string{"a", "b", "c"})
}

// TestDiscardForgottenByNextStamp: a stale member's discard waits for the
// copy; when a new stamp comes first (here it heads alone, as the longest
// log does after every member stopped uncleanly) it is judged by the
// records it still holds: its LEO and HW are its log's, nothing is cut,
// not the empty log its discard counted on (chaos seed 153: such a head's
// HW went back to 0; with survivors, its recovery would have cut theirs).
func TestDiscardForgottenByNextStamp(t *testing.T) {
	m := New(Config{ID: 3, TimeoutMs: timeoutMs}, LogState{LogEndOffset: 2, HighWatermark: 2, Stamp: 0}, 0)
	m.SetPipeline(Pipeline{Members: []int32{1, 2, 3}, Stamp: 2})
	if err := m.Step(Message{Kind: KindWrite, From: 2, To: 3, Stamp: 2, Members: []int32{1, 2, 3}, Recover: true, HeadStamp: 1, Length: 5}); err != nil {
		t.Fatal(err)
	}
	if rd := m.Ready(); rd.Truncation != nil || len(rd.Messages) != 1 || rd.Messages[0].LEO != 0 {
		t.Fatalf("discarded: %+v, want an ack of LEO 0 and no cut before the copy", rd)
	}
	m.SetPipeline(Pipeline{Members: []int32{3}, Stamp: 3})
	rd := m.Ready()
	if st := m.Status(); rd.Truncation != nil || !st.IsHead || st.LogEndOffset != 2 || st.HighWatermark != 2 || rd.HighWatermark != 2 {
		t.Fatalf("heading alone after a discard that never came: %+v, ready %+v; want LEO and HW 2, no cut", st, rd)
	}
}

// TestPowerLostSurvivorLeftOutOfRecovery: a member that lost acknowledged
// records to power loss and came back before it was fenced still holds the
// pipeline's stamp; when the next failure's recovery reaches it, its log
// ends below the head's HW, so it is rebuilt by copy instead of lowering
// the agreed length, as HDFS leaves a restarted (RWR) replica out of a
// block's length when a live (RBW) one is there. Comparison seed 3 (100
// actions) lost b and c this way on the pipeline.
func TestPowerLostSurvivorLeftOutOfRecovery(t *testing.T) {
	l := newLab(t, 3, 2)
	for _, v := range []string{"a", "b", "c"} {
		l.mustAccept(v)
	}
	l.crash(2)
	l.logs[2] = l.logs[2][:1] // power loss: only a was on disk
	l.start(2)                // back before its session expired: still a member
	// The broker opened its log after an unclean shutdown (Config.Unclean).
	l.members[2] = New(Config{ID: 2, TimeoutMs: timeoutMs, Unclean: true}, LogState{LogEndOffset: 1, Stamp: l.stamps[2]}, l.nowMs)
	l.members[2].SetPipeline(l.pl)
	l.settle()
	l.crash(3)
	l.fence(3) // [1 2] under a new stamp: the recovery
	if got := l.values(1); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("the head holds %v after the recovery, want a b c: the power-lost member set the length", got)
	}
	if len(l.discards[2]) != 1 {
		t.Fatalf("broker 2's discards %v, want one (its log ends below the HW)", l.discards[2])
	}
	l.mustAccept("d")
	l.survives([]string{"a", "b", "c", "d"})
}

package invariant

import (
	"slices"
	"strings"
	"testing"

	"tidemark/leaderepoch"
)

func recs(vals ...string) []Rec {
	out := make([]Rec, len(vals))
	for i, v := range vals {
		out[i] = Rec{Offset: int64(i), Value: v}
	}
	return out
}

// TestStructure: each structural invariant, broken once.
func TestStructure(t *testing.T) {
	ok := Replica{Broker: 1, HW: 1, LEO: 2, Records: recs("a", "b"), ISR: []int32{1, 2},
		Epochs: []leaderepoch.Entry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 1}}}
	if err := Structure(ok, Topic{}); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		want   string
		mutate func(r *Replica)
	}{
		{"HW 3 ≤ LEO 2", func(r *Replica) { r.HW = 3 }},
		{"log start 2 ≤ HW 1", func(r *Replica) { r.LogStart = 2 }},
		{"follows", func(r *Replica) { r.Records[1].Offset = 0 }},
		{"follows", func(r *Replica) { r.Records[0].Epoch = 3 }},
		{"last record at 1, LEO 3", func(r *Replica) { r.LEO = 3 }},
		{"no record below LEO", func(r *Replica) { r.Records = nil }},
		{"leads with ISR [2]", func(r *Replica) { r.ISR = []int32{2} }},
		{"epoch cache", func(r *Replica) { r.Epochs[1].Epoch = 0 }},
	} {
		r := ok
		r.Records, r.Epochs = slices.Clone(ok.Records), slices.Clone(ok.Epochs)
		x.mutate(&r)
		if err := Structure(r, Topic{}); err == nil || !strings.Contains(err.Error(), x.want) {
			t.Errorf("%s: got %v", x.want, err)
		}
	}
	// A compacted log's cleaner may remove the last records, never add one.
	short := ok
	short.LEO = 3
	if err := Structure(short, Topic{Compact: true}); err != nil {
		t.Errorf("compacted: %v", err)
	}
	if err := Controller(1, []int32{2}); err == nil {
		t.Error("leader outside the controller's ISR")
	}
	if err := Controller(-1, nil); err != nil {
		t.Error(err)
	}
}

// TestWatch plays a leader change the way an unclean election does: b1
// led with a, b below its HW; b2 leads with a, c. The acknowledged b is
// lost, the record seen at 1 is gone, the HW went back; b3, synced, keeps
// b and diverges; b4, not synced yet, is not held to the leader.
func TestWatch(t *testing.T) {
	var w Watch
	writes := []Write{{Value: "a", Acked: true, Offset: 0}, {Value: "b", Acked: true, Offset: 1}, {Value: "c", Offset: -1}}
	s := Snapshot{Writes: writes, VisibleHW: 2, HasVisibleHW: true, Replicas: []Replica{
		{Broker: 1, Leader: true, HW: 2, LEO: 2, Records: recs("a", "b")},
	}}
	if got := w.Check(s); len(got) != 0 {
		t.Fatalf("before: %v", got)
	}
	b3 := Replica{Broker: 3, Synced: true, HW: 2, LEO: 2, Records: recs("a", "b")}
	b4 := Replica{Broker: 4, HW: 2, LEO: 2, Records: recs("a", "x")}
	s = Snapshot{Writes: writes, VisibleHW: 1, HasVisibleHW: true, Replicas: []Replica{
		{Broker: 2, Leader: true, HW: 1, LEO: 2, Records: recs("a", "c")}, b3, b4,
	}}
	got := w.Check(s)
	if keys := w.Keys(); !slices.Equal(keys, []string{"hw-back", "lost b", "seen-gone 1"}) {
		t.Fatalf("keys %v (fresh %v)", keys, got)
	}
	s.Replicas[0].HW, s.VisibleHW = 2, 2
	if got := w.Check(s); len(got) != 1 || got[0].Key() != "diverged 1" || got[0].Broker != 3 || got[0].Leader != 2 {
		t.Fatalf("diverged: %v", got)
	}
	if got := w.Check(s); len(got) != 0 || len(w.Found()) != 4 {
		t.Fatalf("again: %v, found %v: each key once", got, w.Found())
	}
	for _, v := range w.Found() {
		if v.String() == "" {
			t.Errorf("%+v says nothing", v)
		}
	}
	// No leader: nothing to hold the replicas to.
	var none Watch
	if got := none.Check(Snapshot{Writes: writes, Replicas: []Replica{b3}}); len(got) != 0 {
		t.Fatalf("no leader: %v", got)
	}
}

// TestFinalJudge: what becomes of each write once a run is over.
func TestFinalJudge(t *testing.T) {
	f := &Final{
		Snapshot: Snapshot{Replicas: []Replica{
			{Broker: 1, Leader: true, HW: 3, Records: recs("a", "a", "m", "u")},
			{Broker: 2, HW: 3, Records: recs("a", "a", "n")},
		}},
		Consumed: recs("a", "a", "m"),
	}
	for _, x := range []struct {
		w    Write
		want Judged
	}{
		{Write{Value: "a", Acked: true, Offset: 0}, Judged{Duplicated: true, Offsets: []int64{0, 1}}},
		{Write{Value: "m", Acked: true, Offset: 1}, Judged{Kind: WrongOffset, Offsets: []int64{2}}},
		{Write{Value: "u", Acked: true, Offset: 3}, Judged{Kind: Unreadable}}, // above the HW
		{Write{Value: "l", Acked: true, Offset: 4}, Judged{Kind: Lost}},
		{Write{Value: "l", Offset: -1}, Judged{}},
	} {
		if got := f.Judge(x.w); got.Kind != x.want.Kind || got.Duplicated != x.want.Duplicated || !slices.Equal(got.Offsets, x.want.Offsets) {
			t.Errorf("%+v: %+v, want %+v", x.w, got, x.want)
		}
	}
	if d := f.Diverged(); len(d) != 1 || d[0].Offset != 2 || d[0].Found.Value != "n" || d[0].Want.Value != "m" {
		t.Errorf("diverged: %+v", d)
	}
	off := &Final{Offline: true}
	if got := off.Judge(Write{Value: "a", Acked: true}); got.Kind != Unreadable {
		t.Errorf("offline: %+v", got)
	}
}

// TestTransactions: a read_committed consumer reads every committed
// record, no aborted one, all or nothing of one whose end is unknown,
// nothing twice and nothing never sent.
func TestTransactions(t *testing.T) {
	txns := []Txn{
		{Name: "t1", Outcome: TxnCommitted, Acked: []string{"c1", "c2"}, Sent: []string{"c1", "c2"}},
		{Name: "t2", Outcome: TxnAborted, Acked: []string{"a1"}, Sent: []string{"a1", "a2"}},
		{Name: "t3", Acked: []string{"u1", "u2"}, Sent: []string{"u1", "u2"}},
		{Name: "t4", Acked: []string{"w1"}, Sent: []string{"w1"}}, // unknown, not read: fine
		{Name: "t5", Outcome: TxnCommitted, Acked: []string{"k1"}, Sent: []string{"k1"}},
	}
	got := Transactions(txns, []string{"c1", "a2", "u1", "k1", "k1", "z"})
	var says []string
	for _, v := range got {
		says = append(says, v.String())
	}
	want := []string{`t1 was committed, yet read_committed did not read ["c2"]`, `t2 was aborted, yet read_committed read ["a2"]`,
		`t3 (its end unknown) was read in part: ["u1"] read, ["u2"] not`, "k1 read 2 times", `read records never sent: ["z"]`}
	if !slices.Equal(says, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(says, "\n"), strings.Join(want, "\n"))
	}
	if got := Transactions(txns[3:5], []string{"k1"}); len(got) != 0 {
		t.Fatalf("clean: %v", got)
	}
}

// TestHWs: a step down counts once, against the highest before.
func TestHWs(t *testing.T) {
	var h HWs
	var backs []int64
	for _, hw := range []int64{0, 3, 5, 2, 2, 4, 1} {
		if back, best, at := h.Add(hw); back {
			backs = append(backs, hw, best, int64(at))
		}
	}
	if !slices.Equal(backs, []int64{2, 5, 2, 1, 5, 2}) {
		t.Fatalf("%v", backs)
	}
}

// TestLeaderships: a leader's HW never goes back within its leadership;
// a new leadership, a truncation or a restart starts again.
func TestLeaderships(t *testing.T) {
	var l Leaderships
	l.Elected(0, 1, 0)
	l.HW(1, 0, 5)
	if back, last, epoch := l.HW(1, 0, 3); !back || last != 5 || epoch != 0 {
		t.Fatalf("back %v %d %d", back, last, epoch)
	}
	if back, _, _ := l.HW(2, 0, 1); back {
		t.Fatal("a follower's HW is not the leader's")
	}
	l.Truncated(1, 0)
	if back, _, _ := l.HW(1, 0, 1); back {
		t.Fatal("after a truncation")
	}
	l.Forget(1)
	l.HW(1, 0, 0)
	l.Elected(0, 2, 1)
	l.HW(2, 0, 9)
	l.Elected(0, 2, 2)
	if back, _, _ := l.HW(2, 0, 4); back {
		t.Fatal("a new leadership")
	}
	l.Reset()
	if back, _, _ := l.HW(2, 0, 0); back {
		t.Fatal("after a reset")
	}
}

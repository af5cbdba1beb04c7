package invariant

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"tidemark/leaderepoch"
)

// Rec is one record as a replica's log holds it or a consumer reads it.
type Rec struct {
	Offset int64
	Epoch  int32
	Value  string
	Key    string // "": none
	// Tombstone: a null value (Value ""). Timestamp is the record's (ms
	// since the epoch); the cleaner of a compacted topic reads both.
	Tombstone bool
	Timestamp int64
}

// Name is what a record is matched with its write by: its value, or a
// tombstone's key (a tombstone has no value).
func (x Rec) Name() string {
	if x.Tombstone {
		return "\x00tombstone " + x.Key
	}
	return x.Value
}

// The outcomes of a transaction (Txn.Outcome).
const (
	TxnCommitted = "committed"
	TxnAborted   = "aborted"
)

// Write is one record a producer sent and what it was told.
type Write struct {
	// Value is its value; a tombstone's (which has none), the name its
	// producer knows it by.
	Value     string
	Key       string
	Tombstone bool
	Timestamp int64
	Acked     bool
	// Offset is where the acknowledgement put it; -1 when not acked.
	Offset int64
}

// Name is what its records are matched by (Rec.Name).
func (w Write) Name() string {
	return Rec{Value: w.Value, Key: w.Key, Tombstone: w.Tombstone}.Name()
}

// Replica is one running replica of a partition, as read at one moment.
type Replica struct {
	Broker int32
	// Leader: it leads at the controller's leader epoch and knows it.
	Leader bool
	// Synced: a follower done truncating in the leader's epoch, so held to
	// agree with the leader below both HWs.
	Synced   bool
	LogStart int64
	HW       int64
	LEO      int64
	Records  []Rec
	// Epochs is its leader-epoch cache (nil: not checked).
	Epochs []leaderepoch.Entry
	// ISR is the ISR it knows when it thinks it leads (nil: it follows);
	// it must hold itself.
	ISR []int32
}

// The kinds of Violation: the words of a scenario's expect lines
// (docs/language.md) and the chaos checker's findings.
const (
	Lost        = "lost"         // an acknowledged write is gone
	SeenGone    = "seen-gone"    // a record a consumer could read is gone or changed
	HWBack      = "hw-back"      // the HW a consumer is told went backwards
	Diverged    = "diverged"     // a synced follower differs from its leader below both HWs
	Duplicated  = "duplicated"   // a consumer reads a write more than once
	WrongOffset = "wrong-offset" // an acknowledged write is read at another offset
	Unreadable  = "unreadable"   // acknowledged, not lost, but no consumer can read it
	// What a read_committed consumer may not do (Transactions): read a
	// record of an aborted transaction, miss one of a committed one, read
	// part of one whose end is unknown, read a record never sent.
	AbortedRead     = "aborted-read"
	CommittedUnread = "committed-unread"
	PartlyRead      = "partly-read"
	NeverSent       = "never-sent"
)

// Violation is an invariant broken that a setting may legitimately break
// (an unclean election loses data): what a scenario names with expect.
type Violation struct {
	Kind   string
	Offset int64
	Value  string // the write's (lost, duplicated, wrong-offset, unreadable…)
	// Broker is the replica it was seen on (the leader; diverged: the
	// follower), Leader the leader a follower differs from.
	Broker, Leader int32
	// Found and Want are the records there and expected (nil: none), the
	// HWs before and after for hw-back (in Offset and From).
	Found, Want *Rec
	From        int64
	// Values are the records read of a transaction, Missing those not
	// read; Times is how often a value was read (duplicated).
	Values, Missing []string
	Times           int
}

// Key names v as an expect line does: "lost m2", "seen-gone 1",
// "hw-back", "diverged 1".
func (v Violation) Key() string {
	switch v.Kind {
	case HWBack:
		return v.Kind
	case SeenGone, Diverged:
		return v.Kind + " " + strconv.FormatInt(v.Offset, 10)
	}
	return v.Kind + " " + v.Value
}

func (v Violation) String() string {
	switch v.Kind {
	case HWBack:
		return fmt.Sprintf("consumer-visible HW went back from %d to %d at leader b%d", v.From, v.Offset, v.Broker)
	case SeenGone:
		return fmt.Sprintf("consumer-visible record %s at offset %d is gone from leader b%d", recText(v.Want), v.Offset, v.Broker)
	case Diverged:
		return fmt.Sprintf("b%d and leader b%d disagree at offset %d below both HWs: %s vs %s", v.Broker, v.Leader, v.Offset, recText(v.Found), recText(v.Want))
	case Lost:
		return fmt.Sprintf("acknowledged %s (offset %d) is lost: not in leader b%d's log", v.Value, v.Offset, v.Broker)
	case AbortedRead:
		return fmt.Sprintf("%s was aborted, yet read_committed read %q", v.Value, v.Values)
	case CommittedUnread:
		return fmt.Sprintf("%s was committed, yet read_committed did not read %q", v.Value, v.Missing)
	case PartlyRead:
		return fmt.Sprintf("%s (its end unknown) was read in part: %q read, %q not", v.Value, v.Values, v.Missing)
	case NeverSent:
		return fmt.Sprintf("read records never sent: %q", v.Values)
	case Duplicated:
		if v.Times > 0 {
			return fmt.Sprintf("%s read %d times", v.Value, v.Times)
		}
	}
	return fmt.Sprintf("%s %s at offset %d", v.Kind, v.Value, v.Offset)
}

func recText(x *Rec) string {
	if x == nil {
		return "nothing"
	}
	return fmt.Sprintf("%s/e%d", x.Value, x.Epoch)
}

// Structure checks what no setting may break in one replica: log start ≤
// HW ≤ LEO, offsets increasing, epochs never decreasing (in the log and
// its epoch cache), and the log's last record at LEO-1 (a compacted log's
// cleaner may remove the last, a tombstone; never move one).
func Structure(r Replica, topic Topic) error {
	if !(r.LogStart <= r.HW && r.HW <= r.LEO) {
		return fmt.Errorf("b%d: log start %d ≤ HW %d ≤ LEO %d broken", r.Broker, r.LogStart, r.HW, r.LEO)
	}
	recs := r.Records
	for i := 1; i < len(recs); i++ {
		if recs[i].Offset <= recs[i-1].Offset || recs[i].Epoch < recs[i-1].Epoch {
			return fmt.Errorf("b%d: %d:%s/e%d follows %d:%s/e%d", r.Broker, recs[i].Offset, recs[i].Value, recs[i].Epoch,
				recs[i-1].Offset, recs[i-1].Value, recs[i-1].Epoch)
		}
	}
	switch n := len(recs); {
	case n > 0 && (recs[n-1].Offset > r.LEO-1 || recs[n-1].Offset < r.LEO-1 && !topic.Compact):
		return fmt.Errorf("b%d: last record at %d, LEO %d", r.Broker, recs[n-1].Offset, r.LEO)
	case n == 0 && r.LEO > r.LogStart && !topic.Compact:
		return fmt.Errorf("b%d: no record below LEO %d (log start %d)", r.Broker, r.LEO, r.LogStart)
	}
	if r.ISR != nil && !slices.Contains(r.ISR, r.Broker) {
		return fmt.Errorf("b%d leads with ISR %v", r.Broker, r.ISR)
	}
	for i := 1; i < len(r.Epochs); i++ {
		if r.Epochs[i].Epoch <= r.Epochs[i-1].Epoch || r.Epochs[i].StartOffset < r.Epochs[i-1].StartOffset {
			return fmt.Errorf("b%d: epoch cache %v not increasing", r.Broker, r.Epochs)
		}
	}
	return nil
}

// Controller checks the controller's view: a partition with a leader has
// a non-empty ISR holding it.
func Controller(leader int32, isr []int32) error {
	if leader < 0 {
		return nil
	}
	if !slices.Contains(isr, leader) {
		return fmt.Errorf("controller: leader %d not in ISR %v", leader, isr)
	}
	return nil
}

// Snapshot is a partition as read at one moment.
type Snapshot struct {
	Topic Topic
	NowMs int64 // the lab time (ms since the epoch): the cleaner's clock
	// Writes are every write sent to the partition.
	Writes []Write
	// Replicas are the running replicas whose logs could be read; the
	// invariants that need a leader are checked when one is Leader.
	Replicas []Replica
	// VisibleHW is the HW the leader tells a consumer (ListOffsets
	// latest); HasVisibleHW false when it tells none (KIP-207: its HW is
	// below its epoch's start) or could not be asked.
	VisibleHW    int64
	HasVisibleHW bool
}

// leader is s's leading replica, if any.
func (s Snapshot) leader() (Replica, bool) {
	i := slices.IndexFunc(s.Replicas, func(r Replica) bool { return r.Leader })
	if i < 0 {
		return Replica{}, false
	}
	return s.Replicas[i], true
}

// compaction is what s's cleaner may have removed: it knows every
// acknowledged write and every record a replica holds.
func (s Snapshot) compaction() *Compaction {
	if !s.Topic.Compact {
		return nil
	}
	c := NewCompaction(s.Topic, s.NowMs)
	for _, w := range s.Writes {
		if w.Acked {
			c.Saw(w.Key, w.Offset)
		}
	}
	for _, r := range s.Replicas {
		for _, x := range r.Records {
			c.Saw(x.Key, x.Offset)
		}
	}
	return c
}

// Watch holds one partition to the invariants a setting may break, over
// a run: records a consumer could read stay, the HW it is told never goes
// back, acknowledged writes stay in the leader's log, and synced followers
// agree with the leader below both HWs. Feed it a Snapshot after every
// action (Check).
type Watch struct {
	hw    HWs
	seen  map[int64]Rec
	found []Violation
	keys  map[string]bool
}

// Found is every violation seen so far, each Key once, in the order seen.
func (w *Watch) Found() []Violation { return w.found }

// Keys is Found's keys, sorted.
func (w *Watch) Keys() []string {
	out := make([]string, 0, len(w.found))
	for _, v := range w.found {
		out = append(out, v.Key())
	}
	slices.Sort(out)
	return out
}

func (w *Watch) add(v Violation, fresh *[]Violation) {
	if w.keys == nil {
		w.keys = map[string]bool{}
	}
	if k := v.Key(); !w.keys[k] {
		w.keys[k] = true
		w.found = append(w.found, v)
		*fresh = append(*fresh, v)
	}
}

// Check checks s and returns the violations not seen before.
func (w *Watch) Check(s Snapshot) []Violation {
	var fresh []Violation
	leader, ok := s.leader()
	if !ok {
		return nil
	}
	if w.seen == nil {
		w.seen = map[int64]Rec{}
	}
	cleaned := s.compaction()
	at := map[int64]Rec{}
	for _, x := range leader.Records {
		at[x.Offset] = x
	}
	for _, v := range LostFrom(s.Writes, leader, cleaned) {
		w.add(v, &fresh)
	}
	// Records a consumer could read stay: the ones seen below a HW.
	for _, off := range slices.Sorted(maps.Keys(w.seen)) {
		was := w.seen[off]
		x, ok := at[off]
		if !ok && cleaned.Removable(was.Key, off, was.Tombstone, was.Timestamp) {
			continue
		}
		if !ok || x != was {
			w.add(Violation{Kind: SeenGone, Offset: off, Value: was.Value, Broker: leader.Broker, Want: &was, Found: found(x, ok)}, &fresh)
		}
	}
	if s.HasVisibleHW {
		if back, from, _ := w.hw.Add(s.VisibleHW); back {
			w.add(Violation{Kind: HWBack, Offset: s.VisibleHW, From: from, Broker: leader.Broker}, &fresh)
		}
		for _, x := range leader.Records {
			if _, ok := w.seen[x.Offset]; x.Offset < s.VisibleHW && !ok {
				w.seen[x.Offset] = x
			}
		}
	}
	for _, f := range s.Replicas {
		if f.Synced && !f.Leader {
			if v, ok := FirstDifference(leader, f, cleaned); ok {
				w.add(v, &fresh)
			}
		}
	}
	return fresh
}

func found(x Rec, ok bool) *Rec {
	if !ok {
		return nil
	}
	return &x
}

// LostFrom is the acknowledged writes gone from the leader's log: nothing
// that holds them at their offset, and not removed by the cleaner.
func LostFrom(writes []Write, leader Replica, cleaned *Compaction) []Violation {
	at := map[int64]Rec{}
	for _, x := range leader.Records {
		at[x.Offset] = x
	}
	var out []Violation
	for _, w := range writes {
		if !w.Acked || w.Offset < 0 {
			continue
		}
		x, ok := at[w.Offset]
		switch {
		case ok && x.Name() == w.Name():
		case !ok && cleaned.Removable(w.Key, w.Offset, w.Tombstone, w.Timestamp):
		default:
			out = append(out, Violation{Kind: Lost, Value: w.Value, Offset: w.Offset, Broker: leader.Broker, Found: found(x, ok)})
		}
	}
	return out
}

// FirstDifference is the first offset below both HWs where follower f's
// log differs from the leader's (a diverged Violation); a record one holds
// and the other's cleaner removed (cleaned) is no difference.
func FirstDifference(leader, f Replica, cleaned *Compaction) (Violation, bool) {
	below := min(leader.HW, f.HW)
	at := func(r Replica) map[int64]Rec {
		m := map[int64]Rec{}
		for _, x := range r.Records {
			if x.Offset < below {
				m[x.Offset] = x
			}
		}
		return m
	}
	lm, fm := at(leader), at(f)
	both := maps.Clone(lm)
	maps.Copy(both, fm)
	for _, o := range slices.Sorted(maps.Keys(both)) {
		lr, lok := lm[o]
		fr, fok := fm[o]
		if lok && fok && lr == fr {
			continue
		}
		if x := lr; lok != fok {
			if fok {
				x = fr
			}
			if cleaned.Removable(x.Key, o, x.Tombstone, x.Timestamp) {
				continue // one replica's cleaner removed it first
			}
		}
		return Violation{Kind: Diverged, Offset: o, Broker: f.Broker, Leader: leader.Broker, Found: found(fr, fok), Want: found(lr, lok)}, true
	}
	return Violation{}, false
}

// HWs follows one partition's consumer-visible HW.
type HWs struct {
	best, last int64
	bestAt, n  int
}

// Add takes the next HW seen: back when it is below the one before (a HW
// staying low counts once), with the highest seen before and when (the
// count of HWs added before it).
func (h *HWs) Add(hw int64) (back bool, highest int64, at int) {
	back, highest, at = h.n > 0 && hw < h.last, h.best, h.bestAt
	if h.n == 0 || hw > h.best {
		h.best, h.bestAt = hw, h.n
	}
	h.last = hw
	h.n++
	return back, highest, at
}

// Final is a partition once a run is over, for Judge: what a consumer read
// from its leader below the HW, and each replica's log.
type Final struct {
	Snapshot
	// Consumed is what a consumer read; Offline: the partition has no
	// leader, so nothing could be read.
	Consumed []Rec
	Offline  bool

	reads   map[string][]int64
	cleaned *Compaction
}

// Judged is what became of one write (Final.Judge): Kind "" (fine), Lost,
// Unreadable or WrongOffset, and whether a consumer read it more than
// once; Offsets are where it was read.
type Judged struct {
	Kind       string
	Duplicated bool
	Offsets    []int64
}

// Judge says what became of w: acknowledged, it must be read at its
// offset (or have been removed by a compacted topic's cleaner); it is
// unreadable rather than lost when the partition is offline or its
// leader holds it above a HW that never reached it. No write may be read
// twice.
func (f *Final) Judge(w Write) Judged {
	if f.reads == nil {
		f.reads = map[string][]int64{}
		for _, x := range f.Consumed {
			f.reads[x.Name()] = append(f.reads[x.Name()], x.Offset)
		}
		f.cleaned = f.compaction()
		for _, x := range f.Consumed {
			f.cleaned.Saw(x.Key, x.Offset)
		}
	}
	at := f.reads[w.Name()]
	j := Judged{Offsets: at, Duplicated: len(at) > 1 && !w.Tombstone} // a key's tombstones look alike
	if !w.Acked {
		return j
	}
	leader, ok := f.leader()
	switch {
	case f.Offline, len(at) == 0 && ok && slices.ContainsFunc(leader.Records, func(x Rec) bool { return x.Name() == w.Name() }):
		j.Kind = Unreadable
	case len(at) == 0 && f.cleaned.Removable(w.Key, w.Offset, w.Tombstone, w.Timestamp):
	case len(at) == 0:
		j.Kind = Lost
	case !slices.Contains(at, w.Offset):
		j.Kind = WrongOffset
	}
	return j
}

// Diverged compares every follower with the leader below both HWs (the
// run is over: every follower is held to it).
func (f *Final) Diverged() []Violation {
	leader, ok := f.leader()
	if !ok {
		return nil
	}
	cleaned := f.compaction()
	var out []Violation
	for _, r := range f.Replicas {
		if r.Broker != leader.Broker {
			if v, ok := FirstDifference(leader, r, cleaned); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// Txn is one transaction as its producer saw it.
type Txn struct {
	Name string // how a violation names it: "transaction 3"
	// Outcome is what EndTxn told the producer: TxnCommitted, TxnAborted,
	// or "" when it never learned.
	Outcome string
	// Acked are the values the producer was told were written in it;
	// Sent adds those whose produce failed.
	Acked, Sent []string
}

// Transactions checks what a read_committed consumer read (every value,
// as often as it was read) against the transactions: no record of an
// aborted one, every acknowledged record of a committed one, all or
// nothing of one whose end is unknown, nothing twice, nothing never sent.
func Transactions(txns []Txn, read []string) []Violation {
	times := map[string]int{}
	for _, v := range read {
		times[v]++
	}
	var out []Violation
	sent := map[string]bool{}
	for _, t := range txns {
		var got, missing []string
		for _, v := range t.Sent {
			sent[v] = true
			if times[v] > 0 {
				got = append(got, v)
			}
		}
		for _, v := range t.Acked {
			if times[v] == 0 {
				missing = append(missing, v)
			}
		}
		switch {
		case t.Outcome == TxnAborted && len(got) > 0:
			out = append(out, Violation{Kind: AbortedRead, Value: t.Name, Values: got})
		case t.Outcome == TxnCommitted && len(missing) > 0:
			out = append(out, Violation{Kind: CommittedUnread, Value: t.Name, Missing: missing})
		case t.Outcome == "" && len(got) > 0 && len(missing) > 0:
			out = append(out, Violation{Kind: PartlyRead, Value: t.Name, Values: got, Missing: missing})
		}
	}
	var extra []string
	for _, v := range slices.Sorted(maps.Keys(times)) {
		if times[v] > 1 {
			out = append(out, Violation{Kind: Duplicated, Value: v, Times: times[v]})
		}
		if !sent[v] {
			extra = append(extra, v)
		}
	}
	if len(extra) > 0 {
		out = append(out, Violation{Kind: NeverSent, Values: extra})
	}
	return out
}

// Leaderships follows each partition's leadership (from one election of a
// leader to the next) and its leader's HW within it: that HW never goes
// back, unless the leader stopped or truncated its log meanwhile (its HW
// then starts again from its checkpoint).
type Leaderships struct {
	leader map[int32]leadership // partition → its current leadership
	hw     map[replica]int64    // the leader's last HW in its leadership
}

type leadership struct{ broker, epoch int32 }

type replica struct{ broker, partition int32 }

// Elected starts partition's leadership of broker at epoch.
func (l *Leaderships) Elected(partition, broker, epoch int32) {
	l.init()
	l.leader[partition] = leadership{broker, epoch}
	for r := range l.hw {
		if r.partition == partition {
			delete(l.hw, r)
		}
	}
}

// Reset forgets everything (the topic was made anew).
func (l *Leaderships) Reset() {
	clear(l.leader)
	clear(l.hw)
}

// Forget drops what is known of broker's HWs (it stopped or restarted).
func (l *Leaderships) Forget(broker int32) {
	for r := range l.hw {
		if r.broker == broker {
			delete(l.hw, r)
		}
	}
}

// Truncated drops what is known of a replica's HW (it truncated its log).
func (l *Leaderships) Truncated(broker, partition int32) { delete(l.hw, replica{broker, partition}) }

// HW takes a HW broker reported for partition: back when it leads the
// partition and reported a higher one earlier in its leadership (last),
// epoch the leadership's.
func (l *Leaderships) HW(broker, partition int32, hw int64) (back bool, last int64, epoch int32) {
	l.init()
	ld, ok := l.leader[partition]
	if !ok || ld.broker != broker {
		return false, 0, 0
	}
	k := replica{broker, partition}
	last, seen := l.hw[k]
	l.hw[k] = hw
	return seen && hw < last, last, ld.epoch
}

func (l *Leaderships) init() {
	if l.leader == nil {
		l.leader, l.hw = map[int32]leadership{}, map[replica]int64{}
	}
}

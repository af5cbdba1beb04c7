package chaos

import (
	"fmt"
	"maps"
	"slices"

	"tidemark/invariant"
	"tidemark/server/controller"
)

// Write is one value a producer sent, acknowledged or not.
type Write struct {
	Value      string `json:"value"`
	Producer   int    `json:"producer"`
	Idempotent bool   `json:"idempotent,omitempty"`
	// Acks is what the producer asked for: "1" or "all".
	Acks      string `json:"acks"`
	Partition int32  `json:"partition"`
	Acked     bool   `json:"acked"`
	// Offset is the offset the acknowledgement named; -1 when not acked.
	Offset int64 `json:"offset"`
	// Error is the last answer's Kafka error name; empty when acked or never answered.
	Error string `json:"error,omitempty"`
	// Attempts counts the produce requests that carried the value (an
	// idempotent producer's retries resend the same batch).
	Attempts int `json:"attempts"`
	// AckedSeq is the bus sequence of the acknowledgement; 0 when not
	// acked. Copies gone before it (an earlier attempt truncated) do not
	// say how the acknowledged record was lost.
	AckedSeq uint64 `json:"acked_seq,omitempty"`
	// SentAction and SentMs are the action during which the value was
	// first sent and the lab time then (ms since the schedule started);
	// AckedAction and AckedMs the same for its acknowledgement (0 when
	// not acked). Stepped runs move lab time only with the clock's steps:
	// fetch rounds and Raft's messages take none.
	SentAction  int   `json:"sent_action"`
	SentMs      int64 `json:"sent_ms"`
	AckedAction int   `json:"acked_action,omitempty"`
	AckedMs     int64 `json:"acked_ms,omitempty"`
	// Key is the record's key ("": none); Tombstone: its value was null
	// (Value then only names the write); Timestamp is the record's (ms since
	// the epoch). A compacted topic's log cleaner reads them (Input.Topic).
	Key       string `json:"key,omitempty"`
	Tombstone bool   `json:"tombstone,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
}

// Removal names how a replica lost a copy of a record.
type Removal string

// The removals.
const (
	// RemovedByPowerLoss: the broker lost power while the record was above
	// its log's recovery point (not yet fsynced there).
	RemovedByPowerLoss Removal = "power-loss"
	// RemovedByTruncation: the replica truncated its log (a new leader's
	// epoch or its own HW said so).
	RemovedByTruncation Removal = "truncation"
	// RemovedByRecovery: the record was gone when the broker restarted
	// although it had been fsynced or the stop was a crash.
	RemovedByRecovery Removal = "recovery"
)

// Copy is the time one replica held one record: from the bus sequence
// number at which it was first seen to the one at which it went (To 0:
// still held at the end).
type Copy struct {
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Broker    int32  `json:"broker"`
	Offset    int64  `json:"offset"`
	From      uint64 `json:"from_seq"`
	To        uint64 `json:"to_seq,omitempty"`
	// FromAction is the action after which it was first seen.
	FromAction int     `json:"from_action"`
	Action     int     `json:"action"` // the action during which it went; -1 while held
	Removal    Removal `json:"removal,omitempty"`
	// Detail is the truncation's reason as the broker reported it.
	Detail string `json:"detail,omitempty"`
}

// Election is one leader election the controller published.
type Election struct {
	Seq            uint64 `json:"seq"`
	Action         int    `json:"action"`
	Partition      int32  `json:"partition"`
	Leader         int32  `json:"leader"`
	PreviousLeader int32  `json:"previous_leader"`
	LeaderEpoch    int32  `json:"leader_epoch"`
	Unclean        bool   `json:"unclean,omitempty"`
	// LastKnown: the partition's last known leader was elected (Kafka 4.1).
	LastKnown bool    `json:"last_known,omitempty"`
	ISR       []int32 `json:"isr,omitempty"`
	// LeaderDown: the leader had crashed or lost power since the controller
	// last registered or fenced it, so the controller elected an
	// incarnation that was gone (stopped, or restarted and not yet
	// registered again), as Kafka's does: it cannot know sooner.
	LeaderDown bool `json:"leader_down,omitempty"`
}

// HWSample is the HW a consumer could see (ListOffsets latest at the
// partition's leader) after one action.
type HWSample struct {
	Action int `json:"action"`
	// Seq is the bus sequence when it was taken (the copies' clock).
	Seq         uint64 `json:"seq"`
	Partition   int32  `json:"partition"`
	Leader      int32  `json:"leader"`
	LeaderEpoch int32  `json:"leader_epoch"`
	HW          int64  `json:"hw"`
}

// LeaderSample is who led a partition with which ISR after one action, as
// the controller or the leading broker itself (Source) saw it.
type LeaderSample struct {
	Action      int     `json:"action"`
	Partition   int32   `json:"partition"`
	Source      string  `json:"source"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
}

// Rec is one record as read back.
type Rec struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Value       string `json:"value"`
	// Key and Tombstone as in Write; Timestamp a tombstone's (0 for other
	// records: only the cleaner's rule for tombstones reads it).
	Key       string `json:"key,omitempty"`
	Tombstone bool   `json:"tombstone,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
}

// newRec is a record read back from a log or by a consumer.
func newRec(offset int64, epoch int32, key, value []byte, timestamp int64) Rec {
	x := Rec{Offset: offset, LeaderEpoch: epoch, Value: string(value), Key: string(key), Tombstone: value == nil}
	if x.Tombstone {
		x.Timestamp = timestamp
	}
	return x
}

// topicOf is what the checker needs of a topic's configs.
func topicOf(configs map[string]string) invariant.Topic {
	tc, err := controller.ParseTopicConfig(configs)
	if err != nil {
		return invariant.Topic{}
	}
	return invariant.Topic{Compact: tc.Compact(), DeleteRetentionMs: tc.Storage().DeleteRetention.Milliseconds()}
}

// core is x as the checker (package invariant) reads it.
func (x Rec) core() invariant.Rec {
	return invariant.Rec{Offset: x.Offset, Epoch: x.LeaderEpoch, Value: x.Value, Key: x.Key, Tombstone: x.Tombstone, Timestamp: x.Timestamp}
}

// recOf is the checker's record back as the report's (nil stays nil).
func recOf(x *invariant.Rec) *Rec {
	if x == nil {
		return nil
	}
	return &Rec{Offset: x.Offset, LeaderEpoch: x.Epoch, Value: x.Value, Key: x.Key, Tombstone: x.Tombstone, Timestamp: x.Timestamp}
}

func (w Write) core() invariant.Write {
	return invariant.Write{Value: w.Value, Key: w.Key, Tombstone: w.Tombstone, Timestamp: w.Timestamp, Acked: w.Acked, Offset: w.Offset}
}

// ReplicaLog is one replica's whole log and HW at the end of a run.
type ReplicaLog struct {
	Broker  int32 `json:"broker"`
	Leader  bool  `json:"leader,omitempty"`
	HW      int64 `json:"hw"`
	Records []Rec `json:"records"`
}

// Final is what is there once the cluster has settled.
type Final struct {
	// Consumed is what a consumer read from each partition's leader, below
	// its HW. A partition without a leader is in Offline instead.
	Consumed map[int32][]Rec        `json:"consumed"`
	Offline  []int32                `json:"offline,omitempty"`
	Replicas map[int32][]ReplicaLog `json:"replicas"`
	// Partitions is the controller's view of each partition once settled.
	Partitions []PartitionState `json:"partitions,omitempty"`
}

// PartitionState is who leads a partition and its ISR, as the controller
// publishes them.
type PartitionState struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	ISR         []int32 `json:"isr"`
	Joining     []int32 `json:"joining,omitempty"` // a pipeline's members still being copied
	Replicas    []int32 `json:"replicas"`
}

// Input is everything the checker looks at.
type Input struct {
	Writes    []Write
	Copies    []Copy
	Elections []Election
	HWs       []HWSample
	Leaders   []LeaderSample
	Final     Final
	// Disorders is what EventOrder found in the run's event stream.
	Disorders []Disorder
	// Topic is the topic's configs, NowMs the lab time (ms since the
	// epoch) the logs were read at: on a compacted topic the log cleaner
	// removes superseded records and old tombstones, which are not lost.
	Topic invariant.Topic
	NowMs int64
}

// Loss is an acknowledged write a consumer cannot read.
type Loss struct {
	Write Write `json:"write"`
	// Election is the first election, after a replica held the record, of
	// a leader that did not hold it: from then on the partition's history
	// went on without it. Nil when no such election was seen (the last copy
	// went some other way).
	Election *Election `json:"election,omitempty"`
	// Copies is every copy the replicas held and how each went.
	Copies []Copy `json:"copies"`
	// Unsynced is set when every copy went to a power loss before it was
	// fsynced there: only fsync on every write could have kept it.
	Unsynced bool `json:"unsynced,omitempty"`
	// Cause says the above in one English sentence.
	Cause string `json:"cause"`
}

// Duplicate is a value found more than once in a partition.
type Duplicate struct {
	Write   Write   `json:"write"`
	Offsets []int64 `json:"offsets"`
}

// Misplaced is an acknowledged write found, but not at the acknowledged offset.
type Misplaced struct {
	Write   Write   `json:"write"`
	Offsets []int64 `json:"offsets"`
}

// Divergence is a follower whose log differs from its leader's below both HWs.
type Divergence struct {
	Partition int32 `json:"partition"`
	Leader    int32 `json:"leader"`
	Follower  int32 `json:"follower"`
	// Offset is the first offset where they differ.
	Offset int64 `json:"offset"`
	// LeaderRec and FollowerRec are what each holds there (nil: nothing).
	LeaderRec   *Rec `json:"leader_record,omitempty"`
	FollowerRec *Rec `json:"follower_record,omitempty"`
}

// Regression is the consumer-visible HW of a partition going backwards.
type Regression struct {
	Partition int32    `json:"partition"`
	From      HWSample `json:"from"`
	To        HWSample `json:"to"`
}

// Report is the checker's verdict. Its slices are never nil, so the JSON
// always has every list.
type Report struct {
	Writes int `json:"writes"`
	Acked  int `json:"acked"`
	// Lost holds losses some setting could have prevented; UnsyncedLost the
	// ones only fsync could have.
	Lost         []Loss `json:"lost"`
	UnsyncedLost []Loss `json:"unsynced_lost"`
	// Unreadable holds acknowledged writes a consumer cannot read although
	// nothing lost them: the partition was left without a leader, or the
	// leader holds them above a HW that never reached them.
	Unreadable     []Write      `json:"unreadable"`
	Duplicated     []Duplicate  `json:"duplicated"`
	WrongOffset    []Misplaced  `json:"wrong_offset"`
	ReplicasDiffer []Divergence `json:"replicas_differ"`
	HWBackwards    []Regression `json:"hw_backwards"`
	// UnsyncedHWBackwards are the HW regressions where every record between
	// the new and the old HW was lost to power loss before any fsync.
	UnsyncedHWBackwards []Regression   `json:"unsynced_hw_backwards"`
	LeaderOutsideISR    []LeaderSample `json:"leader_outside_isr"`
	// Unsettled are the partitions that, healed, every broker running and
	// settled, have no leader or an ISR short of their replicas: a wedge,
	// unless the rules keep the partition offline on purpose (KIP-966).
	Unsettled []PartitionState `json:"unsettled"`
	// EventsOutOfOrder are the events published out of the order their
	// replica made them in, or a leader's HW going back within its
	// leadership (EventOrder).
	EventsOutOfOrder []Disorder `json:"events_out_of_order"`
}

// Counts is a Report's numbers, the table's row.
type Counts struct {
	Writes         int `json:"writes"`
	Acked          int `json:"acked"`
	Lost           int `json:"lost"`
	UnsyncedLost   int `json:"unsynced_lost"`
	Unreadable     int `json:"unreadable"`
	Duplicated     int `json:"duplicated"`
	WrongOffset    int `json:"wrong_offset"`
	ReplicasDiffer int `json:"replicas_differ"`
	HWBackwards    int `json:"hw_backwards"`
	// UnsyncedHWBackwards is not a violation: it follows from UnsyncedLost.
	UnsyncedHWBackwards int `json:"unsynced_hw_backwards"`
	LeaderOutsideISR    int `json:"leader_outside_isr"`
	Unsettled           int `json:"unsettled"`
	EventsOutOfOrder    int `json:"events_out_of_order"`
}

// Counts returns the report's numbers.
func (r Report) Counts() Counts {
	return Counts{Writes: r.Writes, Acked: r.Acked, Lost: len(r.Lost), UnsyncedLost: len(r.UnsyncedLost),
		Unreadable: len(r.Unreadable), Duplicated: len(r.Duplicated), WrongOffset: len(r.WrongOffset),
		ReplicasDiffer: len(r.ReplicasDiffer), HWBackwards: len(r.HWBackwards), UnsyncedHWBackwards: len(r.UnsyncedHWBackwards),
		LeaderOutsideISR: len(r.LeaderOutsideISR), Unsettled: len(r.Unsettled), EventsOutOfOrder: len(r.EventsOutOfOrder)}
}

// Add adds another run's counts.
func (c *Counts) Add(o Counts) {
	c.Writes += o.Writes
	c.Acked += o.Acked
	c.Lost += o.Lost
	c.UnsyncedLost += o.UnsyncedLost
	c.Unreadable += o.Unreadable
	c.Duplicated += o.Duplicated
	c.WrongOffset += o.WrongOffset
	c.ReplicasDiffer += o.ReplicasDiffer
	c.HWBackwards += o.HWBackwards
	c.UnsyncedHWBackwards += o.UnsyncedHWBackwards
	c.LeaderOutsideISR += o.LeaderOutsideISR
	c.Unsettled += o.Unsettled
	c.EventsOutOfOrder += o.EventsOutOfOrder
}

// Violations is the number of durability findings: what the strict
// configuration must keep at zero. Unsynced power losses (and the HW
// regressions over them) are not among them, nor Unreadable: a partition
// left offline is unavailable, not known to have lost anything, and is
// counted on its own, as are writes stuck above a HW that never reached them.
func (c Counts) Violations() int {
	return c.Lost + c.Duplicated + c.WrongOffset + c.ReplicasDiffer + c.HWBackwards + c.LeaderOutsideISR + c.EventsOutOfOrder
}

// Check compares what the producers were told with what is there.
func Check(in Input) Report {
	r := Report{Lost: []Loss{}, UnsyncedLost: []Loss{}, Unreadable: []Write{}, Duplicated: []Duplicate{},
		WrongOffset: []Misplaced{}, ReplicasDiffer: []Divergence{}, HWBackwards: []Regression{}, UnsyncedHWBackwards: []Regression{},
		LeaderOutsideISR: []LeaderSample{}, Unsettled: []PartitionState{}, EventsOutOfOrder: append([]Disorder{}, in.Disorders...)}
	finals := finals(in)
	copies := map[string][]Copy{}
	for _, c := range in.Copies {
		copies[c.Value] = append(copies[c.Value], c)
	}
	for _, w := range in.Writes {
		r.Writes++
		j := finals[w.Partition].Judge(w.core())
		if j.Duplicated {
			r.Duplicated = append(r.Duplicated, Duplicate{Write: w, Offsets: j.Offsets})
		}
		if !w.Acked {
			continue
		}
		r.Acked++
		switch j.Kind {
		case invariant.Unreadable:
			r.Unreadable = append(r.Unreadable, w)
		case invariant.Lost:
			l := explainLoss(w, copies[w.Value], in.Elections)
			if l.Unsynced {
				r.UnsyncedLost = append(r.UnsyncedLost, l)
			} else {
				r.Lost = append(r.Lost, l)
			}
		case invariant.WrongOffset:
			r.WrongOffset = append(r.WrongOffset, Misplaced{Write: w, Offsets: j.Offsets})
		}
	}
	r.ReplicasDiffer = diverging(finals)
	for _, g := range regressions(in.HWs) {
		if unsyncedBetween(in.Copies, g, in.Elections) {
			r.UnsyncedHWBackwards = append(r.UnsyncedHWBackwards, g)
		} else {
			r.HWBackwards = append(r.HWBackwards, g)
		}
	}
	// One finding per leadership (partition, epoch, who saw it), however
	// many actions it lasted.
	type leadership struct {
		p      int32
		source string
		epoch  int32
	}
	seen := map[leadership]bool{}
	for _, s := range in.Leaders {
		k := leadership{s.Partition, s.Source, s.LeaderEpoch}
		if s.Leader >= 0 && !slices.Contains(s.ISR, s.Leader) && !seen[k] {
			seen[k] = true
			r.LeaderOutsideISR = append(r.LeaderOutsideISR, s)
		}
	}
	for _, p := range in.Final.Partitions {
		if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			r.Unsettled = append(r.Unsettled, p)
		}
	}
	return r
}

// finals is each partition as the checker (package invariant) judges
// it: its writes, replicas, what a consumer read, whether it is offline.
func finals(in Input) map[int32]*invariant.Final {
	out := map[int32]*invariant.Final{}
	of := func(p int32) *invariant.Final {
		if out[p] == nil {
			out[p] = &invariant.Final{Snapshot: invariant.Snapshot{Topic: in.Topic, NowMs: in.NowMs}, Offline: slices.Contains(in.Final.Offline, p)}
		}
		return out[p]
	}
	for _, w := range in.Writes {
		f := of(w.Partition)
		f.Writes = append(f.Writes, w.core())
	}
	for p, logs := range in.Final.Replicas {
		f := of(p)
		for _, l := range logs {
			r := invariant.Replica{Broker: l.Broker, Leader: l.Leader, HW: l.HW}
			for _, x := range l.Records {
				r.Records = append(r.Records, x.core())
			}
			f.Replicas = append(f.Replicas, r)
		}
	}
	for p, recs := range in.Final.Consumed {
		f := of(p)
		for _, x := range recs {
			f.Consumed = append(f.Consumed, x.core())
		}
	}
	return out
}

// explainLoss finds, for a lost write, how each copy went and the election
// that left it behind.
func explainLoss(w Write, cs []Copy, elections []Election) Loss {
	l := Loss{Write: w, Copies: cs}
	if l.Copies == nil {
		l.Copies = []Copy{}
	}
	l.Unsynced = false
	for _, c := range cs {
		if w.AckedSeq > 0 && c.To != 0 && c.To <= w.AckedSeq {
			continue // an earlier attempt's copy, gone before the acknowledgement
		}
		if c.Removal != RemovedByPowerLoss {
			l.Unsynced = false
			break
		}
		l.Unsynced = true
	}
	if len(cs) > 0 {
		first := cs[0].From
		for _, c := range cs {
			first = min(first, c.From)
		}
		for i := range elections {
			e := elections[i]
			if e.Partition != w.Partition || e.Seq < first || e.Leader < 0 || held(cs, e.Leader, e.Seq) {
				continue
			}
			l.Election = &e
			break
		}
	}
	// A later election without it may be the one the others followed
	// (strict seed 64: a leader elected without the record, then another
	// that had lost it to power loss and was followed).
	if !l.Unsynced && l.Election != nil {
		for i := range elections {
			e := elections[i]
			if e.Partition != w.Partition || e.Seq < l.Election.Seq || e.Leader < 0 || held(cs, e.Leader, e.Seq) {
				continue
			}
			if lostToPowerLossThenFollowed(w, cs, e) {
				l.Unsynced, l.Election = true, &e
				break
			}
		}
	}
	l.Cause = lossCause(l)
	return l
}

// lostToPowerLossThenFollowed reports whether the record was lost because
// the leader elected without it (e) had lost its copy to a power loss
// before any fsync, and every other copy went to a power loss too or after
// e, truncated to follow that leader. Kafka 4.1 elects such a leader with
// the strictest settings: a partition whose ISR and ELR are empty elects
// its last known leader once it is back, whatever its log lost
// (PartitionChangeBuilder.canElectLastKnownLeader), so only fsync could
// have kept the record. (Before the lab followed 4.1, KIP-966's unclean
// recovery elected the longest log instead and these were not lost.)
//
// Only the election of a last known leader counts, or a clean one of a
// leader whose incarnation the controller knew was gone (LeaderDown: a
// power-cut broker whose session had not expired yet, strict seed 19; or
// one restarted behind a cut link to the controller, strict seed 22):
// a clean election of a registered replica that had lost records is a
// rule's fault, and an unclean one is unclean.leader.election.enable's.
func lostToPowerLossThenFollowed(w Write, cs []Copy, e Election) bool {
	if !e.LastKnown && (e.Unclean || !e.LeaderDown) {
		return false
	}
	leaderLost := false
	for _, c := range cs {
		if w.AckedSeq > 0 && c.To != 0 && c.To <= w.AckedSeq {
			continue // an earlier attempt's copy, gone before the acknowledgement
		}
		switch {
		case c.Removal == RemovedByPowerLoss:
			leaderLost = leaderLost || c.Broker == e.Leader && c.To != 0 && c.To <= e.Seq
		case c.To == 0 || c.To < e.Seq:
			return false // held still, or gone before the election some other way
		}
	}
	return leaderLost
}

// unsyncedBetween reports whether every record the HW regression g fell
// back over (held at offsets [g.To.HW, g.From.HW) when the old HW was seen,
// and gone since) was lost to power loss on every
// replica that held it (and there was one): a HW falling back over them is
// what losing unsynced data looks like, not a separate fault. A record
// written at those offsets earlier and truncated before the old HW was
// seen, or later, was never under that HW. A record whose copies went
// because a leader elected in between had lost it to power loss, the
// others truncating to follow it, counts as lost to power loss too
// (lostToPowerLossThenFollowed).
func unsyncedBetween(cs []Copy, g Regression, elections []Election) bool {
	// heldThen: a copy that existed when the old HW was seen.
	heldThen := func(c Copy) bool { return c.From <= g.From.Seq && (c.To == 0 || c.To > g.From.Seq) }
	between := func(c Copy) bool { return c.Partition == g.Partition && c.Offset >= g.To.HW && c.Offset < g.From.HW }
	// The records the HW fell back over: held when the old HW was seen and
	// gone since, by the time the new HW was seen or after it (a last
	// known leader's followers truncate to it after its first HW: strict
	// seed 379).
	values := map[string]bool{}
	for _, c := range cs {
		if between(c) && heldThen(c) && c.To != 0 {
			values[c.Value] = true
		}
	}
	// Every copy those records had then went in a power loss by the time
	// the new HW was seen; copies written later (a retry) do not count,
	// nor copies of the same value at other offsets (a stale leader's
	// append of a batch its producer then retried elsewhere).
	for v := range values {
		// powerLoss: its copies held when the old HW was seen all went to
		// power loss. later: every copy of it there until the new HW (a
		// follower that copied it after the old HW was seen and lost it to
		// power loss may be the leader that is then followed: strict seed
		// 17 once steps fetched).
		var later []Copy
		powerLoss := true
		for _, c := range cs {
			if c.Value == v && between(c) && heldThen(c) {
				powerLoss = powerLoss && c.To != 0 && c.To <= g.To.Seq && c.Removal == RemovedByPowerLoss
			}
			if c.Value == v && between(c) && c.From <= g.To.Seq {
				later = append(later, c)
			}
		}
		if powerLoss {
			continue
		}
		// Or a leader elected in between had lost it to power loss and the
		// others truncated to follow it (Kafka 4.1's last known leader:
		// lostToPowerLossThenFollowed).
		followed := false
		for _, e := range elections {
			if e.Partition == g.Partition && e.Seq > g.From.Seq && e.Seq <= g.To.Seq && lostToPowerLossThenFollowed(Write{}, later, e) {
				followed = true
				break
			}
		}
		if !followed {
			return false
		}
	}
	return len(values) > 0
}

// held reports whether broker held a copy at bus sequence seq.
func held(cs []Copy, broker int32, seq uint64) bool {
	for _, c := range cs {
		if c.Broker == broker && c.From <= seq && (c.To == 0 || seq < c.To) {
			return true
		}
	}
	return false
}

func lossCause(l Loss) string {
	var s string
	switch e := l.Election; {
	case len(l.Copies) == 0:
		return "no replica was ever seen holding it"
	case e != nil:
		kind := "clean"
		if e.Unclean {
			kind = "unclean"
		}
		s = fmt.Sprintf("lost when broker %d was elected (%s) at leader epoch %d without it", e.Leader, kind, e.LeaderEpoch)
	case l.Unsynced:
		s = "lost to power loss before any replica had fsynced it"
	default:
		s = "lost without an election of a replica lacking it"
	}
	for _, c := range l.Copies {
		switch c.Removal {
		case "":
			s += fmt.Sprintf("; broker %d still holds it at offset %d", c.Broker, c.Offset)
		case RemovedByPowerLoss:
			s += fmt.Sprintf("; broker %d lost it to power loss (not yet fsynced)", c.Broker)
		default:
			s += fmt.Sprintf("; broker %d removed it (%s", c.Broker, c.Removal)
			if c.Detail != "" {
				s += ": " + c.Detail
			}
			s += ")"
		}
	}
	return s
}

// diverging compares each follower with its partition's leader below both
// HWs, offset by offset.
func diverging(finals map[int32]*invariant.Final) []Divergence {
	out := []Divergence{}
	for _, p := range slices.Sorted(maps.Keys(finals)) {
		for _, v := range finals[p].Diverged() {
			out = append(out, Divergence{Partition: p, Leader: v.Leader, Follower: v.Broker, Offset: v.Offset, LeaderRec: recOf(v.Want), FollowerRec: recOf(v.Found)})
		}
	}
	return out
}

// regressions finds every step down of a partition's consumer-visible HW
// (a HW staying low counts once), each with the highest HW seen before it.
func regressions(hws []HWSample) []Regression {
	out := []Regression{}
	hw := map[int32]*invariant.HWs{}
	seen := map[int32][]HWSample{}
	for _, s := range hws {
		h := hw[s.Partition]
		if h == nil {
			h = &invariant.HWs{}
			hw[s.Partition] = h
		}
		if back, _, at := h.Add(s.HW); back {
			out = append(out, Regression{Partition: s.Partition, From: seen[s.Partition][at], To: s})
		}
		seen[s.Partition] = append(seen[s.Partition], s)
	}
	return out
}

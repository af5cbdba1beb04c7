package chaos

import (
	"strings"
	"testing"

	"tidemark/invariant"
)

// clean is a hand-built run where nothing went wrong: two acknowledged
// writes on three replicas that agree, a HW that only grows, leaders in
// their ISR.
func clean() Input {
	recs := []Rec{{Offset: 0, Value: "p1-1"}, {Offset: 1, Value: "p3-1"}}
	in := Input{
		Writes: []Write{
			{Value: "p1-1", Producer: 1, Acks: "all", Partition: 0, Acked: true, Offset: 0, Attempts: 1},
			{Value: "p3-1", Producer: 3, Idempotent: true, Acks: "all", Partition: 0, Acked: true, Offset: 1, Attempts: 2},
			{Value: "p1-2", Producer: 1, Acks: "all", Partition: 0, Offset: -1, Error: "NOT_ENOUGH_REPLICAS", Attempts: 1},
		},
		HWs: []HWSample{{Action: 1, Seq: 2, HW: 0}, {Action: 2, Seq: 4, HW: 1}, {Action: 3, Seq: 8, HW: 2}, {Action: 4, Seq: 10, HW: 2}},
		Leaders: []LeaderSample{
			{Action: 1, Source: "controller", Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2, 3}},
			{Action: 2, Source: "broker 1", Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2}},
		},
		Final: Final{
			Consumed: map[int32][]Rec{0: recs},
			Replicas: map[int32][]ReplicaLog{0: {
				{Broker: 1, Leader: true, HW: 2, Records: recs},
				{Broker: 2, HW: 2, Records: recs},
				// A follower behind: it differs only above its HW.
				{Broker: 3, HW: 1, Records: []Rec{{Offset: 0, Value: "p1-1"}, {Offset: 1, LeaderEpoch: 1, Value: "other"}}},
			}},
			Partitions: []PartitionState{{Partition: 0, Leader: 1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}}},
		},
	}
	for _, b := range []int32{1, 2, 3} {
		in.Copies = append(in.Copies, Copy{Value: "p1-1", Broker: b, Offset: 0, From: 5, Action: -1},
			Copy{Value: "p3-1", Broker: b, Offset: 1, From: 7, Action: -1})
	}
	return in
}

func TestCheckCleanRun(t *testing.T) {
	r := Check(clean())
	c := r.Counts()
	if c.Violations() != 0 || c.Unreadable != 0 || c.UnsyncedLost != 0 || c.Unsettled != 0 || c.Writes != 3 || c.Acked != 2 {
		t.Fatalf("a clean run: %+v\n%+v", c, r)
	}
}

func TestCheckLostWithElection(t *testing.T) {
	in := clean()
	in.Final.Consumed[0] = in.Final.Consumed[0][:1] // p3-1 is gone
	in.Final.Replicas[0][0].Records = in.Final.Consumed[0]
	// Broker 3 held it from seq 7 until it truncated at seq 30; brokers 1
	// and 2 lost power at 20; broker 2 was elected at 25 without it.
	in.Copies = []Copy{
		{Value: "p3-1", Broker: 1, Offset: 1, From: 7, To: 20, Removal: RemovedByPowerLoss},
		{Value: "p3-1", Broker: 2, Offset: 1, From: 7, To: 20, Removal: RemovedByPowerLoss},
		{Value: "p3-1", Broker: 3, Offset: 1, From: 7, To: 30, Removal: RemovedByTruncation, Detail: "diverging-epoch"},
	}
	in.Elections = []Election{
		{Seq: 3, Partition: 0, Leader: 1, LeaderEpoch: 0},  // before it was written
		{Seq: 10, Partition: 1, Leader: 2, LeaderEpoch: 1}, // another partition
		{Seq: 12, Partition: 0, Leader: 3, LeaderEpoch: 1}, // a holder
		{Seq: 25, Partition: 0, Leader: 2, LeaderEpoch: 2, Unclean: false},
		{Seq: 40, Partition: 0, Leader: 1, LeaderEpoch: 3},
	}
	r := Check(in)
	if len(r.Lost) != 1 || len(r.UnsyncedLost) != 0 {
		t.Fatalf("lost %+v unsynced %+v", r.Lost, r.UnsyncedLost)
	}
	l := r.Lost[0]
	if l.Write.Value != "p3-1" || l.Election == nil || l.Election.Seq != 25 || l.Election.Leader != 2 || len(l.Copies) != 3 {
		t.Fatalf("loss %+v election %+v", l, l.Election)
	}
	if !strings.Contains(l.Cause, "broker 2 was elected (clean) at leader epoch 2") || !strings.Contains(l.Cause, "broker 3 removed it (truncation: diverging-epoch)") {
		t.Fatalf("cause %q", l.Cause)
	}
}

// TestCheckLastKnownLeaderLoss: Kafka 4.1 elects a partition's last known
// leader, as an unclean election, once its ISR and ELR are empty; when
// that leader had lost the record to power loss and the others truncated
// to follow it, only fsync could have kept it: an unsynced loss, and the
// HW falling back over it is not a violation. Before, it was a real loss.
func TestCheckLastKnownLeaderLoss(t *testing.T) {
	in := clean()
	in.Final.Consumed[0] = in.Final.Consumed[0][:1] // p3-1 is gone
	in.Final.Replicas[0][0].Records = in.Final.Consumed[0]
	in.Copies = []Copy{
		{Value: "p3-1", Broker: 1, Offset: 1, From: 7, To: 20, Removal: RemovedByPowerLoss},
		{Value: "p3-1", Broker: 2, Offset: 1, From: 7, To: 20, Removal: RemovedByPowerLoss},
		{Value: "p3-1", Broker: 3, Offset: 1, From: 7, To: 30, Removal: RemovedByTruncation, Detail: "diverging-epoch"},
	}
	in.Elections = []Election{{Seq: 25, Partition: 0, Leader: 2, PreviousLeader: -1, LeaderEpoch: 2, Unclean: true, LastKnown: true}}
	in.HWs = append(in.HWs, HWSample{Action: 9, Seq: 35, HW: 1})
	c := Check(in).Counts()
	if c.Lost != 0 || c.UnsyncedLost != 1 || c.HWBackwards != 0 || c.UnsyncedHWBackwards != 1 {
		t.Fatalf("%+v", c)
	}
	// The new leader's HW is seen before broker 3 truncates to follow it
	// (strict seed 379: the followers truncate at their next fetch).
	in.HWs[len(in.HWs)-1].Seq = 27
	if c := Check(in).Counts(); c.UnsyncedLost != 1 || c.HWBackwards != 0 || c.UnsyncedHWBackwards != 1 {
		t.Fatalf("followers truncating after the new HW: %+v", c)
	}
	// Broker 3 truncating it before that election was some other fault.
	in.Copies[2].To = 22
	if c := Check(in).Counts(); c.Lost != 1 || c.UnsyncedLost != 0 {
		t.Fatalf("truncated before the election: %+v", c)
	}
}

func TestCheckUnsyncedLoss(t *testing.T) {
	in := clean()
	in.Final.Consumed[0] = nil
	for i := range in.Final.Replicas[0] {
		in.Final.Replicas[0][i].Records, in.Final.Replicas[0][i].HW = nil, 0
	}
	in.Copies = nil
	for _, b := range []int32{1, 2, 3} {
		in.Copies = append(in.Copies,
			Copy{Value: "p1-1", Broker: b, Offset: 0, From: 5, To: 20, FromAction: 1, Action: 8, Removal: RemovedByPowerLoss},
			Copy{Value: "p3-1", Broker: b, Offset: 1, From: 7, To: 20, FromAction: 2, Action: 8, Removal: RemovedByPowerLoss})
	}
	// The HW a consumer saw fell from 2 to 0 with them.
	in.HWs = append(in.HWs, HWSample{Action: 9, Seq: 25, HW: 0})
	r := Check(in)
	c := r.Counts()
	if c.UnsyncedLost != 2 || c.Lost != 0 || c.UnsyncedHWBackwards != 1 || c.HWBackwards != 0 || c.Violations() != 0 {
		t.Fatalf("%+v", c)
	}
	if !r.UnsyncedLost[0].Unsynced || !strings.Contains(r.UnsyncedLost[0].Cause, "power loss before any replica had fsynced it") {
		t.Fatalf("%+v", r.UnsyncedLost[0])
	}
	// A record written at the freed offset after the regression changes
	// nothing.
	in.Copies = append(in.Copies, Copy{Value: "p1-9", Broker: 1, Offset: 0, From: 30, FromAction: 10, Action: -1})
	// Nor does one written there before and truncated before the old HW
	// was seen (it was never under it).
	in.Copies = append(in.Copies, Copy{Value: "p2-9", Broker: 3, Offset: 0, From: 1, To: 2, FromAction: 0, Action: 0, Removal: RemovedByTruncation})
	if c := Check(in).Counts(); c.UnsyncedHWBackwards != 1 || c.HWBackwards != 0 {
		t.Fatalf("other records at the same offset: %+v", c)
	}
	in.Copies = in.Copies[:len(in.Copies)-2]
	// A retry of p1-1 written again after the regression, still held at
	// the end, is not one of the copies the HW fell back over.
	in.Copies = append(in.Copies, Copy{Value: "p1-1", Broker: 2, Offset: 0, From: 40, FromAction: 12, Action: -1})
	if c := Check(in).Counts(); c.UnsyncedHWBackwards != 1 || c.HWBackwards != 0 {
		t.Fatalf("a later retry of the same value: %+v", c)
	}
	in.Copies = in.Copies[:len(in.Copies)-1]
	// Nor is a copy of p3-1 at another offset, held all along: a stale
	// leader (fenced behind a delayed link) appended the batch there
	// before its producer retried it with the new leader; the records the
	// HW fell back over were only where power was lost.
	in.Copies = append(in.Copies, Copy{Value: "p3-1", Broker: 1, Offset: 5, From: 3, FromAction: 1, Action: -1})
	if c := Check(in).Counts(); c.UnsyncedHWBackwards != 1 || c.HWBackwards != 0 {
		t.Fatalf("a copy of the same value at another offset: %+v", c)
	}
	in.Copies = in.Copies[:len(in.Copies)-1]
	// A copy of an earlier attempt, truncated before the acknowledgement,
	// does not make the acknowledged record's loss a real one.
	in.Writes[0].AckedSeq = 5
	in.Copies = append(in.Copies, Copy{Value: "p1-1", Broker: 2, Offset: 0, From: 1, To: 3, Removal: RemovedByTruncation})
	if c := Check(in).Counts(); c.UnsyncedLost != 2 || c.Lost != 0 {
		t.Fatalf("an earlier attempt's truncated copy: %+v", c)
	}
	in.Copies = in.Copies[:len(in.Copies)-1]
	// One replica that truncated it instead makes it a real loss.
	in.Copies[4].Removal = RemovedByTruncation
	if c := Check(in).Counts(); c.Lost != 1 || c.UnsyncedLost != 1 || c.HWBackwards != 1 {
		t.Fatalf("%+v", c)
	}
}

func TestCheckDuplicateAndWrongOffset(t *testing.T) {
	in := clean()
	// p3-1 was appended twice (a retry), p1-1 sits at another offset.
	in.Final.Consumed[0] = []Rec{{Offset: 0, Value: "p3-1"}, {Offset: 1, Value: "p3-1"}, {Offset: 2, Value: "p1-1"}}
	r := Check(in)
	c := r.Counts()
	if c.Duplicated != 1 || c.WrongOffset != 1 || c.Lost != 0 {
		t.Fatalf("%+v", c)
	}
	if d := r.Duplicated[0]; d.Write.Value != "p3-1" || len(d.Offsets) != 2 {
		t.Fatalf("%+v", d)
	}
	if m := r.WrongOffset[0]; m.Write.Value != "p1-1" || m.Offsets[0] != 2 {
		t.Fatalf("%+v", m)
	}
	// An unacknowledged idempotent write appended twice is a duplicate too.
	in = clean()
	in.Writes[2].Producer, in.Writes[2].Idempotent = 3, true
	in.Final.Consumed[0] = append(in.Final.Consumed[0], Rec{Offset: 2, Value: "p1-2"}, Rec{Offset: 3, Value: "p1-2"})
	if c := Check(in).Counts(); c.Duplicated != 1 {
		t.Fatalf("%+v", c)
	}
}

func TestCheckReplicasDiffer(t *testing.T) {
	in := clean()
	in.Final.Replicas[0][1].Records = []Rec{{Offset: 0, Value: "p1-1"}, {Offset: 1, LeaderEpoch: 1, Value: "stale"}}
	r := Check(in)
	if len(r.ReplicasDiffer) != 1 {
		t.Fatalf("%+v", r.ReplicasDiffer)
	}
	d := r.ReplicasDiffer[0]
	if d.Follower != 2 || d.Leader != 1 || d.Offset != 1 || d.FollowerRec.Value != "stale" || d.LeaderRec.Value != "p3-1" {
		t.Fatalf("%+v", d)
	}
	// A record missing on one side counts too.
	in = clean()
	in.Final.Replicas[0][1].Records = in.Final.Replicas[0][1].Records[1:]
	if r := Check(in); len(r.ReplicasDiffer) != 1 || r.ReplicasDiffer[0].FollowerRec != nil || r.ReplicasDiffer[0].Offset != 0 {
		t.Fatalf("%+v", r.ReplicasDiffer)
	}
}

func TestCheckHWBackwardsAndLeaderOutsideISR(t *testing.T) {
	in := clean()
	// 2 → 1 → 1 → 2 → 0: two steps down; staying low counts once.
	in.HWs = append(in.HWs, HWSample{Action: 5, HW: 1}, HWSample{Action: 6, HW: 1}, HWSample{Action: 7, HW: 2}, HWSample{Action: 8, HW: 0},
		HWSample{Action: 8, Partition: 1, HW: 5}) // another partition
	in.Leaders = append(in.Leaders,
		LeaderSample{Action: 5, Source: "controller", Leader: 2, LeaderEpoch: 1, ISR: []int32{1, 3}},
		LeaderSample{Action: 6, Source: "controller", Leader: 2, LeaderEpoch: 1, ISR: []int32{1, 3}}, // the same one
		LeaderSample{Action: 6, Source: "broker 2", Leader: 2, LeaderEpoch: 1, ISR: []int32{3}},
		LeaderSample{Action: 7, Source: "controller", Leader: -1, LeaderEpoch: 2, ISR: []int32{3}}) // offline is not outside
	r := Check(in)
	if len(r.HWBackwards) != 2 || r.HWBackwards[0].From.HW != 2 || r.HWBackwards[0].To.HW != 1 || r.HWBackwards[1].To.Action != 8 {
		t.Fatalf("%+v", r.HWBackwards)
	}
	if len(r.LeaderOutsideISR) != 2 {
		t.Fatalf("%+v", r.LeaderOutsideISR)
	}
}

func TestCheckUnreadable(t *testing.T) {
	// The leader holds p3-1 but its HW never passed it.
	in := clean()
	in.Final.Consumed[0] = in.Final.Consumed[0][:1]
	if c := Check(in).Counts(); c.Unreadable != 1 || c.Lost != 0 {
		t.Fatalf("%+v", c)
	}
	in = clean()
	in.Final.Offline = []int32{0}
	delete(in.Final.Consumed, 0)
	if c := Check(in).Counts(); c.Unreadable != 2 || c.Lost != 0 {
		t.Fatalf("%+v", c)
	}
}

// TestCheckUnsettled: settled, a partition without a leader or with an ISR
// short of its replicas is unsettled (a wedge, or kept offline by the
// rules), counted on its own.
func TestCheckUnsettled(t *testing.T) {
	for _, p := range []PartitionState{
		{Partition: 0, Leader: 1, ISR: []int32{1, 3}, Replicas: []int32{1, 2, 3}},
		{Partition: 0, Leader: -1, ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}},
	} {
		in := clean()
		in.Final.Partitions = []PartitionState{p}
		r := Check(in)
		if c := r.Counts(); c.Unsettled != 1 || c.Violations() != 0 || len(r.Unsettled) != 1 || r.Unsettled[0].Leader != p.Leader {
			t.Fatalf("%+v: %+v", p, c)
		}
	}
}

// TestCheckCompactedTopic: on a cleanup.policy=compact topic a record
// superseded by a later acknowledged write of its key, or a tombstone
// older than delete.retention.ms, is gone from every log without being
// lost, and replicas whose cleaners ran at different times do not differ;
// a key's latest acknowledged value gone is still lost, and on a topic
// that does not compact the same gap is a loss.
func TestCheckCompactedTopic(t *testing.T) {
	in := func(compact bool) Input {
		w := func(v, key string, off int64) Write {
			return Write{Value: v, Key: key, Acks: "all", Acked: true, Offset: off, Attempts: 1, Timestamp: 1_000}
		}
		// k1: a1 then a2; k2: b1 then a tombstone; k3: c1, lost.
		writes := []Write{w("a1", "k1", 0), w("b1", "k2", 1), w("a2", "k1", 2), w("gone", "k2", 3), w("c1", "k3", 4)}
		writes[3].Tombstone = true
		// The leader cleaned everything it could; the follower not yet.
		leader := []Rec{{Offset: 2, Value: "a2", Key: "k1"}}
		follower := []Rec{{Offset: 0, Value: "a1", Key: "k1"}, {Offset: 2, Value: "a2", Key: "k1"},
			{Offset: 3, Key: "k2", Tombstone: true, Timestamp: 1_000}}
		return Input{Writes: writes, Topic: invariant.Topic{Compact: compact, DeleteRetentionMs: 60_000}, NowMs: 100_000,
			Final: Final{Consumed: map[int32][]Rec{0: leader}, Replicas: map[int32][]ReplicaLog{0: {
				{Broker: 1, Leader: true, HW: 5, Records: leader}, {Broker: 2, HW: 5, Records: follower}}}}}
	}
	r := Check(in(true))
	if c := r.Counts(); c.Lost != 1 || r.Lost[0].Write.Value != "c1" || c.Violations() != 1 || c.Unreadable != 0 {
		t.Fatalf("compacted: %+v, lost %+v; want c1 lost alone", c, r.Lost)
	}
	// Within delete.retention.ms the tombstone must still be there.
	young := in(true)
	young.NowMs = 30_000
	if r := Check(young); len(r.Lost) != 2 || r.Lost[0].Write.Value != "gone" || len(r.ReplicasDiffer) != 1 || r.ReplicasDiffer[0].Offset != 3 {
		t.Fatalf("tombstone within delete.retention.ms: lost %+v, differ %+v; want the tombstone and c1 lost, the logs differing at 3", r.Lost, r.ReplicasDiffer)
	}
	r = Check(in(false))
	if c := r.Counts(); c.Lost != 4 || c.ReplicasDiffer != 1 {
		t.Fatalf("not compacted: %+v; want a1, b1, the tombstone and c1 lost, the logs differing", c)
	}
}

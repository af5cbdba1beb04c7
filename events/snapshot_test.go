package events

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func demo() Snapshot {
	s := Snapshot{Controller: 1}
	for id := int32(1); id <= 3; id++ {
		s.Brokers = append(s.Brokers, Broker{ID: id, State: BrokerUp, Listener: "127.0.0.1:909" + string('0'+rune(id))})
	}
	p := Partition{Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	for id := int32(1); id <= 3; id++ {
		p.ReplicaLogs = append(p.ReplicaLogs, Replica{Broker: id})
	}
	s.Topics = []Topic{{Name: "demo", Partitions: []Partition{p}}}
	return s
}

func TestApplySequence(t *testing.T) {
	s := demo()
	seq := uint64(0)
	apply := func(e Event) {
		seq++
		e.Seq = seq
		s.Apply(e)
	}
	recs := []Record{{Offset: 0, LeaderEpoch: 0, Value: "a"}, {Offset: 1, LeaderEpoch: 0, Value: "b"}}
	apply(Event{Kind: KindEpoch, Broker: 1, Topic: "demo", Leader: &Leadership{Leader: 1, LeaderEpoch: 0, StartOffset: 0}})
	apply(Event{Kind: KindAppend, Broker: 1, Topic: "demo", Offsets: &Offsets{Base: 0, Last: 1, LEO: 2}, Records: recs})
	apply(Event{Kind: KindHW, Broker: 1, Topic: "demo", Offsets: &Offsets{HW: 2}})
	apply(Event{Kind: KindFault, Broker: 1, Fault: &Fault{Kind: FaultCrash}})
	apply(Event{Kind: KindElection, Broker: NoBroker, Topic: "demo", Leader: &Leadership{Leader: 2, PreviousLeader: 1, LeaderEpoch: 1}, ISR: []int32{2, 3}})
	apply(Event{Kind: KindEpoch, Broker: 1, Topic: "demo", Leader: &Leadership{LeaderEpoch: 1, StartOffset: 1}})
	apply(Event{Kind: KindTruncation, Broker: 1, Topic: "demo", Offsets: &Offsets{LEO: 1}, Message: "why",
		Truncated: []TruncatedRecord{{Offset: 1, LeaderEpoch: 0, Digest: Digest(nil, []byte("b"))}}})
	apply(Event{Kind: KindConfig, Topic: "demo", Config: &ConfigChange{Key: "min.insync.replicas", Value: "2"}})
	apply(Event{Kind: KindConfig, Config: &ConfigChange{Key: "truncation.rule", Value: "high-watermark"}})
	apply(Event{Kind: KindClock, Clock: &ClockChange{Action: ClockPause}})
	apply(Event{Kind: KindFault, Fault: &Fault{Kind: FaultCut, From: 1, To: 2}})
	apply(Event{Kind: KindBroker, Broker: 3, BrokerState: BrokerFenced})
	// Events about unknown things change only Seq.
	apply(Event{Kind: KindHW, Broker: 9, Topic: "demo", Offsets: &Offsets{HW: 99}})
	apply(Event{Kind: KindISR, Topic: "nope", ISR: []int32{1}})
	apply(Event{Kind: KindAppend, Broker: 1, Topic: "demo", Partition: 5, Offsets: &Offsets{LEO: 9}})
	apply(Event{Kind: KindElection, Topic: "demo"}) // no Leader payload

	if s.Seq != seq {
		t.Fatalf("Seq = %d, want %d", s.Seq, seq)
	}
	p := s.Partition("demo", 0)
	r1 := p.Replica(1)
	wantR1 := Replica{Broker: 1, LEO: 1, HW: 1,
		EpochCache: []EpochEntry{{Epoch: 0, StartOffset: 0}},
		Records:    recs[:1],
		// The snapshot keeps the removed record's value and why it went.
		Truncated: []TruncatedRecord{{Offset: 1, LeaderEpoch: 0, Digest: Digest(nil, []byte("b")), Value: "b", Reason: "why"}},
	}
	if !reflect.DeepEqual(*r1, wantR1) {
		t.Errorf("replica 1 = %+v\nwant %+v", *r1, wantR1)
	}
	if p.Leader != 2 || p.LeaderEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{2, 3}) || !p.UnderReplicated() || p.Offline() {
		t.Errorf("partition = %+v", *p)
	}
	if s.Broker(1).State != BrokerCrashed || s.Broker(3).State != BrokerFenced {
		t.Errorf("brokers = %+v", s.Brokers)
	}
	if s.Topic("demo").Configs["min.insync.replicas"] != "2" || s.Configs["truncation.rule"] != "high-watermark" {
		t.Errorf("configs = %v %v", s.Topic("demo").Configs, s.Configs)
	}
	if !s.Paused || len(s.Cuts) != 1 {
		t.Errorf("paused %v cuts %v", s.Paused, s.Cuts)
	}
	apply(Event{Kind: KindFault, Fault: &Fault{Kind: FaultHeal}})
	apply(Event{Kind: KindFault, Broker: 1, Fault: &Fault{Kind: FaultRestart}})
	apply(Event{Kind: KindConfig, Topic: "demo", Config: &ConfigChange{Key: "min.insync.replicas"}})
	if len(s.Cuts) != 0 || s.Broker(1).State != BrokerUp || len(s.Topic("demo").Configs) != 0 {
		t.Errorf("after heal/restart/unset: cuts %v broker %+v configs %v", s.Cuts, *s.Broker(1), s.Topic("demo").Configs)
	}
}

func TestApplyTopicAndWindow(t *testing.T) {
	s := demo()
	created := Topic{Name: "t2", Partitions: []Partition{{Partition: 0, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}, ReplicaLogs: []Replica{{Broker: 2}}}}}
	s.Apply(Event{Seq: 1, Kind: KindTopic, Topic: "t2", TopicCreated: &created})
	created.Partitions[0].Leader = 3 // the snapshot must not alias the event
	if p := s.Partition("t2", 0); p == nil || p.Leader != 2 {
		t.Fatalf("created topic = %+v", s.Topic("t2"))
	}
	for i := range RecordWindow + 10 {
		off := int64(i)
		s.Apply(Event{Seq: uint64(2 + i), Kind: KindAppend, Broker: 2, Topic: "t2", Offsets: &Offsets{LEO: off + 1}, Records: []Record{{Offset: off}}})
	}
	rs := s.Partition("t2", 0).Replica(2).Records
	if len(rs) != RecordWindow || rs[0].Offset != 10 || rs[len(rs)-1].Offset != RecordWindow+9 {
		t.Fatalf("window = %d records from %d", len(rs), rs[0].Offset)
	}
	s.Apply(Event{Seq: 100, Kind: KindTopic, Topic: "t2"})
	if s.Topic("t2") != nil || s.Topic("demo") == nil {
		t.Fatalf("after delete: %+v", s.Topics)
	}
}

func TestCloneIsDeep(t *testing.T) {
	s := demo()
	s.Configs = map[string]string{"a": "b"}
	s.Apply(Event{Seq: 1, Kind: KindAppend, Broker: 1, Topic: "demo", Offsets: &Offsets{LEO: 1}, Records: []Record{{Value: "x"}}})
	c := s.Clone()
	if !reflect.DeepEqual(s, c) {
		t.Fatal("clone differs")
	}
	c.Configs["a"] = "z"
	c.Brokers[0].State = BrokerCrashed
	c.Topics[0].Partitions[0].ISR[0] = 9
	c.Topics[0].Partitions[0].ReplicaLogs[0].Records[0].Value = "y"
	if s.Configs["a"] != "b" || s.Brokers[0].State != BrokerUp || s.Topics[0].Partitions[0].ISR[0] != 1 ||
		s.Topics[0].Partitions[0].ReplicaLogs[0].Records[0].Value != "x" {
		t.Fatal("clone shares memory with the original")
	}
}

// TestRecordsMergeLate: values decoded after their append fill the window
// by offset, replace what was there, and never bring back a record that a
// truncation removed since.
func TestRecordsMergeLate(t *testing.T) {
	s := Snapshot{Topics: []Topic{{Name: "demo", Partitions: []Partition{{Partition: 0, ReplicaLogs: []Replica{{Broker: 2}}}}}}}
	s.Apply(Event{Kind: KindAppend, Broker: 2, Topic: "demo", Offsets: &Offsets{Base: 0, Last: 2, LEO: 3}})
	s.Apply(Event{Kind: KindRecords, Broker: 2, Topic: "demo", Records: []Record{{Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}}})
	s.Apply(Event{Kind: KindRecords, Broker: 2, Topic: "demo", Records: []Record{{Offset: 0, Value: "a"}, {Offset: 2, Value: "C"}}})
	r := s.Partition("demo", 0).Replica(2)
	if len(r.Records) != 3 || r.Records[0].Value != "a" || r.Records[1].Value != "b" || r.Records[2].Value != "C" {
		t.Fatalf("window %+v", r.Records)
	}
	s.Apply(Event{Kind: KindTruncation, Broker: 2, Topic: "demo", Offsets: &Offsets{LEO: 1}})
	s.Apply(Event{Kind: KindRecords, Broker: 2, Topic: "demo", Records: []Record{{Offset: 1, Value: "b"}}})
	if r := s.Partition("demo", 0).Replica(2); len(r.Records) != 1 || r.Records[0].Value != "a" {
		t.Fatalf("after truncation: %+v", r.Records)
	}
	if !KindRecords.Unlisted() || !KindFetchRequest.Unlisted() || KindAppend.Unlisted() {
		t.Fatal("Unlisted")
	}
}

// TestApplyISRWithNewStamp: a pipeline rebuilt under the same head is an
// ISR event carrying the new generation stamp; the partition's leader
// epoch follows it, and a plain ISR event leaves the epoch as it was.
func TestApplyISRWithNewStamp(t *testing.T) {
	s := demo()
	s.Apply(Event{Seq: 1, Kind: KindISR, Topic: "demo", ISR: []int32{1, 3}, Leader: &Leadership{Leader: 1, PreviousLeader: 1, LeaderEpoch: 1}})
	if p := s.Partition("demo", 0); p.LeaderEpoch != 1 || p.Leader != 1 || !reflect.DeepEqual(p.ISR, []int32{1, 3}) {
		t.Fatalf("after a new stamp: leader %d epoch %d ISR %v", p.Leader, p.LeaderEpoch, p.ISR)
	}
	s.Apply(Event{Seq: 2, Kind: KindISR, Topic: "demo", ISR: []int32{1}})
	if p := s.Partition("demo", 0); p.LeaderEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Fatalf("after a plain ISR change: epoch %d ISR %v", p.LeaderEpoch, p.ISR)
	}
}

// TestShownCutsLargeRecords: a key or value over ShownBytes is cut at a
// character boundary, says its whole size and carries the whole record's
// digest; a small record is left as it is.
func TestShownCutsLargeRecords(t *testing.T) {
	small := Record{Offset: 1, LeaderEpoch: 2, Key: "k", Value: "v"}
	if got := Shown(small); got != small || RecordDigest(got) != Digest([]byte("k"), []byte("v")) {
		t.Fatalf("small record: %+v", got)
	}
	value := "x" + strings.Repeat("é", ShownBytes) // the cut falls inside an é
	key := strings.Repeat("k", ShownBytes+1)
	got := Shown(Record{Offset: 3, Key: key, Value: value})
	want := Record{Offset: 3, Key: strings.Repeat("k", ShownBytes) + "…", KeySize: len(key),
		Value: "x" + strings.Repeat("é", (ShownBytes-1)/2) + "…", ValueSize: len(value), Digest: Digest([]byte(key), []byte(value))}
	if got != want {
		t.Fatalf("Shown cut\n%+v\nwant\n%+v", got, want)
	}
	if Shown(got) != got || RecordDigest(got) != want.Digest {
		t.Fatal("a cut record is cut again or loses its digest")
	}
	if r := RecordOf(3, 0, []byte(key), []byte(value)); r != want {
		t.Fatalf("RecordOf\n%+v\nwant\n%+v", r, want)
	}
	rs := []Record{small, {Value: value}}
	if out := ShownRecords(rs); rs[1].Value != value || out[1].ValueSize != len(value) || out[0] != small {
		t.Fatal("ShownRecords changed its argument or missed a record")
	}
}

// TestApplyTxnAndCleaner: records of a transaction are marked aborted once
// its abort marker is in the window (a later transaction's are not), a
// replica's LSO follows its events, and a cleaner's event replaces the
// window from where it read.
func TestApplyTxnAndCleaner(t *testing.T) {
	s := &Snapshot{Topics: []Topic{{Name: "t", Partitions: []Partition{{ReplicaLogs: []Replica{{Broker: 1}}}}}}}
	rec := func(off int64, control string) Record {
		return Record{Offset: off, Value: "v", Txn: true, ProducerID: 3, Control: control}
	}
	s.Apply(Event{Seq: 1, Kind: KindAppend, Broker: 1, Topic: "t", Offsets: &Offsets{LEO: 2}, Records: []Record{rec(0, ""), rec(1, "")}})
	s.Apply(Event{Seq: 2, Kind: KindAppend, Broker: 1, Topic: "t", Offsets: &Offsets{LEO: 4}, Records: []Record{rec(2, ControlAbort), rec(3, "")},
		Txn: &Txn{LSO: 3}})
	r := &s.Topics[0].Partitions[0].ReplicaLogs[0]
	var aborted []bool
	for _, x := range r.Records {
		aborted = append(aborted, x.Aborted)
	}
	if want := []bool{true, true, false, false}; fmt.Sprint(aborted) != fmt.Sprint(want) || r.Txn == nil || r.Txn.LSO != 3 {
		t.Fatalf("aborted %v, want %v; txn %+v", aborted, want, r.Txn)
	}
	// Late values replace records: the marks are made again.
	s.Apply(Event{Seq: 3, Kind: KindRecords, Broker: 1, Topic: "t", Records: []Record{rec(0, ""), rec(1, "")}})
	if !r.Records[0].Aborted || !r.Records[1].Aborted {
		t.Fatalf("late values lost the marks: %+v", r.Records)
	}
	c := s.Clone()
	s.Apply(Event{Seq: 4, Kind: KindLEO, Broker: 1, Topic: "t", Offsets: &Offsets{LEO: 4},
		Cleaner: &Cleaner{FirstDirty: 3, DirtyRatio: 0.5, RecordsFrom: 1}, Records: []Record{{Offset: 3, Value: "kept"}}})
	if len(r.Records) != 2 || r.Records[0].Offset != 0 || r.Records[1].Value != "kept" || r.Cleaner == nil || r.Cleaner.FirstDirty != 3 {
		t.Fatalf("after the cleaner: %+v, %+v", r.Records, r.Cleaner)
	}
	// Between passes the ratio changes, the window stays.
	s.Apply(Event{Seq: 5, Kind: KindHW, Broker: 1, Topic: "t", Offsets: &Offsets{HW: 4}, Cleaner: &Cleaner{FirstDirty: 3, DirtyRatio: 0.25, RecordsFrom: -1}})
	if len(r.Records) != 2 || r.Cleaner.DirtyRatio != 0.25 {
		t.Fatalf("a ratio's change: %+v, %+v", r.Records, r.Cleaner)
	}
	if old := c.Topics[0].Partitions[0].ReplicaLogs[0]; old.Cleaner != nil || len(old.Records) != 4 {
		t.Fatalf("the clone changed with the snapshot: %+v", old)
	}
}

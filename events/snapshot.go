package events

import (
	"tidemark/leaderepoch"
)

// BrokerState is a broker's state as the UI shows it.
type BrokerState string

// The broker states.
const (
	BrokerUp      BrokerState = "up"      // running and registered with the controller
	BrokerCrashed BrokerState = "crashed" // process stopped (crash or power loss)
	BrokerFenced  BrokerState = "fenced"  // running but fenced by the controller (missed heartbeats)
)

// Glyph is the shape shown beside a broker's state, so the state never
// depends on colour alone: ● up, ✕ crashed, ▲ fenced, ? anything else.
func (st BrokerState) Glyph() string {
	switch st {
	case BrokerUp:
		return "●"
	case BrokerCrashed:
		return "✕"
	case BrokerFenced:
		return "▲"
	}
	return "?"
}

// RecordWindow is how many of a replica's newest records (and truncated records)
// a Snapshot keeps; older ones are only on disk.
const RecordWindow = 64

// Snapshot is the whole visible state of the lab. Seq is the Seq of the last
// event whose change it includes (0 before the first event), so a client that
// holds a Snapshot applies exactly the events with a larger Seq.
type Snapshot struct {
	Seq        uint64            `json:"seq"`
	Time       Time              `json:"time"`
	Brokers    []Broker          `json:"brokers"`
	Controller int32             `json:"controller"` // NoBroker when there is none
	Topics     []Topic           `json:"topics"`
	Configs    map[string]string `json:"configs,omitempty"` // lab-wide settings
	Cuts       []Fault           `json:"cuts,omitempty"`    // network links currently cut
	Paused     bool              `json:"paused,omitempty"`  // the lab clock is paused
	// Rate is the lab clock's rate while it runs: lab seconds per real
	// second (0.25, 1 or 4); 0 means 1 (ClockRate).
	Rate float64 `json:"rate,omitempty"`
	// Observed is true for a real Kafka cluster the lab only reads
	// (server/observe): Controller is one of its brokers, and there is no
	// lab controller (node 0) nor UI producer.
	Observed bool `json:"observed,omitempty"`
}

// ClockRate returns the lab clock's rate: Rate, or 1 when it is not set.
func (s *Snapshot) ClockRate() float64 {
	if s.Rate <= 0 {
		return 1
	}
	return s.Rate
}

// Broker is one broker: its id, state and Kafka listener address (host:port).
type Broker struct {
	ID       int32       `json:"id"`
	State    BrokerState `json:"state"`
	Listener string      `json:"listener"`
}

// Topic is one topic with its configs and partitions (ordered by partition).
type Topic struct {
	Name       string            `json:"name"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []Partition       `json:"partitions"`
}

// Partition is one partition as the controller and its replicas see it.
// Leader is NoBroker while the partition is offline.
type Partition struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	// ELR is the eligible leader replicas (KIP-966); empty unless the
	// kraft-elr fencing rule put replicas there.
	ELR         []int32   `json:"elr,omitempty"`
	ReplicaLogs []Replica `json:"replica_logs"`
}

// UnderReplicated reports whether the ISR is smaller than the replica set.
func (p *Partition) UnderReplicated() bool { return len(p.ISR) < len(p.Replicas) }

// Offline reports whether the partition has no leader.
func (p *Partition) Offline() bool { return p.Leader == NoBroker }

// Replica is one replica's log as the UI shows it: LEO, HW, log start offset,
// its leader-epoch cache, a window of its newest records and of the records
// truncation removed from it (both at most RecordWindow long).
type Replica struct {
	Broker         int32             `json:"broker"`
	LEO            int64             `json:"leo"`
	HW             int64             `json:"hw"`
	LogStartOffset int64             `json:"log_start_offset"`
	EpochCache     []EpochEntry      `json:"epoch_cache"`
	Records        []Record          `json:"records"`
	Truncated      []TruncatedRecord `json:"truncated,omitempty"`
	// Segments is every segment's base offset, oldest first: where the
	// lanes draw the segments' boundaries (nil until an event said).
	Segments []int64 `json:"segments,omitempty"`
	// Txn is set once the replica's log holds transactional batches: its
	// LSO, drawn beside HW and LEO.
	Txn *Txn `json:"txn,omitempty"`
	// Cleaner is set once the log cleaner ran on the replica: its clean and
	// dirty sections.
	Cleaner *Cleaner `json:"cleaner,omitempty"`
}

// EpochEntry is one leader-epoch cache entry: the first offset written in Epoch.
type EpochEntry = leaderepoch.Entry

// MessageType tells a websocket Message's payload apart.
type MessageType string

// The websocket message types.
const (
	MessageSnapshot MessageType = "snapshot" // Snapshot is set; replaces the client's state
	MessageEvents   MessageType = "events"   // Events are set, in Seq order
)

// Message is one websocket frame from the server to the panel.
type Message struct {
	Type     MessageType `json:"type"`
	Snapshot *Snapshot   `json:"snapshot,omitempty"`
	Events   []Event     `json:"events,omitempty"`
}

// Clone returns a deep copy of s that shares no slices or maps with it.
func (s *Snapshot) Clone() Snapshot {
	c := *s
	c.Brokers = append([]Broker(nil), s.Brokers...)
	c.Configs = cloneMap(s.Configs)
	c.Cuts = append([]Fault(nil), s.Cuts...)
	c.Topics = make([]Topic, len(s.Topics))
	for i, t := range s.Topics {
		t.Configs = cloneMap(t.Configs)
		ps := make([]Partition, len(t.Partitions))
		for j, p := range t.Partitions {
			p.Replicas = append([]int32(nil), p.Replicas...)
			p.ISR = append([]int32(nil), p.ISR...)
			p.ELR = append([]int32(nil), p.ELR...)
			rs := make([]Replica, len(p.ReplicaLogs))
			for k, r := range p.ReplicaLogs {
				r.EpochCache = append([]EpochEntry(nil), r.EpochCache...)
				r.Records = append([]Record(nil), r.Records...)
				r.Truncated = append([]TruncatedRecord(nil), r.Truncated...)
				r.Segments = append([]int64(nil), r.Segments...)
				rs[k] = r
			}
			p.ReplicaLogs = rs
			ps[j] = p
		}
		t.Partitions = ps
		c.Topics[i] = t
	}
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Broker returns the broker with id, or nil if there is none.
func (s *Snapshot) Broker(id int32) *Broker {
	for i := range s.Brokers {
		if s.Brokers[i].ID == id {
			return &s.Brokers[i]
		}
	}
	return nil
}

// Topic returns the topic called name, or nil if there is none.
func (s *Snapshot) Topic(name string) *Topic {
	for i := range s.Topics {
		if s.Topics[i].Name == name {
			return &s.Topics[i]
		}
	}
	return nil
}

// Partition returns the partition, or nil if the topic or partition does not exist.
func (s *Snapshot) Partition(topic string, partition int32) *Partition {
	t := s.Topic(topic)
	if t == nil {
		return nil
	}
	for i := range t.Partitions {
		if t.Partitions[i].Partition == partition {
			return &t.Partitions[i]
		}
	}
	return nil
}

// Replica returns broker's replica of the partition, or nil if it has none.
func (p *Partition) Replica(broker int32) *Replica {
	for i := range p.ReplicaLogs {
		if p.ReplicaLogs[i].Broker == broker {
			return &p.ReplicaLogs[i]
		}
	}
	return nil
}

// Apply changes s as e describes and sets s.Seq to e.Seq. Events about brokers,
// topics or replicas s does not know change nothing but Seq; kinds that only
// report (fetch, ack, produce-error) change nothing but Seq. Apply never panics
// on a well-typed event, whatever its fields hold. It changes s's slices in
// place, so a shallow copy of s changes with it: Clone s to keep a state.
func (s *Snapshot) Apply(e Event) {
	s.Seq = e.Seq
	if !e.Time.IsZero() {
		s.Time = e.Time
	}
	if e.Segments != nil { // any of a replica's events may say its segments changed
		if r := s.replica(e); r != nil {
			r.Segments = e.Segments
		}
	}
	if e.Txn != nil || e.Cleaner != nil {
		if r := s.replica(e); r != nil {
			s.applyTxnCleaner(r, e)
		}
	}
	switch e.Kind {
	case KindAppend:
		if r := s.replica(e); r != nil {
			if e.Offsets != nil {
				r.LEO = e.Offsets.LEO
			}
			r.Records = appendWindow(r.Records, e.Records)
			if txnIn(e.Records) {
				MarkAborted(r.Records)
			}
		}
	case KindHW:
		if r := s.replica(e); r != nil && e.Offsets != nil {
			r.HW = e.Offsets.HW
		}
	case KindLEO:
		if r := s.replica(e); r != nil && e.Offsets != nil {
			r.LEO = e.Offsets.LEO
		}
	case KindISR:
		if p := s.Partition(e.Topic, e.Partition); p != nil {
			p.ISR = append([]int32(nil), e.ISR...)
			p.ELR = append([]int32(nil), e.ELR...)
			if e.Leader != nil { // a pipeline's new generation stamp under the same head
				p.LeaderEpoch = e.Leader.LeaderEpoch
			}
		}
	case KindElection:
		if p := s.Partition(e.Topic, e.Partition); p != nil && e.Leader != nil {
			p.Leader = e.Leader.Leader
			p.LeaderEpoch = e.Leader.LeaderEpoch
			if e.ISR != nil {
				p.ISR = append([]int32(nil), e.ISR...)
			}
			p.ELR = append([]int32(nil), e.ELR...)
		}
	case KindEpoch:
		if r := s.replica(e); r != nil && e.Leader != nil {
			r.EpochCache, _ = leaderepoch.Assign(r.EpochCache, EpochEntry{Epoch: e.Leader.LeaderEpoch, StartOffset: e.Leader.StartOffset})
		}
	case KindRecords:
		if r := s.replica(e); r != nil {
			r.Records = mergeWindow(r.Records, e.Records, r.LEO)
			if txnIn(e.Records) {
				MarkAborted(r.Records)
			}
		}
	case KindTruncation:
		if r := s.replica(e); r != nil && e.Offsets != nil {
			to := e.Offsets.LEO
			r.LEO = to
			r.HW = min(r.HW, to)
			cut := make([]TruncatedRecord, len(e.Truncated))
			for i, t := range e.Truncated {
				t.Reason, t.ReasonKey, t.ReasonArgs = e.Message, e.MessageKey, e.MessageArgs
				if v, ok := valueAt(r.Records, t.Offset, t.LeaderEpoch); ok {
					t.Value = v
				}
				cut[i] = t
			}
			r.Records = keepBelow(r.Records, to)
			r.EpochCache, _ = leaderepoch.TruncateFromEnd(r.EpochCache, to)
			r.Truncated = appendWindow(r.Truncated, cut)
		}
	case KindFault:
		s.applyFault(e)
	case KindConfig:
		if e.Config == nil {
			return
		}
		if e.Topic == "" {
			s.Configs = setConfig(s.Configs, *e.Config)
		} else if t := s.Topic(e.Topic); t != nil {
			t.Configs = setConfig(t.Configs, *e.Config)
		}
	case KindClock:
		if e.Clock != nil {
			switch e.Clock.Action {
			case ClockPause:
				s.Paused = true
			case ClockResume:
				s.Paused = false
			case ClockRate:
				s.Rate = e.Clock.Rate
			}
		}
	case KindBroker:
		if b := s.Broker(e.Broker); b != nil {
			if e.BrokerState != "" {
				b.State = e.BrokerState
			}
			if e.Listener != "" {
				b.Listener = e.Listener
			}
		} else if e.Broker != NoBroker && e.BrokerState != "" {
			s.Brokers = append(s.Brokers, Broker{ID: e.Broker, State: e.BrokerState, Listener: e.Listener})
		}
	case KindTopic:
		if e.TopicCreated != nil {
			c := Snapshot{Topics: []Topic{*e.TopicCreated}}
			t := c.Clone().Topics[0]
			if old := s.Topic(t.Name); old != nil {
				// Partitions added (CreatePartitions): the ones it had
				// keep their replicas' logs; the metadata is the new one.
				for i := range t.Partitions {
					if i < len(old.Partitions) && old.Partitions[i].Partition == t.Partitions[i].Partition {
						t.Partitions[i].ReplicaLogs = old.Partitions[i].ReplicaLogs
					}
				}
				*old = t
			} else {
				s.Topics = append(s.Topics, t)
			}
			return
		}
		for i := range s.Topics {
			if s.Topics[i].Name == e.Topic {
				s.Topics = append(s.Topics[:i:i], s.Topics[i+1:]...)
				return
			}
		}
	}
}

func (s *Snapshot) replica(e Event) *Replica {
	if p := s.Partition(e.Topic, e.Partition); p != nil {
		return p.Replica(e.Broker)
	}
	return nil
}

func (s *Snapshot) applyFault(e Event) {
	if e.Fault == nil {
		return
	}
	switch e.Fault.Kind {
	case FaultCrash, FaultPowerLoss:
		if b := s.Broker(e.Broker); b != nil {
			b.State = BrokerCrashed
		}
	case FaultRestart:
		if b := s.Broker(e.Broker); b != nil {
			b.State = BrokerUp
		}
	case FaultCut:
		s.Cuts = append(s.Cuts, *e.Fault)
	case FaultHeal:
		s.Cuts = nil
	}
}

func setConfig(m map[string]string, c ConfigChange) map[string]string {
	if m == nil {
		m = make(map[string]string)
	}
	if c.Value == "" {
		delete(m, c.Key)
	} else {
		m[c.Key] = c.Value
	}
	return m
}

// appendWindow appends add to w and keeps only the newest RecordWindow entries.
// The window slides along its array (w[n:]) instead of being copied, so
// append moves it to a new array only once the spare room is used up: an
// append costs what it adds, not the whole window. The result never aliases
// add.
func appendWindow[T any](w, add []T) []T {
	if n := len(w) + len(add) - RecordWindow; n > 0 {
		d := min(n, len(w))
		clear(w[:d]) // let the dropped entries' strings go
		w, add = w[d:], add[n-d:]
	}
	return append(w, add...)
}

// valueAt returns the value of the record at offset with epoch in rs.
func valueAt(rs []Record, offset int64, epoch int32) (string, bool) {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].Offset == offset && rs[i].LeaderEpoch == epoch {
			return rs[i].Value, true
		}
	}
	return "", false
}

// mergeWindow puts late-decoded records into a replica's window: by
// offset, replacing what was there, only below the replica's LEO (a record
// truncated since is not brought back), keeping the newest RecordWindow. It
// works in place: late values mostly replace records already in the window.
func mergeWindow(w, add []Record, leo int64) []Record {
	for _, r := range add {
		if r.Offset >= leo {
			continue
		}
		i := len(w)
		for i > 0 && w[i-1].Offset >= r.Offset {
			i--
		}
		switch {
		case i < len(w) && w[i].Offset == r.Offset:
			w[i] = r
		case i == 0 && len(w) >= RecordWindow:
			// Older than a full window: it would be dropped below.
		default:
			w = append(w, Record{})
			copy(w[i+1:], w[i:])
			w[i] = r
		}
	}
	if n := len(w) - RecordWindow; n > 0 {
		clear(w[:n])
		w = w[n:]
	}
	return w
}

// applyTxnCleaner keeps a replica event's LSO and cleaner sections: a
// pass's event (RecordsFrom >= 0) replaces the window's records from
// RecordsFrom on with what the log holds after the pass (compaction
// removed some). New
// values, never changed in place: a Clone shares them.
func (s *Snapshot) applyTxnCleaner(r *Replica, e Event) {
	if e.Txn != nil {
		t := *e.Txn
		r.Txn = &t
	}
	if e.Cleaner != nil {
		c := *e.Cleaner
		r.Cleaner = &c
		if c.RecordsFrom >= 0 && e.Kind != KindAppend && e.Kind != KindRecords {
			r.Records = appendWindow(keepBelow(r.Records, c.RecordsFrom), e.Records)
			if txnIn(e.Records) {
				MarkAborted(r.Records)
			}
		}
	}
}

// txnIn reports whether any of rs is transactional.
func txnIn(rs []Record) bool {
	for i := range rs {
		if rs[i].Txn {
			return true
		}
	}
	return false
}

// The batch attributes (Kafka's RecordBatch v2) MarkTxn reads.
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// MarkTxn marks the records of one batch, whose attributes and producer id
// are given, for the lanes: a transactional batch's carry their producer,
// a control batch's record is its marker (commit or abort; its key and
// value are the marker's bytes, which no consumer sees, so they are left
// out).
func MarkTxn(attributes int16, producerID int64, recs []Record) {
	if attributes&attrTransactional == 0 {
		return
	}
	for i := range recs {
		recs[i].Txn, recs[i].ProducerID = true, producerID
		if attributes&attrControl != 0 {
			recs[i].Control = ControlAbort
			if k := recs[i].Key; len(k) >= 4 && k[3] == 1 {
				recs[i].Control = ControlCommit
			}
			recs[i].Key, recs[i].Value, recs[i].KeySize, recs[i].ValueSize, recs[i].Digest = "", "", 0, 0, ""
		}
	}
}

// MarkAborted sets Aborted on the records of rs (a window, by offset) that
// an abort marker later in rs decides: a producer's transactions follow one
// another, so its transactional records since its previous marker belong
// to the transaction its next marker ends.
func MarkAborted(rs []Record) {
	decided := map[int64]string{} // producer → the marker met last, walking back
	for i := len(rs) - 1; i >= 0; i-- {
		r := &rs[i]
		if !r.Txn {
			continue
		}
		if r.Control != "" {
			decided[r.ProducerID] = r.Control
			continue
		}
		r.Aborted = decided[r.ProducerID] == ControlAbort
	}
}

func keepBelow(rs []Record, offset int64) []Record {
	out := rs[:0]
	for _, r := range rs {
		if r.Offset < offset {
			out = append(out, r)
		}
	}
	return out
}

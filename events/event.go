// Package events defines the typed, sequence-numbered events every state change
// in the lab becomes, the Snapshot of the whole visible state they apply to, and
// the Bus that fans them out.
//
// It imports only the standard library (and little of it) and the leader-epoch
// cache rules (package leaderepoch, itself import-free) because the WASM panel
// imports it too: the server and the panel share these types exactly.
package events

// Kind names what changed. The strings are part of the JSON contract.
type Kind string

// The kinds of event. Each kind's doc says which optional fields of Event it sets.
const (
	// KindAppend: a replica (Broker) appended records to its log. Offsets.Base and
	// Offsets.Last are the first and last offset appended, Offsets.LEO the replica's
	// LEO afterwards; Leader.LeaderEpoch is the epoch the records carry; Records
	// holds the records themselves (possibly only the newest few).
	KindAppend Kind = "append"
	// KindFetch: a follower (Broker) fetched from the leader (Leader.Leader).
	// Offsets.Base is the fetch offset, Offsets.HW the leader's HW in the response,
	// Offsets.Last the last offset returned (Base-1 when nothing was returned).
	KindFetch Kind = "fetch"
	// KindHW: a replica's (Broker) high watermark moved to Offsets.HW.
	KindHW Kind = "hw"
	// KindLEO: a replica's (Broker) log end offset moved to Offsets.LEO without an
	// append (for example after recovery).
	KindLEO Kind = "leo"
	// KindISR: the partition's in-sync replica set became ISR and its
	// eligible leader replicas (KIP-966) ELR; ISRChanges says which
	// replicas left or joined and why.
	KindISR Kind = "isr"
	// KindElection: the partition got a new leader: Leader.Leader (-1 when offline),
	// Leader.LeaderEpoch, Leader.PreviousLeader, Leader.Unclean; ISR and ELR are
	// the ISR and ELR after the election; ISRChanges, when the old leader
	// left the ISR with it, says why.
	KindElection Kind = "election"
	// KindEpoch: a replica (Broker) added Leader.LeaderEpoch starting at
	// Leader.StartOffset to its leader-epoch cache.
	KindEpoch Kind = "epoch"
	// KindAck: a produce request completed successfully with Acks; Offsets.Base and
	// Offsets.Last are the offsets assigned, Offsets.HW the HW that released it.
	KindAck Kind = "ack"
	// KindProduceError: a produce request failed with the Kafka error named in
	// Error (for example NOT_ENOUGH_REPLICAS); Acks is what the producer asked for.
	KindProduceError Kind = "produce-error"
	// KindTruncation: a replica (Broker) truncated its log to Offsets.LEO (the new
	// LEO); Truncated lists the records removed; Message names the rule applied.
	KindTruncation Kind = "truncation"
	// KindRecords: the values of records a replica (Broker) appended, decoded
	// after its append event (a follower's appends while the lab clock runs
	// are decoded off its fetch path). Records holds them, Offsets.Base and
	// Offsets.Last their range; only offsets still below the replica's LEO
	// are taken.
	KindRecords Kind = "records"
	// KindFault: a fault was injected or healed; Fault describes it.
	KindFault Kind = "fault"
	// KindConfig: a config changed; Config holds key, value and the previous
	// value. Topic is empty for lab-wide settings.
	KindConfig Kind = "config"
	// KindClock: the lab clock was paused, resumed, stepped or set to run at
	// another rate; Clock describes it.
	KindClock Kind = "clock"
	// KindBroker: a broker's state (BrokerState) or Listener changed, for example
	// after a crash or when the controller fenced it; a broker the Snapshot does
	// not know yet is added.
	KindBroker Kind = "broker"
	// KindTopic: a topic was created (TopicCreated holds it) or deleted
	// (TopicCreated is nil).
	KindTopic Kind = "topic"

	// The message kinds report a request or response crossing a link of the
	// lab's network, so the stage can draw it in flight; Wire says between
	// which nodes and what it carries. They change no state, and the lab
	// publishes them only at a bounded rate (every one while the clock is
	// paused, a sample while it runs).

	// KindFetchRequest: a follower (Broker, Wire.From) sent a Fetch to the
	// leader (Wire.To) for Topic/Partition at Wire.FetchOffset with
	// Wire.LastFetchedEpoch.
	KindFetchRequest Kind = "fetch-request"
	// KindFetchResponse: the leader (Wire.From) answered a follower
	// (Broker, Wire.To) with Wire.Records records and its HW (Wire.HW);
	// Error names the partition's Kafka error, if any.
	KindFetchResponse Kind = "fetch-response"
	// KindProduceRequest: a client (Wire.From NoBroker, Wire.Client its
	// client id) sent Wire.Records records with Acks to the leader (Broker,
	// Wire.To).
	KindProduceRequest Kind = "produce-request"
	// KindClientFetch: a consumer (Wire.To NoBroker, Wire.Client) was
	// answered by Broker (Wire.From) from Wire.FetchOffset, up to the HW
	// (Wire.HW); Wire.Records is how many records lay between the two
	// (the consumer's lag as the answer left; the answer may hold fewer,
	// by its size limits).
	KindClientFetch Kind = "client-fetch"
	// KindHeartbeat: a broker (Broker, Wire.From) heartbeated the controller
	// (Wire.To, node 0).
	KindHeartbeat Kind = "heartbeat"
	// KindAlterPartition: a leader (Broker, Wire.From) asked the controller
	// (Wire.To) to change Topic/Partition's ISR to ISR.
	KindAlterPartition Kind = "alter-partition"
	// KindMetadata: the controller (Wire.From) gave a broker (Broker,
	// Wire.To) metadata version Wire.Version, which carries LeaderAndIsr.
	KindMetadata Kind = "metadata"
	// KindPipelineWrite: a replication.protocol=pipeline member (Broker,
	// Wire.From) forwarded Wire.Records offsets from Wire.FetchOffset to
	// its successor (Wire.To).
	KindPipelineWrite Kind = "pipeline-write"
	// KindPipelineAck: a pipeline member (Broker, Wire.From) told its
	// predecessor (Wire.To) that it and every member after it have the
	// records below Wire.HW.
	KindPipelineAck Kind = "pipeline-ack"
	// KindRaft: a replica (Broker, Wire.From) of a quorum partition sent a
	// Raft message to another (Wire.To); MessageKey and MessageArgs say
	// which (append, its answer, vote, heartbeat, snapshot) and what it
	// carries (term, index, commit), and are its label on the stage.
	KindRaft Kind = "raft"
)

// Unlisted reports whether k is left out of the event list and the
// timeline's steps: messages in flight (drawn on the stage) and late record
// values (they fill in lanes, they change nothing).
func (k Kind) Unlisted() bool { return k.IsMessage() || k == KindRecords }

// IsMessage reports whether k is one of the message kinds: a request or
// response in flight, which changes no state.
func (k Kind) IsMessage() bool {
	switch k {
	case KindFetchRequest, KindFetchResponse, KindProduceRequest, KindClientFetch,
		KindHeartbeat, KindAlterPartition, KindMetadata, KindRaft,
		KindPipelineWrite, KindPipelineAck:
		return true
	}
	return false
}

// Wire is a message kind's link and what the message carries. From and To
// are node ids (0 the controller, 1.. the brokers, NoBroker a client).
// Lost is set when a cut link dropped it on the way.
type Wire struct {
	From             int32  `json:"from"`
	To               int32  `json:"to"`
	Client           string `json:"client,omitempty"`
	FetchOffset      int64  `json:"fetch_offset,omitempty"`
	LastFetchedEpoch int32  `json:"last_fetched_epoch,omitempty"`
	HW               int64  `json:"hw,omitempty"`
	Records          int    `json:"records,omitempty"`
	Version          uint64 `json:"version,omitempty"`
	Lost             bool   `json:"lost,omitempty"`
}

// NoBroker is the Broker (and Leader) value for "none": Kafka's -1.
const NoBroker int32 = -1

// Acks is a producer's acks setting as Kafka spells it: "0", "1" or "all".
type Acks string

// The acks settings.
const (
	AcksNone   Acks = "0"
	AcksLeader Acks = "1"
	AcksAll    Acks = "all"
)

// AcksOf spells a produce request's acks field as Kafka's configs do:
// 0, 1, and all for -1.
func AcksOf(acks int16) Acks {
	switch acks {
	case 0:
		return AcksNone
	case 1:
		return AcksLeader
	}
	return AcksAll
}

// Valid reports whether a is one of "0", "1" or "all"; the empty Acks is not valid.
func (a Acks) Valid() bool { return a == AcksNone || a == AcksLeader || a == AcksAll }

// Event is one state change. Seq and Time are set by Bus.Publish; Broker is
// NoBroker and Topic empty when the event is not about one broker or partition.
// Payload fields are nil/empty unless the Kind's documentation says it sets them.
type Event struct {
	Seq       uint64 `json:"seq"`
	Time      Time   `json:"time"`
	Kind      Kind   `json:"kind"`
	Broker    int32  `json:"broker"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	// Message is a short note in English (for logs, the JSON API and old
	// clients); MessageKey and MessageArgs are the same note as an i18n
	// catalog key and its arguments, so a page shows it in its reader's
	// language (see Render). Message is the key's English text.
	Message     string   `json:"message,omitempty"`
	MessageKey  string   `json:"message_key,omitempty"`
	MessageArgs []string `json:"message_args,omitempty"`

	Offsets      *Offsets          `json:"offsets,omitempty"`
	Leader       *Leadership       `json:"leader,omitempty"`
	ISR          []int32           `json:"isr,omitempty"`
	ELR          []int32           `json:"elr,omitempty"`
	Error        string            `json:"error,omitempty"`
	Acks         Acks              `json:"acks,omitempty"`
	Records      []Record          `json:"records,omitempty"`
	Truncated    []TruncatedRecord `json:"truncated,omitempty"`
	Fault        *Fault            `json:"fault,omitempty"`
	Config       *ConfigChange     `json:"config,omitempty"`
	Clock        *ClockChange      `json:"clock,omitempty"`
	BrokerState  BrokerState       `json:"broker_state,omitempty"`
	Listener     string            `json:"listener,omitempty"`
	TopicCreated *Topic            `json:"topic_created,omitempty"`
	Wire         *Wire             `json:"wire,omitempty"`
	ISRChanges   []ISRChange       `json:"isr_changes,omitempty"`
	// Order is the sequence the reporting replica gave the event under its
	// lock, from one counter per process: one replica's events carry
	// increasing Orders in the order it made them, and are published in
	// that order (checkers verify it). 0 for events not made by a replica.
	// Not part of the JSON contract: only checkers in the same process read it.
	Order uint64 `json:"-"`
	// Segments, set on a replica's event when its log's segments changed
	// since its last event (a roll, a truncation or retention deleting
	// some, a restart), is every segment's base offset, oldest first.
	Segments []int64 `json:"segments,omitempty"`
	// Txn, set on a replica's event when its last stable offset changed
	// (its log holds transactional batches), is the new LSO.
	Txn *Txn `json:"txn,omitempty"`
	// Cleaner, set on a compacted replica's event when its sections or its
	// dirty ratio changed, and on the log cleaner's event (a pass that
	// ran), whose Records are then every record the log holds from
	// Cleaner.RecordsFrom on (the window after the pass).
	Cleaner *Cleaner `json:"cleaner,omitempty"`
}

// Txn is what a replica's log says of transactions for the lanes.
type Txn struct {
	// LSO is the last stable offset: the first offset of the oldest
	// transaction still open, or the HW when that is lower (Kafka's
	// lastStableOffset). read_committed consumers read only below it.
	LSO int64 `json:"lso"`
}

// Cleaner is a compacted log's sections: the clean section is [log start,
// FirstDirty), compacted by the cleaner (one record per key); the rest is
// dirty, records appended since. DirtyRatio is the dirty share of the
// cleanable bytes (the sealed segments below the HW) now: a pass runs once
// it reaches min.cleanable.dirty.ratio. RecordsFrom is where a pass's
// event's window starts, -1 on any other event.
type Cleaner struct {
	FirstDirty  int64   `json:"first_dirty"`
	DirtyRatio  float64 `json:"dirty_ratio"`
	RecordsFrom int64   `json:"records_from"`
}

// The transaction markers a control batch's record carries (Record.Control).
const (
	ControlCommit = "commit"
	ControlAbort  = "abort"
)

// ISRCause says why a replica left or joined an ISR (or its ELR). The
// replication rules (a leader's proposal) or the controller set it where
// they decide the change; the text layer only translates it.
type ISRCause string

// The ISR causes.
const (
	// ISRLagged: the leader dropped the replica: it had not caught up to
	// the leader's LEO for LagMs, more than replica.lag.time.max.ms
	// (MaxLagMs).
	ISRLagged ISRCause = "lagged"
	// ISRCaughtUp: the leader took the replica back: its LEO reached
	// Offset, at or past the HW and the start of the leader's epoch.
	ISRCaughtUp ISRCause = "caught-up"
	// ISRSessionExpired: the controller fenced the replica's broker, whose
	// heartbeats stopped for longer than its session timeout.
	ISRSessionExpired ISRCause = "session-expired"
	// ISRFenced: the controller fenced the replica's broker on request
	// (the lab does when a broker crashes, so it fails over at once).
	ISRFenced ISRCause = "fenced"
	// ISRRestarted: the replica's broker registered again as a new
	// incarnation with a new broker epoch (KIP-903): it earns its place
	// back by catching up.
	ISRRestarted ISRCause = "restarted"
	// ISRUncleanRestart: the replica's broker came back from an unclean
	// shutdown and may have lost acknowledged records, so it left the ISR
	// and the ELR (KIP-966).
	ISRUncleanRestart ISRCause = "unclean-restart"
	// ISRELRCleared: the ISR reached min.insync.replicas again, so the
	// replica left the ELR (KIP-966).
	ISRELRCleared ISRCause = "elr-cleared"
)

// ISRChange is one replica's move in an ISR change: Broker left (Joined
// false) or joined the ISR for Cause. LagMs and MaxLagMs are set for
// ISRLagged, Offset for ISRCaughtUp; they are 0 otherwise. ToELR is set
// when a replica leaving the ISR joined the ELR (KIP-966).
type ISRChange struct {
	Cause    ISRCause `json:"cause"`
	Broker   int32    `json:"broker"`
	Joined   bool     `json:"joined,omitempty"`
	ToELR    bool     `json:"to_elr,omitempty"`
	LagMs    int64    `json:"lag_ms,omitempty"`
	MaxLagMs int64    `json:"max_lag_ms,omitempty"`
	Offset   int64    `json:"offset,omitempty"`
}

// Offsets carries the offsets an event is about; which ones are meaningful
// depends on the event's Kind.
type Offsets struct {
	Base int64 `json:"base"`
	Last int64 `json:"last"`
	LEO  int64 `json:"leo"`
	HW   int64 `json:"hw"`
}

// Leadership carries leader and leader-epoch facts of election, epoch, fetch and
// append events. Leader and PreviousLeader are NoBroker when there is none.
type Leadership struct {
	Leader         int32 `json:"leader"`
	PreviousLeader int32 `json:"previous_leader"`
	LeaderEpoch    int32 `json:"leader_epoch"`
	StartOffset    int64 `json:"start_offset"`
	Unclean        bool  `json:"unclean,omitempty"`
	// LastKnown marks the election of a partition's last known leader
	// (Kafka 4.1, KIP-966: its ISR and ELR were empty); it is Unclean too.
	LastKnown bool `json:"last_known,omitempty"`
}

// Record is one record as the UI shows it. Key and Value are shown as text,
// each at most ShownBytes long (see Shown): a record may hold a megabyte,
// and every event, snapshot and page carrying it is read by a person.
// KeySize and ValueSize are the whole key's and value's lengths in bytes
// when Key or Value holds only their beginning (0 when whole); Digest is
// then the whole record's Digest, so it can still be compared.
type Record struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value"`
	KeySize     int    `json:"key_size,omitempty"`
	ValueSize   int    `json:"value_size,omitempty"`
	Digest      string `json:"digest,omitempty"`
	// Txn marks a transactional batch's records (and its markers), of
	// ProducerID.
	Txn        bool  `json:"txn,omitempty"`
	ProducerID int64 `json:"producer_id,omitempty"`
	// Control is set on a control batch's record, a transaction marker:
	// ControlCommit or ControlAbort (its Key and Value are empty: consumers
	// never see it).
	Control string `json:"control,omitempty"`
	// Aborted marks a record of a transaction its producer aborted (the
	// abort marker is in the window): read_committed consumers skip it.
	// Snapshot.Apply sets it (MarkAborted); events leave it unset.
	Aborted bool `json:"aborted,omitempty"`
}

// ShownBytes is the most bytes of a record's key and of its value that a
// Record carries: an event or a snapshot stays small however large the
// values are (a lane's cell shows 5 characters, a label 200 bytes).
const ShownBytes = 256

// Cut reports whether Key or Value holds only the beginning of the
// record's key or value.
func (r *Record) Cut() bool { return r.KeySize > 0 || r.ValueSize > 0 }

// TruncatedRecord is a record a truncation removed: where it was, its epoch and
// a Digest of its content, so a learner can tell whether it came back. In a
// Snapshot, Value is the record's value (when the replica's record window
// still held it) and Reason the truncation event's Message: the rule
// applied and why (ReasonKey and ReasonArgs its MessageKey and
// MessageArgs); events leave them empty.
type TruncatedRecord struct {
	Offset      int64    `json:"offset"`
	LeaderEpoch int32    `json:"leader_epoch"`
	Digest      string   `json:"digest"`
	Value       string   `json:"value,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	ReasonKey   string   `json:"reason_key,omitempty"`
	ReasonArgs  []string `json:"reason_args,omitempty"`
}

// FaultKind names an injected fault or its repair.
type FaultKind string

// The fault kinds.
const (
	FaultCrash     FaultKind = "crash"      // process stops; flushed data survives
	FaultPowerLoss FaultKind = "power-loss" // process stops; unflushed data is lost
	FaultRestart   FaultKind = "restart"    // a stopped broker starts and recovers
	FaultCut       FaultKind = "cut"        // network link From→To (and back unless OneWay) cut
	FaultHeal      FaultKind = "heal"       // all cut links restored
	// FaultDiskFailure: the broker's disk fails every write and fsync from
	// now on; its log dir goes offline and the broker halts.
	FaultDiskFailure FaultKind = "disk-failure"
)

// Fault describes a fault event. From and To are the link's brokers for cut;
// Broker on the Event is the broker for crash, power-loss and restart.
type Fault struct {
	Kind   FaultKind `json:"kind"`
	From   int32     `json:"from,omitempty"`
	To     int32     `json:"to,omitempty"`
	OneWay bool      `json:"oneway,omitempty"`
}

// ConfigChange is a config event's key, new value and previous value. An empty
// Value means the key was unset (back to its default); an empty Previous means it
// was unset before.
type ConfigChange struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Previous string `json:"previous,omitempty"`
}

// ClockAction names what happened to the lab clock.
type ClockAction string

// The clock actions.
const (
	ClockPause  ClockAction = "pause"
	ClockResume ClockAction = "resume"
	ClockStep   ClockAction = "step"
	ClockRate   ClockAction = "rate"
)

// ClockChange is a clock event: the action and, for a step, how far
// (StepMs); for a rate change, the new rate (Rate: lab seconds per real
// second, 0.25, 1 or 4).
type ClockChange struct {
	Action ClockAction `json:"action"`
	StepMs int64       `json:"step_ms,omitempty"`
	Rate   float64     `json:"rate,omitempty"`
}

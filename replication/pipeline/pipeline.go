// Package pipeline holds HDFS's write-pipeline rules for one partition, for
// topics created with replication.protocol=pipeline. Like the ISR rules
// (package replication) and the Raft node (replication/quorum) it is pure:
// no goroutines, no clock, no disk, no network; its owner passes the lab
// time in, applies what Ready says and sends the messages it returns.
//
// # The pipeline
//
// A partition's pipeline is an ordered list of its replicas, the head first,
// and a generation stamp (Pipeline). The head takes the produce: it appends
// the batch, stamped with the generation stamp as the batch's partition
// leader epoch, and forwards it to the second member, which appends and
// forwards to the third, and so on (Write). The tail answers with an Ack,
// which flows back member by member to the head. Since every member appends
// before it forwards, the tail having a record means every member has it:
// a record is committed (below the HW) once the tail has acknowledged it,
// and only then is an acks=all produce answered. acks=all is refused with
// NOT_ENOUGH_REPLICAS while the pipeline is shorter than
// min.insync.replicas, as the ISR refuses it.
//
// # Recovery
//
// A member that stops, or a link that is cut, breaks the pipeline: a
// forward that cannot be delivered is reported at once (an Ack naming the
// unreachable member flows back to the head), and so is a successor that
// stays silent: every member with a successor waits for its acks, the head
// replica.lag.time.max.ms of lab time and each member after it less (member
// i of n, TimeoutMs×(n-1-i)/(n-1)), and one that times out names its
// successor. The head reports the failure (Ready.Failure) and the pipeline
// is rebuilt from the survivors under a new generation stamp
// (Pipeline.Without). Under the new stamp the head first runs HDFS's
// pipeline recovery: a Recover write goes down the pipeline carrying the
// shortest survivor's LEO, and its Ack brings that length back; every
// survivor truncates above it (the records beyond it were never
// acknowledged), records the new stamp in its leader-epoch cache (its
// replica's generation stamp, as a datanode renames its block's meta file),
// and writing resumes.
//
// A replica whose stamp is not the head's when the recovery reaches it
// missed a generation (it was down, or cut off, while the pipeline was
// rebuilt without it): like a datanode's replica with an older generation
// stamp, it is discarded (its log truncated to empty, starting again at the
// head's log start offset) and rebuilt by copying from its predecessor; the
// cut is made when the copy's first write arrives, so a copy that cannot
// come (a cut link) destroys nothing, and a stamp that comes before the
// copy judges the replica again by the records it still holds. A replica
// that comes back joins at
// the tail under yet another stamp (Pipeline.Rejoin). Writes flow through
// it at once, but it holds every acknowledged record only once the tail
// has acknowledged the recovery's length (Ready.CaughtUp): until the head
// says so, the controller keeps it out of the ISR, so it never heads the
// pipeline or keeps it alone.
//
// # Who is blamed
//
// As in HDFS, where each datanode's ack carries a status per datanode down
// the pipeline and the client removes the first one marked bad, the member
// taken out is the first one after the fault that the members before it
// can name. The shrinking timeouts make that the right one for a silence:
// members after the fault hear their successors and stay quiet, the member
// just before it times out first, before anyone further up gives up on its
// own successor, and its ack naming its silent successor reaches the head
// in time. What no member can tell apart is a successor that stopped from
// the link to it cut one way or the other: a one-way cut of the acks from
// member k+1 to member k takes out k+1, and the head's own timeout (it
// fires only when nothing came back, not even a report) takes out its
// successor. Either way the rebuilt pipeline no longer uses that link.
//
// # Who rebuilds the pipeline
//
// The controller keeps each partition's pipeline and stamp, as HDFS's
// NameNode hands out generation stamps: the pipeline is the partition's ISR
// in order (the head is its leader) and the stamp is its leader epoch, so
// Metadata, the lanes and every fencing rule see the pipeline in Kafka's
// own fields. A single owner that makes every stamp makes each stamp name
// exactly one pipeline: two members that both saw a failure cannot build two
// pipelines, a stale head's writes are refused by any member that has a
// newer stamp, and a crashed broker is taken out by the same fencing that
// takes it out of an ISR. The controller also knows what no member does:
// which members are complete (the ISR) and which still joining, and which
// broker came back from an unclean stop (under the kraft-elr rule a last
// member back from one does not head alone; the longest log does, once
// every replica is back, as KIP-966 recovers an ISR).
package pipeline

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// NoMember is a missing member (no head, no failed member); Kafka's -1.
const NoMember int32 = -1

// Pipeline is a partition's pipeline as the controller keeps it: Members in
// order, the head first, and the generation stamp. The zero Pipeline has no
// members.
type Pipeline struct {
	Members []int32
	Stamp   int32
}

// Head returns the first member; NoMember for an empty pipeline.
func (p Pipeline) Head() int32 {
	if len(p.Members) == 0 {
		return NoMember
	}
	return p.Members[0]
}

// Next returns the member after id; NoMember for the tail or a non-member.
func (p Pipeline) Next(id int32) int32 {
	if i := slices.Index(p.Members, id); i >= 0 && i+1 < len(p.Members) {
		return p.Members[i+1]
	}
	return NoMember
}

// Prev returns the member before id; NoMember for the head or a non-member.
func (p Pipeline) Prev(id int32) int32 {
	if i := slices.Index(p.Members, id); i > 0 {
		return p.Members[i-1]
	}
	return NoMember
}

// Without returns the pipeline rebuilt from the survivors when failed is
// taken out: the same order without it, under the next stamp. ok is false
// when failed is not a member, or is the last one (the last member stays,
// as an ISR's last member does: the partition is offline until it is back,
// since it alone has every acknowledged record).
func (p Pipeline) Without(failed int32) (next Pipeline, ok bool) {
	if !slices.Contains(p.Members, failed) || len(p.Members) == 1 {
		return p, false
	}
	return Pipeline{Members: slices.DeleteFunc(slices.Clone(p.Members), func(m int32) bool { return m == failed }), Stamp: p.Stamp + 1}, true
}

// Rejoin returns the pipeline with id added at the tail under the next
// stamp; ok is false when id is a member already.
func (p Pipeline) Rejoin(id int32) (next Pipeline, ok bool) {
	if slices.Contains(p.Members, id) {
		return p, false
	}
	return Pipeline{Members: append(slices.Clone(p.Members), id), Stamp: p.Stamp + 1}, true
}

// CheckProduce says whether a produce with acks may be taken by a pipeline
// of members with min.insync.replicas minISR: acks=all (-1) needs at least
// minISR members (NOT_ENOUGH_REPLICAS otherwise).
func (p Pipeline) CheckProduce(acks int16, minISR int) error {
	if acks == -1 && len(p.Members) < minISR {
		return fmt.Errorf("%w: the pipeline %v has %d members, min.insync.replicas is %d", kerr.NotEnoughReplicas, p.Members, len(p.Members), minISR)
	}
	return nil
}

// Kind is a pipeline message's kind.
type Kind uint8

// The pipeline's messages.
const (
	// KindWrite carries records down the pipeline (or, with Recover set,
	// the recovery's length agreement).
	KindWrite Kind = iota + 1
	// KindAck flows back up: every member from the sender to the tail has
	// the records below Acked.
	KindAck
)

// String names the kind as the lab's message events do.
func (k Kind) String() string {
	switch k {
	case KindWrite:
		return "pipeline-write"
	case KindAck:
		return "pipeline-ack"
	}
	return fmt.Sprintf("pipeline-kind-%d", uint8(k))
}

// Message is one pipeline message between neighbouring members.
type Message struct {
	Kind     Kind
	From, To int32
	// Stamp is the sender's generation stamp; Members the pipeline it
	// belongs to (a write's receiver adopts a newer one from it).
	Stamp   int32
	Members []int32

	// Recover marks the first write of a stamp: the survivors agree on
	// Length, the shortest LEO among them so far. HeadStamp is the head's
	// replica stamp (survivors have the same one; any other is discarded)
	// and LogStart the head's log start offset (where a discarded replica
	// starts again).
	Recover   bool
	HeadStamp int32
	Length    int64
	LogStart  int64
	// HW is the head's high watermark: every member had the records below
	// it, so a survivor whose log ends below it lost some (power loss) and
	// is rebuilt like a stale one rather than lowering Length.
	HW int64
	// BaseOffset and EndOffset bound a write's records: [BaseOffset,
	// EndOffset). Records holds them as record batches; the owner fills it
	// from its log before sending (the rules never see record bytes).
	BaseOffset, EndOffset int64
	Records               []byte

	// LEO is an ack sender's log end offset (where its predecessor forwards
	// from), Acked what it and every member after it have.
	LEO, Acked int64
	// Failed, in an ack, is a member the pipeline could not reach;
	// NoMember when none.
	Failed int32
}

// Truncation is a log change Ready asks for.
type Truncation struct {
	// ToOffset is the new LEO; with Discard set the log is emptied and
	// starts again at ToOffset.
	ToOffset int64
	Discard  bool
	// StaleStamp and Stamp, for a discard, are the replica's old
	// generation stamp and the pipeline's; Length, for a recovery's cut,
	// is the agreed length.
	StaleStamp, Stamp int32
	// BelowHW, for a discard of a replica with the pipeline's stamp whose
	// log ended below the head's HW, is that HW; -1 otherwise.
	BelowHW int64
}

// Failure is the head's request to the controller: rebuild the pipeline of
// Stamp without Failed.
type Failure struct {
	Stamp  int32
	Failed int32
}

// Ready is what the owner must do, in order: truncate the log, append the
// received records (Append, already stamped batches), record that the
// generation stamp Stamp starts at StampStart, take HighWatermark (HWChanged: it
// rose), send Messages (writes filled with their records from the log), and
// report Failure.
type Ready struct {
	Truncation     *Truncation
	Append         *Message
	StampStart     int64 // -1: nothing to record
	Stamp          int32
	HighWatermark  int64
	HWChanged      bool
	Messages       []Message
	Failure        *Failure
	RecoveryLength int64 // the agreed length when this drain finished a recovery; -1 otherwise
	// CaughtUp is set, on the head, once per stamp when every member has
	// every record the recovery agreed on (the tail acknowledged them): a
	// member that joined at the tail holds every acknowledged record and
	// may now head, which the controller learns from it.
	CaughtUp bool
}

// Empty reports whether there is nothing to do.
func (rd Ready) Empty() bool {
	return rd.Truncation == nil && rd.Append == nil && rd.StampStart < 0 && len(rd.Messages) == 0 && rd.Failure == nil && !rd.CaughtUp
}

// LogState is what a replica's log holds when its Member is made. Stamp is
// the replica's generation stamp: its leader-epoch cache's last epoch (-1
// for none).
type LogState struct {
	LogStartOffset, LogEndOffset, HighWatermark int64
	Stamp                                       int32
}

// Config configures a Member.
type Config struct {
	// ID is this replica's broker id.
	ID int32
	// TimeoutMs is how long the head waits for the tail's ack of a write
	// before it reports the pipeline broken (replica.lag.time.max.ms).
	TimeoutMs int64
	// Unclean says the log was opened after an unclean shutdown: it may
	// have lost acknowledged records to power loss, so until it is copied
	// again it takes no part in a recovery's length agreement (HDFS's
	// restarted replica, RWR, left out when live ones are there) and is
	// rebuilt instead.
	Unclean bool
}

// Member is one replica's side of the pipeline. It is not safe for
// concurrent use: its owner serializes calls (the broker's replica lock).
type Member struct {
	cfg Config
	pl  Pipeline
	log LogState

	// recovered is set once the recovery of pl.Stamp finished here.
	recovered bool
	// recovery is the Recover write this member sends its successor
	// until the recovery's ack comes back; recoveryOut is set while one is
	// on its way (a refused one is sent again after the next Tick).
	recovery    *Message
	recoveryOut bool
	// hold stops forwarding until the next Tick (after a rewind).
	hold bool
	// discardTo, when not -1, is where a discarded replica's log starts
	// again once the copy's first write arrives; its records stay until
	// then. staleStamp is the stamp it had, kept the log it still holds
	// (what a later stamp's recovery judges it by, see adopt).
	discardTo  int64
	staleStamp int32
	belowHW    int64 // Truncation.BelowHW of the pending discard
	// unclean: Config.Unclean, until the replica is copied again.
	unclean bool
	kept    LogState
	// length is the agreed length of this stamp's recovery (-1 before it
	// finished); caughtUp is set once the head reported every member has it.
	length   int64
	caughtUp bool
	// stampAt is the agreed length at which this replica takes the
	// pipeline's stamp; -1 once it has.
	stampAt int64
	// nextLEO is the successor's LEO as its last ack said; -1 unknown.
	nextLEO int64
	// sent is the end of what was forwarded to the successor.
	sent int64
	// downAcked is what the successor acknowledged; ackedUp what this
	// member last acknowledged to its predecessor.
	downAcked, ackedUp int64
	// waitSinceMs is when the successor's silence began (timeoutMs): the
	// first write (or recovery) it has not acknowledged went out, or its
	// last ack that acknowledged more came; -1 when nothing waits.
	waitSinceMs int64
	// failed is a member reported unreachable in this stamp; reportedMs
	// when this member last reported a failure (-1 never): the head to the
	// controller, any other member in an ack to its predecessor.
	failed     int32
	reportedMs int64
	nowMs      int64

	rd Ready
}

// New returns the Member of replica cfg.ID with its log as it is, in no
// pipeline yet (SetPipeline gives it one).
func New(cfg Config, log LogState, nowMs int64) *Member {
	m := &Member{cfg: cfg, log: log, nowMs: nowMs, pl: Pipeline{Stamp: -1}, discardTo: -1, belowHW: -1, unclean: cfg.Unclean}
	m.resetStamp()
	return m
}

func (m *Member) resetStamp() {
	m.recovered, m.recovery, m.recoveryOut, m.stampAt, m.hold = false, nil, false, -1, false
	m.length, m.caughtUp = -1, false
	m.nextLEO, m.sent, m.downAcked, m.ackedUp = -1, -1, -1, -1
	m.waitSinceMs, m.failed, m.reportedMs = -1, NoMember, -1
	m.rd = Ready{StampStart: -1, RecoveryLength: -1}
}

// Status is a member's view of its partition.
type Status struct {
	Pipeline Pipeline
	// IsHead reports whether this replica takes produce requests: it heads
	// the pipeline and its recovery finished.
	IsHead                                      bool
	Recovered                                   bool
	LogStartOffset, LogEndOffset, HighWatermark int64
	ReplicaStamp                                int32
	WaitingSinceMs                              int64
}

// Status returns the member's view.
func (m *Member) Status() Status {
	return Status{Pipeline: Pipeline{Members: slices.Clone(m.pl.Members), Stamp: m.pl.Stamp},
		IsHead: m.pl.Head() == m.cfg.ID && m.recovered, Recovered: m.recovered,
		LogStartOffset: m.log.LogStartOffset, LogEndOffset: m.log.LogEndOffset, HighWatermark: m.log.HighWatermark,
		ReplicaStamp: m.log.Stamp, WaitingSinceMs: m.waitSinceMs}
}

// SetPipeline gives the member the controller's pipeline. A newer stamp
// starts a new generation: the head starts its recovery, the others wait
// for its Recover write. An older or equal stamp changes nothing (a write
// may have brought the pipeline first).
func (m *Member) SetPipeline(p Pipeline) {
	if p.Stamp <= m.pl.Stamp {
		return
	}
	m.adopt(p)
}

func (m *Member) adopt(p Pipeline) {
	m.pl = Pipeline{Members: slices.Clone(p.Members), Stamp: p.Stamp}
	m.resetStamp()
	if m.discardTo >= 0 {
		// A discard whose copy never came: the replica still holds its
		// records, and the new stamp's recovery judges it by them (it may
		// even head, as the longest log after an unclean stop of every
		// member); taken as empty, it would agree on a length of nothing
		// and have every survivor cut its acknowledged records.
		m.log, m.discardTo = m.kept, -1
	}
	if m.pl.Head() != m.cfg.ID {
		return
	}
	if next := m.pl.Next(m.cfg.ID); next != NoMember {
		m.recovery = &Message{Kind: KindWrite, From: m.cfg.ID, To: next, Stamp: m.pl.Stamp, Members: slices.Clone(m.pl.Members),
			Recover: true, HeadStamp: m.log.Stamp, Length: m.log.LogEndOffset, LogStart: m.log.LogStartOffset, HW: m.log.HighWatermark}
		m.waitSinceMs = m.nowMs // the recovery too must be answered in time
		return
	}
	m.finishRecovery(m.log.LogEndOffset) // alone: nothing to agree on
}

// CheckProduce says whether this replica may take a produce with acks: it
// must be the recovered head (NOT_LEADER_OR_FOLLOWER otherwise), and
// acks=all needs a pipeline of minISR members.
func (m *Member) CheckProduce(acks int16, minISR int) error {
	if m.pl.Head() != m.cfg.ID || !m.recovered {
		return fmt.Errorf("%w: broker %d does not head the pipeline %v (stamp %d)", kerr.NotLeaderForPartition, m.cfg.ID, m.pl.Members, m.pl.Stamp)
	}
	return m.pl.CheckProduce(acks, minISR)
}

// AckError is the answer to an acks=all produce whose records the HW has
// passed: NOT_ENOUGH_REPLICAS_AFTER_APPEND when the pipeline shrank below
// minISR members while it waited (fewer copies than the producer asked
// for, as Kafka answers when the ISR shrank), else nil.
func (m *Member) AckError(acks int16, minISR int) error {
	if acks == -1 && len(m.pl.Members) < minISR {
		return fmt.Errorf("%w: the pipeline %v has %d members, min.insync.replicas is %d", kerr.NotEnoughReplicasAfterAppend, m.pl.Members, len(m.pl.Members), minISR)
	}
	return nil
}

// Produced tells the head that it appended records up to leo (stamped with
// the pipeline's stamp); they are forwarded at the next Ready.
func (m *Member) Produced(leo int64) {
	m.log.LogEndOffset = max(m.log.LogEndOffset, leo)
	if m.waitSinceMs < 0 && m.log.LogEndOffset > m.log.HighWatermark {
		m.waitSinceMs = m.nowMs
	}
	m.settleHW()
}

// LogChanged tells the member what its log really holds after Ready was
// applied (an append that failed, a truncation that ended elsewhere,
// retention moving the log start).
func (m *Member) LogChanged(logStart, leo int64) {
	if m.discardTo >= 0 {
		return // the log still holds the records being discarded
	}
	m.log.LogStartOffset, m.log.LogEndOffset = logStart, leo
	m.sent = min(m.sent, leo)
}

// Tick shows the member the time. A member whose successor stays silent
// for its timeout (timeoutMs) while a write (or the recovery) waits for its
// ack names the successor: the head reports it to the controller, any other
// member sends its predecessor an ack naming it; each reports again every
// timeout after while the pipeline stays broken.
func (m *Member) Tick(nowMs int64) {
	m.nowMs = max(m.nowMs, nowMs)
	m.hold = false
	if m.nowMs < m.timeoutAtMs() {
		return
	}
	failed := m.failed
	if failed == NoMember {
		// Silence: nothing said who. The successor, or the link to it
		// either way, is the nearest fault this member can name: every
		// member after it has a shorter timeout, so had the silence
		// begun further down, an ack naming that member would have come.
		failed = m.pl.Next(m.cfg.ID)
	}
	if m.pl.Head() == m.cfg.ID {
		m.report(failed)
		return
	}
	m.failed, m.reportedMs = failed, m.nowMs
	m.sent, m.nextLEO = -1, -1
	if prev := m.pl.Prev(m.cfg.ID); prev != NoMember {
		m.rd.Messages = append(m.rd.Messages, m.ack(prev))
	}
}

// timeoutMs is how long this member waits for its successor's ack:
// replica.lag.time.max.ms on the head, shrinking down the pipeline in
// equal parts (member i of n waits TimeoutMs×(n-1-i)/(n-1)), so the
// member just before a silent member or link times out first and names
// it, before anyone further up blames its own successor, as each HDFS
// datanode times out on its mirror's acks and reports the mirror in its
// own ack. 0 for the tail and a pipeline of one: no successor.
func (m *Member) timeoutMs() int64 {
	n := int64(len(m.pl.Members))
	i := int64(slices.Index(m.pl.Members, m.cfg.ID))
	if i < 0 || i >= n-1 {
		return 0
	}
	return max(1, m.cfg.TimeoutMs*(n-1-i)/(n-1))
}

// timeoutAtMs is when the successor's silence is due to be reported;
// math.MaxInt64 for never.
func (m *Member) timeoutAtMs() int64 {
	to := m.timeoutMs()
	if to == 0 || m.waitSinceMs < 0 {
		return 1<<63 - 1
	}
	at := m.waitSinceMs + to
	if m.reportedMs >= 0 {
		at = max(at, m.reportedMs+to)
	}
	return at
}

// NextTickMs is when Tick has something to decide (now, while forwarding
// is held back); math.MaxInt64 for never.
func (m *Member) NextTickMs() int64 {
	if m.hold {
		return m.nowMs
	}
	return m.timeoutAtMs()
}

func (m *Member) report(failed int32) {
	m.reportedMs = m.nowMs
	m.rd.Failure = &Failure{Stamp: m.pl.Stamp, Failed: failed}
}

// Unreachable tells the member that a message to id could not be
// delivered (a cut link, a stopped broker). A successor that cannot be
// reached is reported: by the head to the controller, by anyone else in an
// ack to its predecessor. What was sent to it is forgotten.
//
// During a recovery an unreachable successor is only retried (after the
// next Tick): brokers that start together (a lab opened on its data) are
// not all running at the same instant, and one that stays unreachable is
// reported by this member's timeout.
func (m *Member) Unreachable(id int32) {
	if id != m.pl.Next(m.cfg.ID) {
		return // the predecessor: its timeout names this member, or the controller fences it
	}
	if !m.recovered {
		m.Refused(id)
		return
	}
	m.sent, m.nextLEO = -1, -1
	if m.failed == NoMember {
		m.failed = id
	}
	if m.pl.Head() == m.cfg.ID {
		if m.reportedMs < 0 || m.nowMs-m.reportedMs >= m.cfg.TimeoutMs {
			m.report(id)
		}
		return
	}
	m.reportedMs = m.nowMs
	if prev := m.pl.Prev(m.cfg.ID); prev != NoMember {
		m.rd.Messages = append(m.rd.Messages, m.ack(prev))
	}
}

// Refused tells the member that id received a message and refused it (it
// has not applied the pipeline's metadata yet, or does not host the
// partition yet): the message is sent again after the next Tick, from what
// id last acknowledged. A member that keeps refusing is named by this
// member's timeout.
func (m *Member) Refused(id int32) {
	if id != m.pl.Next(m.cfg.ID) {
		return
	}
	m.hold, m.recoveryOut = true, false
	m.sent = -1
}

// Step hands the member a message its neighbour sent. A message of an
// older stamp is refused with FENCED_LEADER_EPOCH (its sender is a stale
// pipeline's member); a write of a newer stamp brings its pipeline along.
func (m *Member) Step(msg Message) error {
	if msg.To != m.cfg.ID {
		return fmt.Errorf("%w: pipeline message for %d reached %d", kerr.InvalidRequest, msg.To, m.cfg.ID)
	}
	if msg.Stamp < m.pl.Stamp {
		return fmt.Errorf("%w: generation stamp %d is older than %d", kerr.FencedLeaderEpoch, msg.Stamp, m.pl.Stamp)
	}
	switch msg.Kind {
	case KindWrite:
		if msg.Stamp > m.pl.Stamp {
			if !slices.Contains(msg.Members, m.cfg.ID) {
				return fmt.Errorf("%w: broker %d is not in the pipeline %v", kerr.NotLeaderForPartition, m.cfg.ID, msg.Members)
			}
			m.adopt(Pipeline{Members: msg.Members, Stamp: msg.Stamp})
		}
		if msg.From != m.pl.Prev(m.cfg.ID) {
			return fmt.Errorf("%w: write from %d, the predecessor of %d in %v is %d", kerr.InvalidRequest, msg.From, m.cfg.ID, m.pl.Members, m.pl.Prev(m.cfg.ID))
		}
		if msg.Recover {
			m.stepRecover(msg)
		} else {
			m.stepWrite(msg)
		}
	case KindAck:
		if msg.Stamp > m.pl.Stamp {
			return fmt.Errorf("%w: ack of generation stamp %d reached stamp %d", kerr.UnknownLeaderEpoch, msg.Stamp, m.pl.Stamp)
		}
		if msg.From != m.pl.Next(m.cfg.ID) {
			return fmt.Errorf("%w: ack from %d, the successor of %d in %v is %d", kerr.InvalidRequest, msg.From, m.cfg.ID, m.pl.Members, m.pl.Next(m.cfg.ID))
		}
		m.stepAck(msg)
	default:
		return fmt.Errorf("%w: pipeline message kind %d", kerr.InvalidRequest, msg.Kind)
	}
	return nil
}

// stepRecover takes part in the length agreement: a survivor (same stamp
// as the head's, its log reaching the head's HW) lowers the length to its
// LEO; any other replica is discarded and lets the length pass. The tail
// finishes the agreement. A log that ends below the head's HW lost
// acknowledged records (power loss before an fsync, then back before it
// was fenced): HDFS likewise leaves a restarted replica (RWR) out of a
// block's length when live ones (RBW) are there (BlockRecoveryWorker).
func (m *Member) stepRecover(msg Message) {
	length := msg.Length
	if short := m.unclean || m.log.LogEndOffset < msg.HW; m.log.Stamp != msg.HeadStamp || short {
		// Discarded: it counts as empty from here on, but its records are
		// cut only when the copy's first write arrives (with it, in one
		// Ready), so a copy that never comes (a cut link) leaves them.
		if m.discardTo < 0 {
			m.staleStamp, m.kept = m.log.Stamp, m.log
			m.belowHW = -1
			if short && m.log.Stamp == msg.HeadStamp {
				m.belowHW = msg.HW
			}
		}
		m.discardTo = msg.LogStart
		m.log = LogState{LogStartOffset: msg.LogStart, LogEndOffset: msg.LogStart, HighWatermark: msg.LogStart, Stamp: -1}
	} else {
		length = min(length, m.log.LogEndOffset)
	}
	next := m.pl.Next(m.cfg.ID)
	if next == NoMember {
		m.finishRecovery(length)
		ack := m.ack(msg.From)
		ack.Recover, ack.Length = true, length
		m.rd.Messages = append(m.rd.Messages, ack)
		return
	}
	m.recovery = &Message{Kind: KindWrite, From: m.cfg.ID, To: next, Stamp: m.pl.Stamp, Members: slices.Clone(m.pl.Members),
		Recover: true, HeadStamp: msg.HeadStamp, Length: length, LogStart: msg.LogStart, HW: msg.HW}
	m.recoveryOut = false
}

// finishRecovery cuts the log above the agreed length. The new stamp
// becomes this replica's once its log reaches the length: at once for a
// survivor, after the copy for a discarded replica (recorded earlier, the
// copied batches' older epochs would drop it from the epoch cache).
func (m *Member) finishRecovery(length int64) {
	if m.log.LogEndOffset > length {
		m.rd.Truncation = &Truncation{ToOffset: length, Stamp: m.pl.Stamp}
		m.log.LogEndOffset = length
		m.log.HighWatermark = min(m.log.HighWatermark, length)
	}
	m.recovered = true
	m.length = length
	m.stampAt = length
	m.stampIfCaughtUp()
	m.rd.RecoveryLength = length
	m.sent = -1
	m.settleHW()
}

// stampIfCaughtUp records the pipeline's stamp as this replica's once its
// log holds the agreed length.
func (m *Member) stampIfCaughtUp() {
	if m.stampAt >= 0 && m.log.LogEndOffset >= m.stampAt {
		m.log.Stamp = m.pl.Stamp
		m.rd.StampStart, m.rd.Stamp = m.stampAt, m.pl.Stamp
		m.stampAt = -1
	}
}

// stepWrite appends records that start at this replica's LEO; anything
// else is answered with an ack of its LEO, from which the predecessor
// forwards again.
func (m *Member) stepWrite(msg Message) {
	if !m.recovered || msg.BaseOffset != m.log.LogEndOffset || msg.EndOffset <= msg.BaseOffset {
		m.rd.Messages = append(m.rd.Messages, m.ack(msg.From))
		return
	}
	if m.discardTo >= 0 {
		m.rd.Truncation = &Truncation{ToOffset: m.discardTo, Discard: true, StaleStamp: m.staleStamp, Stamp: m.pl.Stamp, BelowHW: m.belowHW}
		m.discardTo = -1
		m.unclean = false // copied from a member that has every acknowledged record
	}
	a := msg
	m.rd.Append = &a
	m.log.LogEndOffset = msg.EndOffset
	m.stampIfCaughtUp()
	m.settleHW()
	if m.pl.Next(m.cfg.ID) == NoMember {
		m.rd.Messages = append(m.rd.Messages, m.ack(msg.From))
	}
}

// stepAck learns what the successor has.
func (m *Member) stepAck(msg Message) {
	m.nextLEO = msg.LEO
	switch {
	case m.sent < 0:
		m.sent = msg.LEO
	case m.sent > msg.LEO:
		// The successor did not take what was sent (a write was lost):
		// forward again from its LEO, at the next tick rather than at
		// once, so a successor that keeps refusing is not flooded.
		m.sent, m.hold = msg.LEO, true
	}
	if msg.Failed != NoMember && m.failed == NoMember {
		m.failed = msg.Failed
		if m.pl.Head() == m.cfg.ID {
			m.report(msg.Failed)
		}
	}
	if msg.Recover && !m.recovered {
		m.recovery = nil
		m.finishRecovery(msg.Length)
	}
	progress := msg.Acked > m.downAcked
	m.downAcked = max(m.downAcked, msg.Acked)
	m.settleHW()
	if m.pl.Head() != m.cfg.ID && m.recovered { // the head's wait is settleHW's
		switch {
		case m.ackable() >= m.log.LogEndOffset:
			m.waitSinceMs = -1 // everything is acknowledged
		case progress:
			m.waitSinceMs = m.nowMs // the successor answers: only silence counts
		}
	}
	if m.pl.Head() != m.cfg.ID && m.recovered && (msg.Recover || m.ackable() > m.ackedUp || msg.Failed != NoMember) {
		if prev := m.pl.Prev(m.cfg.ID); prev != NoMember {
			ack := m.ack(prev)
			ack.Recover, ack.Length = msg.Recover, msg.Length
			ack.Failed = msg.Failed
			m.rd.Messages = append(m.rd.Messages, ack)
		}
	}
}

// ackable is what this member and every member after it have.
func (m *Member) ackable() int64 {
	if m.pl.Next(m.cfg.ID) == NoMember {
		return m.log.LogEndOffset
	}
	return min(m.log.LogEndOffset, m.downAcked)
}

func (m *Member) ack(to int32) Message {
	acked := m.ackable()
	m.ackedUp = max(m.ackedUp, acked)
	msg := Message{Kind: KindAck, From: m.cfg.ID, To: to, Stamp: m.pl.Stamp, LEO: m.log.LogEndOffset, Acked: acked, Failed: m.failed}
	if !m.recovered {
		msg.Acked = -1
	}
	return msg
}

// settleHW moves the HW to what every member has: the tail's ack says so
// (everyone before the tail appended before forwarding). The HW never
// moves back, but for a truncation below it.
func (m *Member) settleHW() {
	if !m.recovered {
		return
	}
	rose := false
	if hw := m.ackable(); hw > m.log.HighWatermark {
		m.log.HighWatermark = hw
		m.rd.HighWatermark, m.rd.HWChanged = hw, true
		rose = true
	}
	if m.pl.Head() == m.cfg.ID {
		// The timeout counts silence: a HW that keeps rising under a
		// steady stream (writes always in flight on a slow link) is not a
		// failure, though it never reaches the LEO.
		if m.log.HighWatermark >= m.log.LogEndOffset {
			m.waitSinceMs = -1
		} else if m.waitSinceMs < 0 || rose {
			m.waitSinceMs = m.nowMs
		}
		if !m.caughtUp && m.ackable() >= m.length {
			m.caughtUp, m.rd.CaughtUp = true, true
		}
	}
}

// waiting starts the successor's timeout, unless one runs already (the
// silence counts from the first message it has not acknowledged).
func (m *Member) waiting() {
	if m.waitSinceMs < 0 {
		m.waitSinceMs = m.nowMs
	}
}

// Ready returns what the owner must do now and forgets it. The head starts
// its recovery here, and every member forwards what its successor lacks.
func (m *Member) Ready() Ready {
	next := m.pl.Next(m.cfg.ID)
	if m.recovery != nil && !m.recoveryOut && !m.hold {
		m.recoveryOut = true
		m.rd.Messages = append(m.rd.Messages, *m.recovery)
		m.waiting()
	}
	if m.recovered && next != NoMember && m.nextLEO >= 0 && m.failed == NoMember && !m.hold {
		if m.sent < 0 {
			m.sent = m.nextLEO
		}
		if m.sent < m.log.LogEndOffset {
			m.rd.Messages = append(m.rd.Messages, Message{Kind: KindWrite, From: m.cfg.ID, To: next, Stamp: m.pl.Stamp, Members: slices.Clone(m.pl.Members),
				BaseOffset: m.sent, EndOffset: m.log.LogEndOffset})
			m.sent = m.log.LogEndOffset
			m.waiting()
		}
	}
	rd := m.rd
	rd.HighWatermark = m.log.HighWatermark
	m.rd = Ready{StampStart: -1, RecoveryLength: -1}
	return rd
}

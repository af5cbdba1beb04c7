// Package quorum replicates one partition's log by Raft (go.etcd.io/raft/v3,
// the library etcd uses), for topics created with
// replication.protocol=quorum: a produced batch is proposed as a Raft entry,
// commits once a majority of the replicas has it on stable storage, and only
// then is appended to every replica's segment log, with the Raft term as the
// batch's partition leader epoch. The high watermark is the committed end.
//
// Node wraps one replica's raft.RawNode. Like the ISR rules (package
// replication) it has no goroutines and no clock: its owner calls Tick on the
// lab clock, hands it the messages other replicas sent (Step), and drains
// Ready, which persists Raft's state (fsync where Raft requires it) before it
// returns the messages to send and the entries to apply: "persist before
// send". Raft elects the leader; the controller only assigns the replicas.
//
// Elections are timed by the node, not by Raft: Raft draws each election
// timeout from crypto/rand (raft.go, resetRandomizedElectionTimeout:
// electionTimeout + globalRand.Intn(electionTimeout), and lockedRand.Intn
// reads rand.Reader), which no Config option seeds or replaces. So a
// non-leader's Tick gives Raft a tick only while Raft's own timer stays
// below ElectionTicks (where no drawn timeout can fire: it is at least
// that), and the node campaigns (Campaign, with PreVote) once a timeout of
// its own passes, drawn between ElectionTicks and twice that from a PCG
// seeded by its id, term and campaign count. Given the same messages and
// ticks, a node then elects the same way in every run (TestElectionsRepeat);
// a whole lab's quorum runs still do not always replay exactly (docs/scripting.md).
//
// The voters are the partition's replicas, fixed when the topic is created:
// every replica starts from the same initial state (a log whose first index
// is 2, after a snapshot at index 1 that names the voters), as the raft
// package recommends instead of Bootstrap. Raft's log is read from the state
// file when needed (diskStorage), so memory holds no batches.
//
// The owner gives committed entries their offsets as it appends them (it
// may find one a duplicate and skip it) and reports back how far it got
// (Applied): an apply checkpoint, from which a restart re-applies. Once
// CompactEntries applied entries are in the state file it is rewritten from
// a snapshot at a checkpoint (Raft's Storage then starts there); a follower
// that needs entries compacted away gets the snapshot, whose data is the
// leader's records up to the checkpoint's end offset (SnapshotData).
package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"tidemark/storage"
	"tidemark/storage/vfs"
)

// Config configures a Node.
type Config struct {
	// ID is this replica's broker id.
	ID int32
	// Voters are the partition's replicas (broker ids), this one among them.
	Voters []int32
	// Dir is the partition's directory; the Raft state lives in its
	// StateFile.
	Dir string
	// FS is the file system (default vfs.Default).
	FS vfs.FS
	// ElectionTicks is how many Ticks a follower waits without hearing
	// from a leader before it campaigns (at least: each timeout is drawn
	// between ElectionTicks and twice that, see the package doc). Default
	// 10: 500 ms at the broker's 50 ms tick.
	ElectionTicks int
	// HeartbeatTicks is how often a leader heartbeats, in Ticks. Default 2
	// (100 ms): a fifth of the shortest election timeout, and a divisor of
	// it, so the leader's CheckQuorum falls on a heartbeat's tick and an
	// idle leader's broker need wake only then (TicksUntilDue).
	HeartbeatTicks int
	// Logger receives Raft's own log (default slog.Default()).
	Logger *slog.Logger
	// LogEndOffset is the segment log's LEO at Open: Ready hands out the
	// committed entries from the newest apply checkpoint at or below it
	// (ApplyStart), so an owner whose segment log lost appends, or holds
	// appends whose checkpoint was lost, applies them again.
	LogEndOffset int64
	// CompactEntries: once this many applied entries are in the state
	// file, it is compacted, keeping the newest CompactEntries/2 for
	// followers that are a little behind (one further behind gets a
	// snapshot). Default 1000.
	CompactEntries int
	// SyncLog fsyncs the owner's segment log; a compaction calls it first,
	// since the entries it drops then live only there. Nil: no compaction.
	SyncLog func() error
	// Restore puts the owner's segment log at a snapshot a leader sent (a
	// follower too far behind for entries): its records up to End. Ready
	// calls it before it persists the snapshot. Nil: snapshots fail the
	// node.
	Restore func(SnapshotData) error
	// Synced, when set, is told the state file's length after each fsync,
	// so the lab's power loss cuts only what was not synced.
	Synced func(size int64)
}

// SnapshotData is what a quorum snapshot carries: the segment log as its
// leader had it at the snapshot's index. End is the offset after the last
// record; Start the leader's log start offset; Records the record batches
// [Start, End) as stored (the broker adds them when it sends a snapshot;
// Raft's Storage gives only End).
type SnapshotData struct {
	End, Start int64
	Records    []byte
}

// EncodeSnapshotData lays d out as a raftpb.Snapshot's Data.
func EncodeSnapshotData(d SnapshotData) []byte { return encodeSnapshotData(d) }

func encodeSnapshotData(d SnapshotData) []byte {
	b := make([]byte, 16, 16+len(d.Records))
	binary.BigEndian.PutUint64(b, uint64(d.End))
	binary.BigEndian.PutUint64(b[8:], uint64(d.Start))
	return append(b, d.Records...)
}

// DecodeSnapshotData reads a snapshot's Data; CORRUPT_MESSAGE if it is not
// one.
func DecodeSnapshotData(b []byte) (SnapshotData, error) {
	if len(b) < 16 {
		return SnapshotData{}, fmt.Errorf("%w: Raft snapshot data of %d bytes", kerr.CorruptMessage, len(b))
	}
	d := SnapshotData{End: int64(binary.BigEndian.Uint64(b)), Start: int64(binary.BigEndian.Uint64(b[8:])), Records: b[16:]}
	if d.Start < 0 || d.End < d.Start {
		return SnapshotData{}, fmt.Errorf("%w: Raft snapshot of offsets [%d, %d)", kerr.CorruptMessage, d.Start, d.End)
	}
	if len(d.Records) == 0 {
		return d, nil // the metadata only, as Raft's Storage gives it
	}
	// The records must be whole batches from Start on, one after another,
	// reaching End.
	next, rest := d.Start, d.Records
	for _, h := range storage.ScanBatchHeaders(d.Records) {
		if h.BaseOffset != next {
			return SnapshotData{}, fmt.Errorf("%w: Raft snapshot batch at offset %d, expected %d", kerr.CorruptMessage, h.BaseOffset, next)
		}
		next = h.LastOffset() + 1
		rest = rest[h.Size():]
	}
	if len(rest) > 0 || next < d.End {
		return SnapshotData{}, fmt.Errorf("%w: Raft snapshot records end at offset %d, not %d", kerr.CorruptMessage, next, d.End)
	}
	return d, nil
}

// Entry is a committed Raft entry that carries a produced batch.
type Entry struct {
	// Index and Term are the entry's place in the Raft log; Term is the
	// batch's partition leader epoch once applied.
	Index, Term uint64
	// ProposalID is what the proposer passed to Propose, so the leader can
	// answer the produce request waiting for it.
	ProposalID uint64
	// Proposer is the broker that proposed it.
	Proposer int32
	// NumRecords is the batch's record count. Every replica applies the
	// same entries in the same order by the same rules, so each gives them
	// the same offsets (or finds the same duplicates).
	NumRecords int64
	// Batch is the record batch as the producer sent it: a copy, which
	// the owner may modify (appending stamps offsets and epoch into it).
	Batch []byte
}

// Ready is what one drain of the node produced.
type Ready struct {
	// Messages are to be sent to other replicas (Message.To is a broker
	// id). They may be sent now: what they depend on is persisted.
	Messages []raftpb.Message
	// Committed are the entries that committed since the last Ready, in
	// log order, to be appended to the segment log.
	Committed []Entry
	// LastCommitted is the index of the last entry committed by this
	// Ready (batches or not), 0 if none: the owner reports it to Applied
	// once Committed is in its segment log.
	LastCommitted uint64
}

// Status is a node's view of its partition.
type Status struct {
	ID int32
	// Leader is the leader this node knows of; -1 for none.
	Leader int32
	// Term is the current Raft term (the partition's leader epoch).
	Term uint64
	// Role is "leader", "follower", "candidate" or "pre-candidate".
	Role string
	// CommitIndex and LastIndex are Raft log indexes: committed, and the
	// last entry this node has (committed or not). FirstIndex is the first
	// one the state file still holds (the ones before were compacted).
	CommitIndex, LastIndex, FirstIndex uint64
	// CommittedEnd is the segment log's end after the last applied entry,
	// as the owner reported it (Applied): the HW.
	CommittedEnd int64
}

// Node is one replica's Raft node for one partition. It is not safe for
// concurrent use: its owner serializes calls (the broker's replica lock).
type Node struct {
	cfg     Config
	rn      *raft.RawNode
	storage *diskStorage
	wal     *wal
	// applied is the newest apply checkpoint (Applied), checkpoints the
	// ones after the snapshot, oldest first: a compaction cuts at one.
	applied     checkpoint
	checkpoints []checkpoint
	// failed is the first persistence error; the node refuses everything
	// after it, as a log dir that failed does.
	failed error
	// sinceHeartbeat counts the Ticks since this node last sent heartbeats
	// as leader.
	sinceHeartbeat int
	// The node's election timer (package doc). raftElapsed is at least
	// Raft's own electionElapsed while not leading (reset only where Raft
	// surely resets it: a new term or state, an append, heartbeat or
	// snapshot from a leader of its term), and at most ElectionTicks-1;
	// sinceReset counts the Ticks since then or since the node last
	// campaigned, which it does at timeout. term and state are Raft's as
	// last seen, campaigns seeds the next timeout.
	raftElapsed, sinceReset, timeout int
	term                             uint64
	state                            raft.StateType
	campaigns                        uint64
	// ticks counts Ticks; heardAt is the tick at which each other replica
	// last sent this node a message (CaughtUp).
	ticks   int
	heardAt map[uint64]int
}

// campaignTransfer is the Context raft gives a leadership transfer's vote
// requests (raft.campaignTransfer), which its lease check lets through.
const campaignTransfer = "CampaignTransfer"

// entryVersion starts every proposal's data, in case its layout changes.
const entryVersion = 1

// entryHeader is version, proposer, proposal id.
const entryHeader = 1 + 4 + 8

// Open opens (or creates) the replica's Raft state in cfg.Dir, replaying what
// was persisted: after a crash the node comes back with the term, vote and
// log entries it had synced, as Raft requires. Ready hands out the committed
// entries after ApplyStart again, which the owner re-applies from that
// offset.
func Open(cfg Config) (*Node, error) {
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.HeartbeatTicks <= 0 {
		cfg.HeartbeatTicks = 2
	}
	if cfg.CompactEntries <= 0 {
		cfg.CompactEntries = 1000
	}
	if cfg.Synced == nil {
		cfg.Synced = func(int64) {}
	}
	voters := make([]uint64, 0, len(cfg.Voters))
	found := false
	for _, v := range cfg.Voters {
		if v <= 0 {
			return nil, fmt.Errorf("%w: replica %d: Raft ids must be positive", kerr.InvalidReplicaAssignment, v)
		}
		voters = append(voters, uint64(v))
		found = found || v == cfg.ID
	}
	if !found {
		return nil, fmt.Errorf("%w: broker %d is not among the replicas %v", kerr.InvalidReplicaAssignment, cfg.ID, cfg.Voters)
	}
	w, rep, err := openWAL(cfg.FS, cfg.Dir, cfg.Synced)
	if err != nil {
		return nil, fmt.Errorf("%w: opening Raft state: %v", kerr.KafkaStorageError, err)
	}
	if rep.torn > 0 {
		cfg.Logger.Warn("Raft state had a torn tail; cut", "dir", cfg.Dir, "bytes", rep.torn)
	}
	fail := func(format string, args ...any) (*Node, error) {
		w.close()
		return nil, fmt.Errorf("%w: Raft state in %s: %s", kerr.KafkaStorageError, cfg.Dir, fmt.Sprintf(format, args...))
	}
	ds := &diskStorage{wal: w, cs: raftpb.ConfState{Voters: voters}, snap: rep.snap}
	if err := ds.append(rep.entries); err != nil {
		return fail("%v", err)
	}
	hs := rep.hs
	if raft.IsEmptyHardState(hs) {
		hs.Term, hs.Commit = rep.snap.term, rep.snap.index
	}
	if last := ds.lastIndex(); hs.Commit > last || hs.Commit < rep.snap.index {
		return fail("commit %d outside [%d, %d]", hs.Commit, rep.snap.index, last)
	}
	ds.hs = hs
	// Apply from the newest checkpoint the segment log reached: what it
	// holds past it is cut and applied again (the same rules give the same
	// records), what a power loss took from it is applied again too.
	start := rep.snap
	if start.end > cfg.LogEndOffset {
		return fail("the segment log ends at %d, below the snapshot's end %d at index %d", cfg.LogEndOffset, start.end, start.index)
	}
	var kept []checkpoint
	for _, c := range rep.applied {
		if c.end <= cfg.LogEndOffset && c.index <= hs.Commit && c.index >= start.index {
			start = c
			kept = append(kept, c)
		}
	}
	rn, err := raft.NewRawNode(&raft.Config{
		ID:            uint64(cfg.ID),
		ElectionTick:  cfg.ElectionTicks,
		HeartbeatTick: cfg.HeartbeatTicks,
		Storage:       ds,
		Applied:       start.index,
		// Bounds what Raft's own memory holds for a follower (one
		// message's entries, unsent messages in flight).
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 64,
		// CheckQuorum: a leader cut off from a majority steps down after
		// an election timeout, so it stops taking produce requests it can
		// never commit. PreVote: a replica back from a cut does not
		// disrupt a working leader with a higher term.
		CheckQuorum: true,
		PreVote:     true,
		Logger:      raftLogger{cfg.Logger.With("raft", cfg.ID)},
	})
	if err != nil {
		w.close()
		return nil, err
	}
	n := &Node{cfg: cfg, rn: rn, storage: ds, wal: w, applied: start, checkpoints: kept, heardAt: map[uint64]int{}}
	n.state = raft.StateLeader // anything but a follower's: observe resets the timer
	n.observe()
	return n, nil
}

// ApplyStart is the segment log's end at the newest apply checkpoint
// within Config.LogEndOffset: the owner cuts its log back to it, and the
// entries Ready hands out follow from there.
func (n *Node) ApplyStart() int64 { return n.applied.end }

// Applied records that the committed entries up to index are in the
// segment log, which ends at end (Ready.LastCommitted and the LEO after
// applying them), and compacts the state file when it holds
// CompactEntries applied entries. The checkpoint is not synced: losing it
// costs a re-apply after a restart.
func (n *Node) Applied(index uint64, end int64) error {
	if n.failed != nil {
		return n.failed
	}
	if index <= n.applied.index {
		return nil
	}
	term, err := n.storage.Term(index)
	if err != nil {
		return n.fail("apply checkpoint %d: %v", index, err)
	}
	c := checkpoint{index: index, term: term, end: end}
	if err := n.wal.appendApplied(c); err != nil {
		return n.fail("writing an apply checkpoint: %v", err)
	}
	n.applied = c
	n.checkpoints = append(n.checkpoints, c)
	if n.cfg.SyncLog != nil && index-n.storage.snap.index >= uint64(n.cfg.CompactEntries) {
		return n.compact()
	}
	return nil
}

// compact rewrites the state file from the newest checkpoint that leaves
// CompactEntries/2 applied entries in it, for followers a little behind.
func (n *Node) compact() error {
	keep := uint64(n.cfg.CompactEntries / 2)
	i := -1
	for j, c := range n.checkpoints {
		if c.index+keep <= n.applied.index {
			i = j
		}
	}
	if i < 0 {
		return nil
	}
	snap := n.checkpoints[i]
	if err := n.cfg.SyncLog(); err != nil {
		return n.fail("syncing the segment log before a compaction: %v", err)
	}
	last := n.storage.lastIndex()
	var ents []raftpb.Entry
	if snap.index < last {
		var err error
		if ents, err = n.storage.Entries(snap.index+1, last+1, math.MaxUint64); err != nil {
			return n.fail("reading entries to keep: %v", err)
		}
	}
	after := slices.Clone(n.checkpoints[i+1:])
	refs, err := n.wal.rewrite(snap, n.storage.hs, ents, after)
	if err != nil {
		return n.fail("compacting: %v", err)
	}
	n.storage.snap, n.storage.ents = snap, refs
	n.checkpoints = after
	return nil
}

// fail fails the node for good with a KAFKA_STORAGE_ERROR.
func (n *Node) fail(format string, args ...any) error {
	n.failed = fmt.Errorf("%w: Raft state: %s", kerr.KafkaStorageError, fmt.Sprintf(format, args...))
	return n.failed
}

// Tick advances Raft's logical clock by one tick (election and heartbeat
// timeouts are counted in ticks).
//
// A leader's tick is Raft's (heartbeats, CheckQuorum: no randomness); a
// non-leader's counts toward the node's own election timeout, reaching
// Raft only while Raft's timer cannot fire (package doc).
func (n *Node) Tick() {
	if n.failed != nil {
		return
	}
	n.sinceHeartbeat++
	n.ticks++
	n.observe()
	if n.state == raft.StateLeader {
		n.rn.Tick()
		n.observe() // CheckQuorum may have stepped it down
		return
	}
	n.sinceReset++
	if n.raftElapsed < n.cfg.ElectionTicks-1 {
		n.raftElapsed++
		n.rn.Tick()
	}
	if n.sinceReset >= n.timeout {
		n.campaigns++
		n.sinceReset, n.timeout = 0, n.drawTimeout()
		if err := n.rn.Campaign(); err != nil {
			n.cfg.Logger.Debug("campaign", "raft", n.cfg.ID, "err", err)
		}
		n.observe()
	}
}

// observe resets the election timer where Raft reset its own: a new term,
// or a new state other than pre-candidate (becomeFollower, becomeCandidate
// and becomeLeader reset it; becomePreCandidate does not).
func (n *Node) observe() {
	st := n.rn.BasicStatus()
	reset := st.Term != n.term || st.RaftState != n.state && st.RaftState != raft.StatePreCandidate
	n.term, n.state = st.Term, st.RaftState
	if reset {
		n.resetTimer()
	}
}

// resetTimer restarts the election timer, where Raft restarts its own.
func (n *Node) resetTimer() {
	n.raftElapsed, n.sinceReset, n.timeout = 0, 0, n.drawTimeout()
}

// drawTimeout returns the next election timeout, ElectionTicks to twice
// that less one (Raft's range), from a source seeded by the node's id, its
// term and its campaigns so far: replicas of one partition draw apart, and
// one node draws the same in every run.
func (n *Node) drawTimeout() int {
	rng := rand.New(rand.NewPCG(uint64(n.cfg.ID), n.term<<20^n.campaigns))
	return n.cfg.ElectionTicks + rng.IntN(n.cfg.ElectionTicks)
}

// TicksUntilDue is how many Ticks from now the next one may do something:
// a leader's next heartbeat (which is also when its CheckQuorum falls), a
// non-leader's election timeout (the node's own, between ElectionTicks and
// twice that; a follower that hears from its leader never reaches it).
// Ticks before then only count; the owner may give them later, all at
// once, and need not wake for them: an idle partition wakes its broker
// once per heartbeat on the leader and not at all on its followers. At
// least 1.
func (n *Node) TicksUntilDue() int {
	if n.failed != nil {
		return math.MaxInt32
	}
	n.observe()
	if n.state == raft.StateLeader {
		return max(n.cfg.HeartbeatTicks-n.sinceHeartbeat, 1)
	}
	return max(n.timeout-n.sinceReset, 1)
}

// Step hands Raft a message another replica sent. A message not addressed
// to this node is refused.
func (n *Node) Step(m raftpb.Message) error {
	if n.failed != nil {
		return n.failed
	}
	if m.To != uint64(n.cfg.ID) {
		return fmt.Errorf("%w: Raft message for %d reached %d", kerr.InvalidRequest, m.To, n.cfg.ID)
	}
	if m.Type == raftpb.MsgSnap {
		// Refused before Raft takes it: a snapshot Restore cannot use would
		// fail the node for good.
		if m.Snapshot == nil {
			return fmt.Errorf("%w: Raft snapshot message without a snapshot", kerr.CorruptMessage)
		}
		if _, err := DecodeSnapshotData(m.Snapshot.Data); err != nil {
			return err
		}
	}
	switch m.Type {
	case raftpb.MsgApp, raftpb.MsgHeartbeat, raftpb.MsgSnap:
		if m.Term >= n.rn.BasicStatus().Term { // Raft ignores an older leader's
			n.resetTimer()
		}
	case raftpb.MsgVote, raftpb.MsgPreVote:
		// Raft ignores a vote request while its leader's lease holds
		// (CheckQuorum), judged by its own timer, which Tick keeps below
		// the election timeout. Judge it by the node's timer instead: past
		// an election timeout, mark the request as Raft marks a leadership
		// transfer's, the one kind it lets through a lease (raft.go, Step:
		// force). Otherwise a follower would vote only once it campaigned.
		if n.sinceReset >= n.cfg.ElectionTicks && m.Context == nil {
			m.Context = []byte(campaignTransfer)
		}
	}
	n.heardAt[m.From] = n.ticks
	err := n.rn.Step(m)
	n.observe()
	return err
}

// Campaign makes this node start an election now (tests and the lab's
// "elect" control; Raft elects by itself on timeouts).
func (n *Node) Campaign() error {
	if n.failed != nil {
		return n.failed
	}
	err := n.rn.Campaign()
	n.observe()
	return err
}

// Propose appends a produced batch to the leader's Raft log; it commits
// when a majority has it (Ready hands it out then, with id). Anywhere but
// on the leader it is NOT_LEADER_OR_FOLLOWER: proposals are not forwarded,
// a Kafka client finds the leader through Metadata.
func (n *Node) Propose(id uint64, batch []byte) error {
	if n.failed != nil {
		return n.failed
	}
	if n.rn.BasicStatus().RaftState != raft.StateLeader {
		return kerr.NotLeaderForPartition
	}
	data := make([]byte, entryHeader+len(batch))
	data[0] = entryVersion
	binary.BigEndian.PutUint32(data[1:5], uint32(n.cfg.ID))
	binary.BigEndian.PutUint64(data[5:13], id)
	copy(data[entryHeader:], batch)
	if err := n.rn.Propose(data); err != nil {
		if errors.Is(err, raft.ErrProposalDropped) {
			return kerr.NotLeaderForPartition // stepping down, or a leader transfer
		}
		return err
	}
	return nil
}

// Ready drains what Raft has for its owner: it persists new entries and
// the HardState (fsync when Raft requires), then returns the messages to
// send and the entries that committed. A persistence error fails the node
// for good (KAFKA_STORAGE_ERROR).
func (n *Node) Ready() (Ready, error) {
	var out Ready
	if n.failed != nil {
		return out, n.failed
	}
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		if !raft.IsEmptyHardState(rd.HardState) {
			n.storage.hs = rd.HardState
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			if err := n.restore(rd.Snapshot); err != nil {
				return out, err
			}
		}
		refs, err := n.wal.append(rd.Entries, rd.HardState, rd.MustSync)
		if err == nil {
			err = n.storage.append(refs)
		}
		if err != nil {
			return out, n.fail("persisting: %v", err)
		}
		out.Messages = append(out.Messages, rd.Messages...)
		for _, m := range rd.Messages {
			if m.Type == raftpb.MsgHeartbeat {
				n.sinceHeartbeat = 0
				break
			}
		}
		for _, e := range rd.CommittedEntries {
			out.LastCommitted = e.Index
			ent, ok, err := n.decode(e)
			if err != nil {
				n.failed = err
				return out, err
			}
			if ok {
				out.Committed = append(out.Committed, ent)
			}
		}
		n.rn.Advance(rd)
	}
	return out, nil
}

// decode turns a committed Raft entry into an Entry; ok is false for
// entries that carry no batch (a new leader's empty entry).
func (n *Node) decode(e raftpb.Entry) (Entry, bool, error) {
	if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
		return Entry{}, false, nil
	}
	if len(e.Data) < entryHeader || e.Data[0] != entryVersion {
		return Entry{}, false, fmt.Errorf("%w: Raft entry %d: unknown layout", kerr.CorruptMessage, e.Index)
	}
	batch := e.Data[entryHeader:]
	var records int64
	for _, h := range storage.ScanBatchHeaders(batch) {
		records += int64(h.LastOffsetDelta) + 1
	}
	ent := Entry{Index: e.Index, Term: e.Term, Proposer: int32(binary.BigEndian.Uint32(e.Data[1:5])),
		ProposalID: binary.BigEndian.Uint64(e.Data[5:13]), NumRecords: records, Batch: slices.Clone(batch)}
	return ent, true, nil
}

// restore installs a snapshot the leader sent: the owner's segment log
// first (Config.Restore), then the state file is rewritten to start at it,
// so a crash between the two finds the log at least as far as the state.
func (n *Node) restore(s raftpb.Snapshot) error {
	if n.cfg.Restore == nil {
		return n.fail("snapshot at %d: this replica cannot restore snapshots", s.Metadata.Index)
	}
	d, err := DecodeSnapshotData(s.Data)
	if err == nil {
		err = n.cfg.Restore(d)
	}
	if err != nil {
		return n.fail("restoring the snapshot at %d: %v", s.Metadata.Index, err)
	}
	snap := checkpoint{index: s.Metadata.Index, term: s.Metadata.Term, end: d.End}
	if _, err := n.wal.rewrite(snap, n.storage.hs, nil, nil); err != nil {
		return n.fail("writing the snapshot at %d: %v", snap.index, err)
	}
	n.storage.snap, n.storage.ents = snap, nil
	n.applied, n.checkpoints = snap, nil
	return nil
}

// Status returns the node's view: leader, term, role, indexes, HW.
func (n *Node) Status() Status {
	bs := n.rn.BasicStatus()
	last := n.storage.lastIndex()
	leader := int32(bs.Lead)
	if bs.Lead == raft.None {
		leader = -1
	}
	return Status{ID: n.cfg.ID, Leader: leader, Term: bs.Term, Role: roleName(bs.RaftState),
		CommitIndex: bs.Commit, LastIndex: last, FirstIndex: n.storage.firstIndex(), CommittedEnd: n.applied.end}
}

func roleName(s raft.StateType) string {
	switch s {
	case raft.StateLeader:
		return "leader"
	case raft.StateCandidate:
		return "candidate"
	case raft.StatePreCandidate:
		return "pre-candidate"
	}
	return "follower"
}

// CaughtUp returns, on the leader, the replicas it sees as caught up, in
// the order of Config.Voters: itself, and each follower it heard from
// within an election timeout (Kafka's replica.lag.time.max.ms) that either
// has the leader's last entry or is being streamed entries (Raft's
// replicate state; one that is probed or needs a snapshot is behind). This
// is the quorum partition's ISR. Nil anywhere but on the leader. (Raft's
// own RecentActive is cleared at every CheckQuorum until the next answers,
// so an ISR made from it would flap.)
func (n *Node) CaughtUp() []int32 {
	if n.failed != nil || n.rn.BasicStatus().RaftState != raft.StateLeader {
		return nil
	}
	last := n.storage.lastIndex()
	in := map[uint64]bool{}
	n.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		heard, ok := n.heardAt[id]
		recent := ok && n.ticks-heard <= n.cfg.ElectionTicks
		in[id] = id == uint64(n.cfg.ID) || recent && (pr.Match >= last || pr.State == tracker.StateReplicate)
	})
	out := make([]int32, 0, len(n.cfg.Voters))
	for _, v := range n.cfg.Voters {
		if in[uint64(v)] {
			out = append(out, v)
		}
	}
	return out
}

// ReportUnreachable tells Raft a message to id could not be sent (the link
// is cut, the broker is down), so the leader probes instead of streaming.
func (n *Node) ReportUnreachable(id int32) {
	if n.failed == nil {
		n.rn.ReportUnreachable(uint64(id))
	}
}

// ReportSnapshot tells Raft whether the snapshot sent to id arrived, so
// the leader goes back to sending it entries (or sends the snapshot again).
func (n *Node) ReportSnapshot(id int32, ok bool) {
	if n.failed == nil {
		st := raft.SnapshotFinish
		if !ok {
			st = raft.SnapshotFailure
		}
		n.rn.ReportSnapshot(uint64(id), st)
	}
}

// Close closes the state file. Everything Raft needed synced already is.
func (n *Node) Close() error { return n.wal.close() }

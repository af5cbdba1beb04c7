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
// The voters are the partition's replicas, fixed when the topic is created:
// every replica starts from the same initial state (a log whose first index
// is 2, after a snapshot at index 1 that names the voters), as the raft
// package recommends instead of Bootstrap. Raft's log is read from the state
// file when needed (diskStorage), so memory holds no batches.
package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

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
	// from a leader before it campaigns (randomized by Raft up to twice
	// that). Default 10: 500 ms at the broker's 50 ms tick.
	ElectionTicks int
	// HeartbeatTicks is how often a leader heartbeats, in Ticks. Default 1.
	HeartbeatTicks int
	// Logger receives Raft's own log (default slog.Default()).
	Logger *slog.Logger
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
	// BaseOffset is the offset the batch's first record gets: every
	// replica applies the same entries in the same order, so each assigns
	// the same offsets. NumRecords is the batch's record count.
	BaseOffset int64
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
	// last entry this node has (committed or not).
	CommitIndex, LastIndex uint64
	// CommittedEnd is the offset after the last committed record: the HW.
	CommittedEnd int64
}

// Node is one replica's Raft node for one partition. It is not safe for
// concurrent use: its owner serializes calls (the broker's replica lock).
type Node struct {
	cfg     Config
	rn      *raft.RawNode
	storage *diskStorage
	wal     *wal
	// committedEnd is the offset after the last committed entry handed
	// out, counted from the first entry: the replica's HW.
	committedEnd int64
	// failed is the first persistence error; the node refuses everything
	// after it, as a log dir that failed does.
	failed error
}

// entryVersion starts every proposal's data, in case its layout changes.
const entryVersion = 1

// entryHeader is version, proposer, proposal id.
const entryHeader = 1 + 4 + 8

// Open opens (or creates) the replica's Raft state in cfg.Dir, replaying what
// was persisted: after a crash the node comes back with the term, vote and
// log entries it had synced, as Raft requires. Every committed entry is handed
// out again by Ready from the first one on, so an owner whose segment log lost
// unsynced appends gets them back; it skips those it already has (by
// Entry.BaseOffset).
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
		cfg.HeartbeatTicks = 1
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
	w, rep, err := openWAL(cfg.FS, cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: opening Raft state: %v", kerr.KafkaStorageError, err)
	}
	if rep.torn > 0 {
		cfg.Logger.Warn("Raft state had a torn tail; cut", "dir", cfg.Dir, "bytes", rep.torn)
	}
	ds := &diskStorage{wal: w, cs: raftpb.ConfState{Voters: voters}}
	if err := ds.append(rep.entries); err != nil {
		w.close()
		return nil, fmt.Errorf("%w: Raft state in %s: %v", kerr.KafkaStorageError, cfg.Dir, err)
	}
	hs := rep.hs
	if raft.IsEmptyHardState(hs) {
		hs.Term, hs.Commit = snapTerm, snapIndex // the initial snapshot's
	}
	if last := ds.lastIndex(); hs.Commit > last || hs.Commit < snapIndex {
		w.close()
		return nil, fmt.Errorf("%w: Raft state in %s: commit %d outside [%d, %d]", kerr.KafkaStorageError, cfg.Dir, hs.Commit, snapIndex, last)
	}
	ds.hs = hs
	rn, err := raft.NewRawNode(&raft.Config{
		ID:            uint64(cfg.ID),
		ElectionTick:  cfg.ElectionTicks,
		HeartbeatTick: cfg.HeartbeatTicks,
		Storage:       ds,
		// Applied 0: every committed entry is handed out again after a
		// restart (see Open's doc).
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
	return &Node{cfg: cfg, rn: rn, storage: ds, wal: w}, nil
}

// Tick advances Raft's logical clock by one tick (election and heartbeat
// timeouts are counted in ticks).
func (n *Node) Tick() {
	if n.failed == nil {
		n.rn.Tick()
	}
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
	return n.rn.Step(m)
}

// Campaign makes this node start an election now (tests and the lab's
// "elect" control; Raft elects by itself on timeouts).
func (n *Node) Campaign() error {
	if n.failed != nil {
		return n.failed
	}
	return n.rn.Campaign()
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
		if !raft.IsEmptySnap(rd.Snapshot) {
			n.failed = fmt.Errorf("%w: Raft snapshots are not supported yet", kerr.KafkaStorageError)
			return out, n.failed
		}
		refs, err := n.wal.append(rd.Entries, rd.HardState, rd.MustSync)
		if err == nil {
			err = n.storage.append(refs)
		}
		if err != nil {
			n.failed = fmt.Errorf("%w: persisting Raft state: %v", kerr.KafkaStorageError, err)
			return out, n.failed
		}
		if !raft.IsEmptyHardState(rd.HardState) {
			n.storage.hs = rd.HardState
		}
		out.Messages = append(out.Messages, rd.Messages...)
		for _, e := range rd.CommittedEntries {
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
		ProposalID: binary.BigEndian.Uint64(e.Data[5:13]), BaseOffset: n.committedEnd, NumRecords: records, Batch: slices.Clone(batch)}
	n.committedEnd += records
	return ent, true, nil
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
		CommitIndex: bs.Commit, LastIndex: last, CommittedEnd: n.committedEnd}
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

// ReportUnreachable tells Raft a message to id could not be sent (the link
// is cut, the broker is down), so the leader probes instead of streaming.
func (n *Node) ReportUnreachable(id int32) {
	if n.failed == nil {
		n.rn.ReportUnreachable(uint64(id))
	}
}

// Close closes the state file. Everything Raft needed synced already is.
func (n *Node) Close() error { return n.wal.close() }

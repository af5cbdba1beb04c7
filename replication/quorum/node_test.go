package quorum

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3/raftpb"

	"tidemark/storage"
)

// group is a partition's replicas as Nodes over an in-memory network
// that can lose brokers and links: each test steps it explicitly (Tick,
// settle), so nothing depends on timing.
type group struct {
	t     *testing.T
	ids   []int32
	dirs  map[int32]string
	nodes map[int32]*Node // nil while down
	// cut[from][to] drops messages from → to.
	cut map[[2]int32]bool
	// applied is each replica's segment log as the broker would write it:
	// the committed batches in order (cut back to the node's ApplyStart at
	// a restart, as the broker cuts its log).
	applied map[int32][]Entry
	// compactEntries is Config.CompactEntries for nodes started from now.
	compactEntries int
	// acked are the proposal ids answered as committed (on their proposer).
	acked  map[uint64]bool
	nextID uint64
}

func newGroup(t *testing.T, n int) *group {
	g := &group{t: t, dirs: map[int32]string{}, nodes: map[int32]*Node{}, cut: map[[2]int32]bool{},
		applied: map[int32][]Entry{}, acked: map[uint64]bool{}}
	for i := 1; i <= n; i++ {
		g.ids = append(g.ids, int32(i))
	}
	for _, id := range g.ids {
		g.dirs[id] = t.TempDir()
		g.start(id)
	}
	t.Cleanup(func() {
		for _, n := range g.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return g
}

func (g *group) start(id int32) {
	g.t.Helper()
	n, err := Open(Config{ID: id, Voters: g.ids, Dir: g.dirs[id], Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		LogEndOffset: g.leo(id), CompactEntries: g.compactEntries, SyncLog: func() error { return nil },
		Restore: func(d SnapshotData) error { return g.restore(id, d) }})
	if err != nil {
		g.t.Fatalf("open %d: %v", id, err)
	}
	g.nodes[id] = n
	g.truncate(id, n.ApplyStart())
}

// leo is the end offset of id's log.
func (g *group) leo(id int32) int64 {
	var leo int64
	for _, e := range g.applied[id] {
		leo += e.NumRecords
	}
	return leo
}

// truncate cuts id's log back to end.
func (g *group) truncate(id int32, end int64) {
	var leo int64
	for i, e := range g.applied[id] {
		if leo+e.NumRecords > end {
			g.applied[id] = g.applied[id][:i]
			return
		}
		leo += e.NumRecords
	}
}

// restore is a follower's Config.Restore: the broker copies the records
// the snapshot carries; here they come from a replica whose log reaches
// the snapshot's end.
func (g *group) restore(id int32, d SnapshotData) error {
	for _, o := range g.ids {
		if o != id && g.leo(o) >= d.End {
			g.applied[id] = slices.Clone(g.applied[o])
			g.truncate(id, d.End)
			return nil
		}
	}
	return fmt.Errorf("no replica has offsets up to %d", d.End)
}

// crash stops a replica as a killed process: its state file keeps what it
// wrote (the page cache survives).
func (g *group) crash(id int32) {
	g.nodes[id].Close()
	g.nodes[id] = nil
}

func (g *group) alive() []int32 {
	var out []int32
	for _, id := range g.ids {
		if g.nodes[id] != nil {
			out = append(out, id)
		}
	}
	return out
}

// settle drains every live node and delivers its messages until nothing
// moves (bounded: a Raft exchange settles in a few rounds).
func (g *group) settle() {
	g.t.Helper()
	for range 100 {
		var msgs []raftpb.Message
		for _, id := range g.alive() {
			rd, err := g.nodes[id].Ready()
			if err != nil {
				g.t.Fatalf("ready %d: %v", id, err)
			}
			g.apply(id, rd)
			msgs = append(msgs, rd.Messages...)
		}
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			from, to := int32(m.From), int32(m.To)
			if g.nodes[to] == nil || g.cut[[2]int32{from, to}] {
				g.nodes[from].ReportUnreachable(to)
				continue
			}
			if err := g.nodes[to].Step(m); err != nil {
				g.t.Fatalf("step %d→%d: %v", from, to, err)
			}
			if m.Type == raftpb.MsgSnap {
				g.nodes[from].ReportSnapshot(to, true)
			}
		}
	}
	g.t.Fatal("the group did not settle in 100 rounds")
}

// apply appends committed entries to id's log and reports them applied,
// as the broker does.
func (g *group) apply(id int32, rd Ready) {
	for _, e := range rd.Committed {
		g.applied[id] = append(g.applied[id], e)
		if e.Proposer == id {
			g.acked[e.ProposalID] = true
		}
	}
	if rd.LastCommitted > 0 {
		if err := g.nodes[id].Applied(rd.LastCommitted, g.leo(id)); err != nil {
			g.t.Fatalf("applied %d: %v", id, err)
		}
	}
}

func (g *group) tick(n int) {
	for range n {
		for _, id := range g.alive() {
			g.nodes[id].Tick()
		}
		g.settle()
	}
}

func (g *group) leader() int32 {
	for _, id := range g.alive() {
		if st := g.nodes[id].Status(); st.Role == "leader" {
			return id
		}
	}
	return -1
}

// elect campaigns id and settles: the election is explicit, so the test
// knows who leads.
func (g *group) elect(id int32) {
	g.t.Helper()
	if err := g.nodes[id].Campaign(); err != nil {
		g.t.Fatal(err)
	}
	g.settle()
	if g.leader() != id {
		g.t.Fatalf("campaign of %d: leader %d", id, g.leader())
	}
}

// waitLeader ticks until some live replica leads (bounded: elections take a
// few election timeouts at most).
func (g *group) waitLeader() int32 {
	g.t.Helper()
	for range 200 {
		g.tick(1)
		if l := g.leader(); l > 0 {
			return l
		}
	}
	g.t.Fatal("no leader after 200 ticks")
	return -1
}

// produce proposes one batch of n records on id and settles; it returns the
// proposal id and the proposal error.
func (g *group) produce(id int32, n int) (uint64, error) {
	g.nextID++
	recs := make([]storage.Record, n)
	for i := range recs {
		recs[i] = storage.Record{Value: fmt.Appendf(nil, "p%d-%d", g.nextID, i)}
	}
	err := g.nodes[id].Propose(g.nextID, storage.NewBatch(recs))
	g.settle()
	return g.nextID, err
}

func (g *group) offsets(id int32) []uint64 {
	var out []uint64
	for _, e := range g.applied[id] {
		out = append(out, e.ProposalID)
	}
	return out
}

// checkSame fails unless every live replica applied the same entries, in
// the same order, with the same terms and offsets.
func (g *group) checkSame() {
	g.t.Helper()
	var ref []Entry
	var refID int32
	for _, id := range g.alive() {
		got := g.applied[id]
		if ref == nil {
			ref, refID = got, id
			continue
		}
		if len(got) != len(ref) {
			g.t.Fatalf("replica %d applied %d entries, replica %d %d", id, len(got), refID, len(ref))
		}
		for i := range got {
			a, b := got[i], ref[i]
			if a.ProposalID != b.ProposalID || a.Term != b.Term || a.Index != b.Index {
				g.t.Fatalf("replica %d entry %d %+v; replica %d %+v", id, i, a, refID, b)
			}
		}
	}
}

// checkAckedKept fails if an acknowledged proposal is missing on a live replica.
func (g *group) checkAckedKept() {
	g.t.Helper()
	for _, id := range g.alive() {
		have := g.offsets(id)
		for p := range g.acked {
			if !slices.Contains(have, p) {
				g.t.Fatalf("replica %d lost acknowledged proposal %d (has %v)", id, p, have)
			}
		}
	}
}

func committed(t *testing.T, g *group, id int32, p uint64) bool {
	t.Helper()
	return slices.Contains(g.offsets(id), p)
}

// TestQuorumFailures: with 2f+1 replicas, writes commit while f are down and
// stop (refused or never committed, never acknowledged) with f+1 down; what
// was acknowledged survives every restart. RF 3 (f=1) and RF 5 (f=2).
func TestQuorumFailures(t *testing.T) {
	for _, c := range []struct{ rf, f int }{{3, 1}, {5, 2}} {
		t.Run(fmt.Sprintf("rf%d", c.rf), func(t *testing.T) {
			g := newGroup(t, c.rf)
			g.elect(1)
			p, err := g.produce(1, 3)
			if err != nil || !g.acked[p] {
				t.Fatalf("all up: err %v acked %v", err, g.acked[p])
			}
			// f replicas down: still a majority.
			for i := range c.f {
				g.crash(int32(c.rf - i))
			}
			p, err = g.produce(1, 2)
			if err != nil || !g.acked[p] {
				t.Fatalf("%d down: err %v acked %v", c.f, err, g.acked[p])
			}
			if st := g.nodes[1].Status(); st.CommittedEnd != 5 {
				t.Fatalf("HW %d, want 5", st.CommittedEnd)
			}
			// f+1 down: the leader takes the proposal but cannot commit it,
			// and steps down (CheckQuorum) after an election timeout.
			g.crash(int32(c.rf - c.f))
			stuck, err := g.produce(1, 1)
			if err != nil {
				t.Fatalf("proposal on the leader: %v", err)
			}
			g.tick(30)
			if g.acked[stuck] {
				t.Fatalf("%d of %d down: a write committed", c.f+1, c.rf)
			}
			if st := g.nodes[1].Status(); st.Role == "leader" || st.CommittedEnd != 5 {
				t.Fatalf("%d down: status %+v; want a stepped-down node at HW 5", c.f+1, st)
			}
			if _, err := g.produce(1, 1); !errors.Is(err, kerr.NotLeaderForPartition) {
				t.Fatalf("produce without a majority: %v, want NOT_LEADER_OR_FOLLOWER", err)
			}
			// Everyone back: a leader is elected, every acknowledged write
			// is on every replica, and the logs are identical.
			for _, id := range g.ids {
				if g.nodes[id] == nil {
					g.start(id)
				}
			}
			l := g.waitLeader()
			if _, err := g.produce(l, 1); err != nil {
				t.Fatal(err)
			}
			g.checkAckedKept()
			g.checkSame()
		})
	}
}

// TestQuorumKillLeader: the leader dies; the others elect a new one in a
// higher term, acknowledged writes survive, and a write the old leader took
// while cut off from the rest (never acknowledged) is discarded when it
// comes back.
func TestQuorumKillLeader(t *testing.T) {
	g := newGroup(t, 3)
	g.elect(1)
	for range 3 {
		if _, err := g.produce(1, 2); err != nil {
			t.Fatal(err)
		}
	}
	term1 := g.nodes[1].Status().Term

	// Cut the leader off, then have it take a write it cannot commit.
	for _, o := range []int32{2, 3} {
		g.cut[[2]int32{1, o}], g.cut[[2]int32{o, 1}] = true, true
	}
	lost, err := g.produce(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	g.crash(1)
	l := g.waitLeader()
	st := g.nodes[l].Status()
	if l == 1 || st.Term <= term1 {
		t.Fatalf("new leader %d term %d; want 2 or 3 in a term above %d", l, st.Term, term1)
	}
	after, err := g.produce(l, 1)
	if err != nil || !g.acked[after] {
		t.Fatalf("write to the new leader: %v", err)
	}

	// The old leader restarts from its state file and follows.
	clear(g.cut)
	g.start(1)
	g.tick(5)
	if _, err := g.produce(l, 1); err != nil {
		t.Fatal(err)
	}
	g.checkAckedKept()
	g.checkSame()
	if committed(t, g, 1, lost) || g.acked[lost] {
		t.Fatal("the old leader's uncommitted write survived")
	}
	for _, e := range g.applied[1] {
		if e.ProposalID == after && e.Term != st.Term {
			t.Fatalf("entry of the new leader has term %d, want %d", e.Term, st.Term)
		}
	}
	if st := g.nodes[1].Status(); st.Role != "follower" || st.Leader != l || st.Term < g.nodes[l].Status().Term {
		t.Fatalf("old leader status %+v", st)
	}
}

// TestQuorumRestartReplays: a replica's Raft state survives a crash: after a
// restart it keeps its term and vote and hands out every committed entry
// again, so a segment log that lost unsynced appends gets them back.
func TestQuorumRestartReplays(t *testing.T) {
	g := newGroup(t, 3)
	g.elect(1)
	for range 4 {
		if _, err := g.produce(1, 3); err != nil {
			t.Fatal(err)
		}
	}
	want := g.offsets(2)
	term := g.nodes[2].Status().Term
	g.crash(2)
	g.applied[2] = g.applied[2][:1] // the segment log lost what it had not synced
	g.start(2)
	if st := g.nodes[2].Status(); st.Term != term {
		t.Fatalf("term after restart %d, want %d", st.Term, term)
	}
	g.tick(3)
	if got := g.offsets(2); !slices.Equal(got, want) {
		t.Fatalf("after restart applied %v, want %v", got, want)
	}
	g.checkSame()
}

// TestQuorumRefusals: bad configurations and proposals on followers get
// Kafka's codes, never a panic.
func TestQuorumRefusals(t *testing.T) {
	if _, err := Open(Config{ID: 4, Voters: []int32{1, 2, 3}, Dir: t.TempDir()}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("not a replica: %v", err)
	}
	if _, err := Open(Config{ID: 1, Voters: []int32{1, 0}, Dir: t.TempDir()}); !errors.Is(err, kerr.InvalidReplicaAssignment) {
		t.Fatalf("replica 0: %v", err)
	}
	g := newGroup(t, 3)
	g.elect(2)
	if _, err := g.produce(1, 1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("produce on a follower: %v", err)
	}
	if err := g.nodes[1].Step(raftpb.Message{To: 3, From: 2, Type: raftpb.MsgHeartbeat}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("misaddressed message: %v", err)
	}
}

// TestQuorumTornStateFile: a crash mid-write leaves part of a record at
// the end of the state file; opening cuts it and the replica catches up
// from the leader.
func TestQuorumTornStateFile(t *testing.T) {
	g := newGroup(t, 3)
	g.elect(1)
	for range 3 {
		if _, err := g.produce(1, 2); err != nil {
			t.Fatal(err)
		}
	}
	g.crash(3)
	path := filepath.Join(g.dirs[3], StateFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the last record in half, then add bytes that are no record.
	if err := os.Truncate(path, st.Size()-5); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 2, 3})
	f.Close()
	g.start(3)
	g.tick(3)
	if _, err := g.produce(1, 1); err != nil {
		t.Fatal(err)
	}
	g.checkAckedKept()
	g.checkSame()
}

// TestQuorumCompaction: the state file is compacted once CompactEntries
// entries are applied, so it stays bounded however many writes come; a
// replica down across compactions is sent a snapshot (its records copied
// from a replica that has them) and then entries, and ends with the same
// log; a restart after a compaction starts from the snapshot.
func TestQuorumCompaction(t *testing.T) {
	g := newGroup(t, 3)
	g.compactEntries = 8
	for _, id := range g.ids { // reopen with compaction on
		g.crash(id)
		g.start(id)
	}
	g.elect(1)
	g.crash(3)
	var sizes []int64
	for i := range 60 {
		if _, err := g.produce(1, 2); err != nil {
			t.Fatal(err)
		}
		if i >= 20 {
			st, err := os.Stat(filepath.Join(g.dirs[1], StateFile))
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, st.Size())
		}
	}
	st := g.nodes[1].Status()
	if st.FirstIndex < 40 {
		t.Fatalf("after 60 writes the state file starts at index %d; want a compacted one", st.FirstIndex)
	}
	// Bounded: at most CompactEntries applied entries plus a snapshot and
	// the hard state; the size after 20 writes is as large as it gets.
	if m := slices.Max(sizes); m > 2*sizes[0] {
		t.Fatalf("state file sizes %v grow", sizes)
	}
	g.start(3)
	g.tick(5)
	if _, err := g.produce(1, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := g.leo(3), g.leo(1); got != want {
		t.Fatalf("replica 3 back at LEO %d, leader %d", got, want)
	}
	g.checkAckedKept()
	g.checkSame()
	// A restart of a compacted replica replays from its snapshot.
	g.crash(2)
	g.start(2)
	g.tick(3)
	if _, err := g.produce(1, 1); err != nil {
		t.Fatal(err)
	}
	g.checkSame()
	t.Logf("state file %d–%d bytes over writes 20–60; first index %d", slices.Min(sizes), slices.Max(sizes), st.FirstIndex)
}

// TestQuorumBadSnapshot: a snapshot message whose data is not a segment
// log's records from its start to its end is refused with CORRUPT_MESSAGE
// before Raft takes it, and the replica goes on.
func TestQuorumBadSnapshot(t *testing.T) {
	g := newGroup(t, 3)
	g.elect(1)
	recs := storage.NewBatch([]storage.Record{{Value: []byte("x")}}) // offset 0, one record
	for _, data := range [][]byte{
		nil,
		[]byte("short"),
		EncodeSnapshotData(SnapshotData{Start: 5, End: 2}),
		EncodeSnapshotData(SnapshotData{Start: 0, End: 4, Records: recs}),            // ends at 1
		EncodeSnapshotData(SnapshotData{Start: 3, End: 4, Records: recs}),            // starts at 0
		EncodeSnapshotData(SnapshotData{Start: 0, End: 1, Records: append(recs, 1)}), // a torn tail
	} {
		m := raftpb.Message{Type: raftpb.MsgSnap, From: 1, To: 2, Term: g.nodes[1].Status().Term,
			Snapshot: &raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: 100, Term: 1}}}
		if err := g.nodes[2].Step(m); !errors.Is(err, kerr.CorruptMessage) {
			t.Errorf("snapshot data %q: %v, want CORRUPT_MESSAGE", data, err)
		}
	}
	if _, err := g.produce(1, 1); err != nil {
		t.Fatal(err)
	}
	g.checkSame()
}

// TestElectionsRepeat: the same ticks and messages elect the same way in
// every run. Raft draws its own election timeouts from crypto/rand; the
// node keeps Raft's timer below where any of them fires and campaigns at
// a timeout of its own, seeded by its id, term and campaigns. Each of 8
// runs crashes the leader of a 5-replica group three times over and
// records who led, in which term, after how many ticks (restarting the
// crashed one each time); all must agree.
func TestElectionsRepeat(t *testing.T) {
	run := func() string {
		g := newGroup(t, 5)
		g.elect(1)
		var out []string
		for range 3 {
			old := g.leader()
			g.crash(old)
			ticks := 0
			for g.leader() < 0 && ticks < 200 {
				g.tick(1)
				ticks++
			}
			l := g.leader()
			if l < 0 {
				t.Fatal("no leader after 200 ticks")
			}
			out = append(out, fmt.Sprintf("leader %d term %d after %d ticks", l, g.nodes[l].Status().Term, ticks))
			g.start(old) // back as a follower
			g.tick(1)
		}
		return strings.Join(out, "; ")
	}
	first := run()
	for i := 2; i <= 8; i++ {
		if got := run(); got != first {
			t.Fatalf("run %d: %s\nrun 1: %s", i, got, first)
		}
	}
	t.Log(first)
}

package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestNewLogCreatesFilesLazily checks a new log's fast path: creating it
// makes only its directory; the first append creates the segment files;
// the leader-epoch checkpoint and the directory entries are made durable at
// the first flush, before the recovery point moves.
func TestNewLogCreatesFilesLazily(t *testing.T) {
	cfg := smallConfig()
	d, l, _ := openTestLog(t, cfg)
	names := func() []string {
		es, err := os.ReadDir(l.Dir())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	if _, err := l.SetLeaderEpochs([]EpochEntry{{Epoch: 0, StartOffset: 0}}); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("a new log holds %v, want nothing until its first write", got)
	}
	produce(t, l, 0, 0, 3, 2, 100)
	want := []string{"00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex"}
	if got := names(); !slices.Equal(got, want) {
		t.Fatalf("after the first append: %v, want %v", got, want)
	}
	if !d.tracker.isNew(l.Dir()) {
		t.Fatal("the directory counts as durable before any flush")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := names(); !slices.Contains(got, LeaderEpochCheckpointFile) {
		t.Fatalf("after the first flush: %v, want the leader-epoch checkpoint too", got)
	}
	if d.tracker.isNew(l.Dir()) {
		t.Fatal("the directory is still waiting for its fsync after a flush")
	}
	epochs, err := readEpochCheckpoint(d.fs, l.Dir())
	if err != nil || !slices.Equal(epochs, l.Epochs()) {
		t.Fatalf("checkpoint holds %v (%v), want %v", epochs, err, l.Epochs())
	}
}

// TestNewLogSurvivesCrashAndPowerLossBeforeFlush: a never-flushed log's
// records come back after a process crash (page cache), with their leader
// epochs rebuilt from the batches though the checkpoint was never written;
// after a power loss the log is empty, not damaged.
func TestNewLogSurvivesCrashAndPowerLossBeforeFlush(t *testing.T) {
	cfg := smallConfig()
	for _, power := range []bool{false, true} {
		d, l, clock := openTestLog(t, cfg)
		produce(t, l, 0, 0, 2, 2, 100)
		produce(t, l, 3, 4, 2, 2, 100)
		wantEpochs := l.Epochs()
		if power {
			if _, err := d.PowerLoss(); err != nil {
				t.Fatal(err)
			}
		} else {
			d.Crash()
		}
		_, l2 := reopen(t, d, clock, cfg)
		if power {
			if leo := l2.LogEndOffset(); leo != 0 || len(l2.Epochs()) != 0 {
				t.Fatalf("after power loss: LEO %d, epochs %v, want an empty log", leo, l2.Epochs())
			}
			continue
		}
		if leo := l2.LogEndOffset(); leo != 8 {
			t.Fatalf("after a crash: LEO %d, want 8", leo)
		}
		if !slices.Equal(l2.Epochs(), wantEpochs) {
			t.Fatalf("after a crash: epochs %v, want %v", l2.Epochs(), wantEpochs)
		}
		if _, err := os.Stat(filepath.Join(l2.Dir(), LeaderEpochCheckpointFile)); err != nil {
			t.Fatalf("the rebuilt epochs were not checkpointed: %v", err)
		}
	}
}

package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"tidemark/storage/vfs"
)

// Kafka's checkpoint files are text: a version line ("0"), a line with the
// number of entries, then one entry per line with space-separated fields.
const checkpointVersion = 0

// Checkpoint file names, as in a Kafka log dir.
const (
	RecoveryPointCheckpointFile = "recovery-point-offset-checkpoint"
	ReplicationCheckpointFile   = "replication-offset-checkpoint"
	LogStartCheckpointFile      = "log-start-offset-checkpoint"
	LeaderEpochCheckpointFile   = "leader-epoch-checkpoint"
	// CleanShutdownFile marks a log dir that was closed cleanly; its presence
	// skips recovery on the next open.
	CleanShutdownFile = ".kafka_cleanshutdown"
)

// writeCheckpoint writes lines in the checkpoint format atomically: a temp
// file, fsync, rename over the old file, fsync of the directory. A reader (or a
// power cut) sees the old file or the new one, never half of one.
func writeCheckpoint(fsys vfs.FS, path string, lines []string) error {
	return writeFileAtomic(fsys, path, checkpointBytes(lines))
}

// writeLogCheckpoint is writeCheckpoint for a file inside a log's own
// directory. While that directory is new (its log never flushed: see
// syncTracker.newDirs) the file is only kept in memory and written, durably,
// at the log's first flush. Nothing is lost by the wait: a log that was
// never flushed is re-read from offset 0 after a crash, which rebuilds its
// leader-epoch cache from its batches, and a power cut may take its whole
// directory anyway. This keeps creating a thousand partitions from costing
// thousands of file operations and fsyncs.
func writeLogCheckpoint(e *env, path string, lines []string) error {
	data := checkpointBytes(lines)
	if e.tracker.deferWrite(filepath.Dir(path), path, data) {
		return nil
	}
	return writeFileAtomic(e.fs, path, data)
}

func checkpointBytes(lines []string) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func writeFileAtomic(fsys vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	return vfs.SyncDir(fsys, filepath.Dir(path))
}

// readCheckpoint returns the entry lines, each split into fields, each with
// exactly want fields. A missing file is no entries.
func readCheckpoint(fsys vfs.FS, path string, want int) ([][]string, error) {
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return strings.TrimSpace(sc.Text()), true
	}
	bad := func(why string) error { return fmt.Errorf("checkpoint %s: %s", path, why) }
	v, ok := next()
	if !ok || v != strconv.Itoa(checkpointVersion) {
		return nil, bad(fmt.Sprintf("version line %q, want %d", v, checkpointVersion))
	}
	n, ok := next()
	count, err := strconv.Atoi(n)
	if !ok || err != nil || count < 0 {
		return nil, bad(fmt.Sprintf("count line %q", n))
	}
	entries := make([][]string, 0, min(count, 1<<16))
	for i := 0; i < count; i++ {
		l, ok := next()
		if !ok {
			return nil, bad(fmt.Sprintf("%d entries, want %d", i, count))
		}
		f := strings.Fields(l)
		if len(f) != want {
			return nil, bad(fmt.Sprintf("entry %q has %d fields, want %d", l, len(f), want))
		}
		entries = append(entries, f)
	}
	return entries, nil
}

// writeOffsetCheckpoint writes a per-log-dir "<topic> <partition> <offset>" file.
func writeOffsetCheckpoint(fsys vfs.FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeCheckpoint(fsys, path, lines)
}

// readOffsetCheckpoint reads a file written by writeOffsetCheckpoint. A
// missing file is an empty map.
func readOffsetCheckpoint(fsys vfs.FS, path string) (map[TopicPartition]int64, error) {
	entries, err := readCheckpoint(fsys, path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(entries))
	for _, e := range entries {
		p, err1 := strconv.ParseInt(e[1], 10, 32)
		off, err2 := strconv.ParseInt(e[2], 10, 64)
		tp := TopicPartition{Topic: e[0], Partition: int32(p)}
		if err1 != nil || err2 != nil || tp.Validate() != nil || off < 0 {
			return nil, fmt.Errorf("checkpoint %s: bad entry %q", path, strings.Join(e, " "))
		}
		out[tp] = off
	}
	return out, nil
}

package lessons

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tidemark/events"
	"tidemark/storage"
)

// The cluster's part of the vocabulary that reads what Kafka writes to
// disk and what a follower was told, so a lesson checks on the real files
// what it used to say in text: the bytes of a stored batch header, the
// recovery-point and leader-epoch checkpoints, the diverging epoch a
// leader answered and where the follower cut its log.

func addFileVocab() {
	// batch-base-offset and batch-leader-epoch read the header of the batch
	// holding OFFSET from the .log file's bytes: the producer sends base
	// offset 0 and no leader epoch; the leader writes both on append.
	queries["batch-base-offset"] = querySpec{"broker topic int", batchQuery(func(h storage.BatchHeader) Value { return num(h.BaseOffset) })}
	queries["batch-leader-epoch"] = querySpec{"broker topic int", batchQuery(func(h storage.BatchHeader) Value { return num(int64(h.PartitionLeaderEpoch)) })}
	// checkpointed-recovery-point is the topic's entry in the log
	// directory's recovery-point-offset-checkpoint file; -1 if none.
	queries["checkpointed-recovery-point"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		b := e.c.Broker(id(a[0]))
		if b == nil {
			return num(-1), nil
		}
		return num(readCheckpoint(filepath.Join(b.LogDir().Path(), storage.RecoveryPointCheckpointFile), a[1])), nil
	}}
	// epoch-checkpoint lists the partition's leader-epoch-checkpoint file
	// as EPOCH@START_OFFSET entries; empty if there is none.
	queries["epoch-checkpoint"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		l := e.Log(id(a[0]), a[1])
		if l == nil {
			return list(nil), nil
		}
		return list(epochCheckpoint(filepath.Join(l.Dir(), storage.LeaderEpochCheckpointFile))), nil
	}}
	// diverging-epoch is the last diverging epoch broker's fetches of
	// topic were answered with in this run, as EPOCH@END_OFFSET (the
	// leader's end offset for the follower's last epoch, KIP-320/KIP-595's
	// Fetch v12 DivergingEpoch); none if no answer had one.
	queries["diverging-epoch"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		out := "none"
		for _, ev := range e.events(id(a[0]), a[1], events.KindFetch) {
			if ev.MessageKey == "event.fetch.diverging" && len(ev.MessageArgs) >= 2 {
				out = ev.MessageArgs[0] + "@" + ev.MessageArgs[1]
			}
		}
		return str(out), nil
	}}
	// truncation-point is the offset broker's last truncation of topic cut
	// its log to in this run; -1 if it truncated nothing.
	queries["truncation-point"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		out := int64(-1)
		for _, ev := range e.events(id(a[0]), a[1], events.KindTruncation) {
			if ev.Offsets != nil {
				out = ev.Offsets.Base
			}
		}
		return num(out), nil
	}}
	// truncation-by is the cause of broker's last truncation of topic
	// (diverging-epoch, high-watermark, …); none if it truncated nothing.
	queries["truncation-by"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		out := "none"
		for _, ev := range e.events(id(a[0]), a[1], events.KindTruncation) {
			if len(ev.MessageArgs) > 0 {
				w, _, _ := strings.Cut(ev.MessageArgs[0], events.WordArgSep)
				out = strings.TrimPrefix(w, "event.word.cause.")
			}
		}
		return str(out), nil
	}}
}

// events returns the run's events of kind about broker's partition 0 of
// topic, oldest first.
func (e *Env) events(broker int32, topic string, kind events.Kind) []events.Event {
	evs, _ := e.c.Bus().Since(e.start, 0)
	var out []events.Event
	for _, ev := range evs {
		if ev.Kind == kind && ev.Broker == broker && ev.Topic == topic && ev.Partition == 0 {
			out = append(out, ev)
		}
	}
	return out
}

func batchQuery(f func(storage.BatchHeader) Value) func(e *Env, a []string) (Value, error) {
	return func(e *Env, a []string) (Value, error) {
		l := e.Log(id(a[0]), a[1])
		if l == nil {
			return Value{}, fmt.Errorf("broker %s has no log of %s", a[0], a[1])
		}
		off := int64(id(a[2]))
		for _, s := range segments(e, id(a[0]), a[1]) {
			if off < s.BaseOffset || off >= s.NextOffset {
				continue
			}
			b, err := os.ReadFile(filepath.Join(l.Dir(), s.Files[0]))
			if err != nil {
				return Value{}, err
			}
			for _, h := range storage.ScanBatchHeaders(b) {
				if h.BaseOffset <= off && off <= h.LastOffset() {
					return f(h), nil
				}
			}
		}
		return Value{}, fmt.Errorf("no batch holds offset %d on broker %s", off, a[0])
	}
}

// epochCheckpoint reads a leader-epoch-checkpoint file (version line,
// count line, "epoch startOffset" lines) as EPOCH@START entries.
func epochCheckpoint(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	var out []string
	for i, line := range lines {
		f := strings.Fields(line)
		if i >= 2 && len(f) == 2 {
			out = append(out, f[0]+"@"+f[1])
		}
	}
	return out
}

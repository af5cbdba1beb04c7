package web

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/storage"
)

// Bounds of the inspection routes.
const (
	// MaxWindow is the largest record window (limit) the partition view
	// reads per replica; DefaultWindow is used when limit is absent.
	MaxWindow     = 500
	DefaultWindow = events.RecordWindow
	// MaxIndexEntries is how many .index and .timeindex entries the segment
	// explorer lists per segment; the totals say how many there are.
	MaxIndexEntries = 1000
	// maxTruncations is how many truncations the partition view lists.
	maxTruncations = 64
)

// PartitionView is the body of GET /api/v1/topics/{topic}/partitions/{p}.
// HighWatermark is the partition's: the leader's HW, or the highest a
// replica knows while there is no leader. A record is committed when its
// offset is below it.
type PartitionView struct {
	Topic         string        `json:"topic"`
	PartitionInfo               // leader, leader epoch, replicas, ISR
	HighWatermark int64         `json:"high_watermark"`
	ReplicaLogs   []ReplicaView `json:"replica_logs"`
	// Truncations are the recorded truncation events of this partition,
	// oldest first (at most 64, as far back as the event history goes).
	Truncations []TruncationView `json:"truncations"`
}

// ReplicaView is one replica in the partition view. Source says where it was
// read: "log" (the running broker's log, now) or "snapshot" (the last state
// the lab saw, for a broker that is not running).
type ReplicaView struct {
	Broker         int32                    `json:"broker"`
	BrokerState    events.BrokerState       `json:"broker_state"`
	Leader         bool                     `json:"leader"`
	InSync         bool                     `json:"in_sync"`
	Source         string                   `json:"source"`
	LEO            int64                    `json:"leo"`
	HW             int64                    `json:"hw"`
	LogStartOffset int64                    `json:"log_start_offset"`
	EpochCache     []events.EpochEntry      `json:"epoch_cache"`
	Records        []RecordView             `json:"records"`
	Truncated      []events.TruncatedRecord `json:"truncated"`
}

// RecordView is one record in a replica's window.
type RecordView struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value"`
	Committed   bool   `json:"committed"`
}

// TruncationView is one truncation: which replica, its new LEO, what it
// removed and why (Message names the rule).
type TruncationView struct {
	Seq       uint64                   `json:"seq"`
	Time      time.Time                `json:"time"`
	Broker    int32                    `json:"broker"`
	LEO       int64                    `json:"leo"`
	Message   string                   `json:"message,omitempty"`
	Truncated []events.TruncatedRecord `json:"truncated"`
}

func (s *Server) getPartition(c echo.Context) error {
	name, err := topicParam(c)
	if err != nil {
		return err
	}
	snap := s.opts.Lab.Snapshot()
	t, err := snapTopic(&snap, name)
	if err != nil {
		return err
	}
	p, err := partitionParam(c, t)
	if err != nil {
		return err
	}
	offset, err := queryOffset(c, "offset", -1)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, DefaultWindow, MaxWindow)
	if err != nil {
		return err
	}
	ti := topicInfo(&events.Topic{Name: t.Name, Partitions: []events.Partition{*p}})
	v := PartitionView{Topic: name, PartitionInfo: ti.Partitions[0], HighWatermark: 0,
		ReplicaLogs: make([]ReplicaView, 0, len(p.ReplicaLogs)), Truncations: s.truncations(name, p.Partition)}
	for _, r := range p.ReplicaLogs {
		if r.Broker == p.Leader || p.Leader == events.NoBroker {
			v.HighWatermark = max(v.HighWatermark, r.HW)
		}
	}
	for _, r := range p.ReplicaLogs {
		v.ReplicaLogs = append(v.ReplicaLogs, s.replicaView(&snap, name, p, r, offset, limit))
	}
	// Read from the logs after the snapshot: a leader's HW may have moved on.
	for _, rv := range v.ReplicaLogs {
		if rv.Leader && rv.Source == "log" {
			v.HighWatermark = rv.HW
		}
	}
	for i := range v.ReplicaLogs {
		for j := range v.ReplicaLogs[i].Records {
			rec := &v.ReplicaLogs[i].Records[j]
			rec.Committed = rec.Offset < v.HighWatermark
		}
	}
	return c.JSON(http.StatusOK, v)
}

// replicaView reads one replica: from its running broker's log when the lab
// lets us, else (crashed broker, or the log is gone) from the snapshot.
func (s *Server) replicaView(snap *events.Snapshot, topic string, p *events.Partition, r events.Replica, offset int64, limit int) ReplicaView {
	rv := ReplicaView{Broker: r.Broker, Leader: r.Broker == p.Leader, Source: "snapshot",
		LEO: r.LEO, HW: r.HW, LogStartOffset: r.LogStartOffset,
		EpochCache: nonNil(r.EpochCache), Records: []RecordView{}, Truncated: nonNil(r.Truncated)}
	for _, id := range p.ISR {
		rv.InSync = rv.InSync || id == r.Broker
	}
	if b := snap.Broker(r.Broker); b != nil {
		rv.BrokerState = b.State
	}
	if s.insp != nil && rv.BrokerState != events.BrokerCrashed {
		if l, hw, err := s.insp.ReplicaLog(r.Broker, topic, p.Partition); err == nil {
			if recs, ok := readWindow(l, offset, limit); ok {
				rv.Source, rv.HW, rv.Records = "log", hw, recs
				rv.LEO, rv.LogStartOffset = l.LogEndOffset(), l.LogStartOffset()
				rv.EpochCache = make([]events.EpochEntry, 0, 4)
				for _, e := range l.Epochs() {
					rv.EpochCache = append(rv.EpochCache, events.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
				}
				return rv
			}
		}
	}
	// The snapshot keeps the newest records only; show those in the window.
	for _, x := range r.Records {
		if offset < 0 && x.Offset >= r.LEO-int64(limit) || offset >= 0 && x.Offset >= offset && x.Offset < offset+int64(limit) {
			rv.Records = append(rv.Records, RecordView{Offset: x.Offset, LeaderEpoch: x.LeaderEpoch, Key: x.Key, Value: x.Value})
		}
	}
	return rv
}

// readWindow reads up to limit records of l from offset on, or its newest
// limit records when offset < 0. An offset outside the log gives an empty
// window; ok is false only when the log cannot be read (closed under us).
func readWindow(l *storage.Log, offset int64, limit int) ([]RecordView, bool) {
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if offset < 0 {
		offset = max(start, end-int64(limit))
	}
	out := []RecordView{}
	if offset < start || offset >= end {
		return out, true
	}
	batches, err := l.ReadBatches(offset, end, limit)
	if err != nil {
		return nil, false
	}
	for _, b := range batches {
		for _, r := range b.Records {
			if r.Offset >= offset && len(out) < limit {
				out = append(out, RecordView{Offset: r.Offset, LeaderEpoch: b.Header.PartitionLeaderEpoch, Key: string(r.Key), Value: string(r.Value)})
			}
		}
	}
	return out, true
}

// truncations lists the partition's truncation events still in the bus's
// history, oldest first, at most maxTruncations (the newest).
func (s *Server) truncations(topic string, partition int32) []TruncationView {
	evs, _ := s.opts.Lab.Bus().Since(0, 0)
	out := []TruncationView{}
	for _, e := range evs {
		if e.Kind != events.KindTruncation || e.Topic != topic || e.Partition != partition {
			continue
		}
		tv := TruncationView{Seq: e.Seq, Time: e.Time, Broker: e.Broker, Message: e.Message, Truncated: nonNil(e.Truncated)}
		if e.Offsets != nil {
			tv.LEO = e.Offsets.LEO
		}
		out = append(out, tv)
	}
	if n := len(out) - maxTruncations; n > 0 {
		out = out[n:]
	}
	return out
}

// replicaLog resolves the {id}/{topic}/{partition} path of the segment
// routes to a running broker's log: 400 for malformed ids and names, 404
// for an unknown broker, topic or partition, or a broker with no replica of
// it, 503 BROKER_NOT_AVAILABLE for a broker that is not running.
func (s *Server) replicaLog(c echo.Context) (int32, string, int32, *storage.Log, error) {
	if s.insp == nil {
		return 0, "", 0, nil, notImplemented("read replica logs")
	}
	snap := s.opts.Lab.Snapshot()
	id, err := brokerParam(c, &snap)
	if err != nil {
		return 0, "", 0, nil, err
	}
	name, err := topicParam(c)
	if err != nil {
		return 0, "", 0, nil, err
	}
	t, err := snapTopic(&snap, name)
	if err != nil {
		return 0, "", 0, nil, err
	}
	p, err := partitionParam(c, t)
	if err != nil {
		return 0, "", 0, nil, err
	}
	if p.Replica(id) == nil {
		return 0, "", 0, nil, KafkaError(http.StatusNotFound, kerr.UnknownTopicOrPartition,
			"broker "+strconv.Itoa(int(id))+" has no replica of "+name+"-"+strconv.Itoa(int(p.Partition))+"; its replicas are on "+idList(p.Replicas))
	}
	l, _, err := s.insp.ReplicaLog(id, name, p.Partition)
	if err != nil {
		return 0, "", 0, nil, LabError(err)
	}
	return id, name, p.Partition, l, nil
}

func idList(ids []int32) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += strconv.Itoa(int(id))
	}
	return "brokers " + out
}

// SegmentsResponse is the body of GET …/segments: one replica's files on disk.
type SegmentsResponse struct {
	Broker         int32         `json:"broker"`
	Topic          string        `json:"topic"`
	Partition      int32         `json:"partition"`
	Dir            string        `json:"dir"`
	LogStartOffset int64         `json:"log_start_offset"`
	LEO            int64         `json:"leo"`
	RecoveryPoint  int64         `json:"recovery_point"`
	Segments       []SegmentView `json:"segments"`
}

// SegmentView is one segment: its three files with their sizes on disk (-1:
// not written yet), how much of the .log is fsynced, and its index entries (at most MaxIndexEntries of each kind;
// the totals count them all).
type SegmentView struct {
	BaseOffset     int64            `json:"base_offset"`
	NextOffset     int64            `json:"next_offset"`
	Active         bool             `json:"active"`
	LogFile        string           `json:"log_file"`
	IndexFile      string           `json:"index_file"`
	TimeIndexFile  string           `json:"time_index_file"`
	LogBytes       int64            `json:"log_bytes"`
	SyncedLogBytes int64            `json:"synced_log_bytes"`
	MaxTimestamp   int64            `json:"max_timestamp"`
	IndexEntries   []IndexEntryView `json:"index_entries"`
	IndexTotal     int              `json:"index_entries_total"`
	TimeIndex      []TimeEntryView  `json:"time_index_entries"`
	TimeIndexTotal int              `json:"time_index_entries_total"`
	IndexBytes     int64            `json:"index_bytes"`
	TimeIndexBytes int64            `json:"time_index_bytes"`
}

// IndexEntryView is one .index entry with its absolute offset.
type IndexEntryView struct {
	RelativeOffset int32 `json:"relative_offset"`
	Offset         int64 `json:"offset"`
	Position       int32 `json:"position"`
}

// TimeEntryView is one .timeindex entry with its absolute offset.
type TimeEntryView struct {
	Timestamp      int64 `json:"timestamp"`
	RelativeOffset int32 `json:"relative_offset"`
	Offset         int64 `json:"offset"`
}

// fileSize is the size of dir/name on disk; -1 if it cannot be read (an
// index file of the active segment may exist only in memory so far).
func fileSize(dir, name string) int64 {
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return -1
	}
	return fi.Size()
}

func (s *Server) getSegments(c echo.Context) error {
	id, name, partition, l, err := s.replicaLog(c)
	if err != nil {
		return err
	}
	segs, err := l.Segments()
	if err != nil {
		return closedOr(err, id)
	}
	r := SegmentsResponse{Broker: id, Topic: name, Partition: partition, Dir: l.Dir(),
		LogStartOffset: l.LogStartOffset(), LEO: l.LogEndOffset(), RecoveryPoint: l.RecoveryPoint(), Segments: make([]SegmentView, 0, len(segs))}
	for _, sg := range segs {
		v := SegmentView{BaseOffset: sg.BaseOffset, NextOffset: sg.NextOffset, Active: sg.Active,
			LogFile: sg.Files[0], IndexFile: sg.Files[1], TimeIndexFile: sg.Files[2],
			LogBytes: sg.LogBytes, SyncedLogBytes: sg.SyncedLogBytes, MaxTimestamp: sg.MaxTimestamp,
			IndexEntries: make([]IndexEntryView, 0, min(len(sg.Index), MaxIndexEntries)), IndexTotal: len(sg.Index),
			TimeIndex: make([]TimeEntryView, 0, min(len(sg.TimeIndex), MaxIndexEntries)), TimeIndexTotal: len(sg.TimeIndex),
			IndexBytes: fileSize(l.Dir(), sg.Files[1]), TimeIndexBytes: fileSize(l.Dir(), sg.Files[2])}
		for _, e := range sg.Index[:min(len(sg.Index), MaxIndexEntries)] {
			v.IndexEntries = append(v.IndexEntries, IndexEntryView{RelativeOffset: e.RelativeOffset, Offset: sg.BaseOffset + int64(e.RelativeOffset), Position: e.Position})
		}
		for _, e := range sg.TimeIndex[:min(len(sg.TimeIndex), MaxIndexEntries)] {
			v.TimeIndex = append(v.TimeIndex, TimeEntryView{Timestamp: e.Timestamp, RelativeOffset: e.RelativeOffset, Offset: sg.BaseOffset + int64(e.RelativeOffset)})
		}
		r.Segments = append(r.Segments, v)
	}
	return c.JSON(http.StatusOK, r)
}

// closedOr maps a read from a log that closed under us (its broker just
// stopped) to 503 BROKER_NOT_AVAILABLE; other errors go to LabError.
func closedOr(err error, id int32) error {
	if errors.Is(err, storage.ErrClosed) {
		return KafkaError(http.StatusServiceUnavailable, kerr.BrokerNotAvailable, "broker "+strconv.Itoa(int(id))+" stopped while its log was read")
	}
	return LabError(err)
}

// LookupView is the body of GET …/lookup?offset=N: each step of finding
// offset N in the replica's files, as a fetch does.
type LookupView struct {
	Offset int64 `json:"offset"`
	// SegmentProbes is the binary search over the segments' base offsets.
	SegmentProbes     []ProbeView `json:"segment_probes"`
	SegmentBaseOffset int64       `json:"segment_base_offset"`
	SegmentFile       string      `json:"segment_file"`
	// IndexProbes is the binary search in that segment's .index;
	// IndexEntry the entry it found (null: none, the scan starts at byte 0).
	IndexProbes   []ProbeView     `json:"index_probes"`
	IndexEntry    *IndexEntryView `json:"index_entry"`
	StartPosition int64           `json:"start_position"`
	// Scanned are the batch headers read forward from StartPosition.
	Scanned      []ScanView `json:"scanned"`
	BytesScanned int64      `json:"bytes_scanned"`
	Position     int64      `json:"position"`
	Batch        BatchView  `json:"batch"`
}

// ProbeView is one comparison of a binary search: the entry's index, its
// key (an offset) and whether it is at or below the target.
type ProbeView struct {
	Index int   `json:"index"`
	Key   int64 `json:"key"`
	Below bool  `json:"below"`
}

// ScanView is one batch header read during the scan.
type ScanView struct {
	Position   int64 `json:"position"`
	BaseOffset int64 `json:"base_offset"`
	LastOffset int64 `json:"last_offset"`
	Size       int64 `json:"size"`
}

// BatchView is the header of the batch holding the offset looked up.
type BatchView struct {
	BaseOffset  int64  `json:"base_offset"`
	LastOffset  int64  `json:"last_offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Records     int32  `json:"records"`
	Size        int64  `json:"size"`
	Compression string `json:"compression"`
	CRC         uint32 `json:"crc"`
}

func probes(ps []storage.SearchProbe) []ProbeView {
	out := make([]ProbeView, len(ps))
	for i, p := range ps {
		out[i] = ProbeView{Index: p.Index, Key: p.Key, Below: p.Below}
	}
	return out
}

func (s *Server) lookup(c echo.Context) error {
	if c.QueryParam("offset") == "" {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "offset is required: …/lookup?offset=N")
	}
	offset, err := queryOffset(c, "offset", 0)
	if err != nil {
		return err
	}
	id, _, _, l, err := s.replicaLog(c)
	if err != nil {
		return err
	}
	tr, err := l.Lookup(offset)
	if err != nil {
		return closedOr(err, id)
	}
	v := LookupView{Offset: tr.Offset, SegmentProbes: probes(tr.SegmentProbes), SegmentBaseOffset: tr.SegmentBaseOffset,
		SegmentFile: tr.SegmentFile, IndexProbes: probes(tr.IndexProbes), StartPosition: tr.StartPosition,
		Scanned: make([]ScanView, len(tr.Scanned)), BytesScanned: tr.BytesScanned, Position: tr.Position,
		Batch: BatchView{BaseOffset: tr.Batch.BaseOffset, LastOffset: tr.Batch.LastOffset(), LeaderEpoch: tr.Batch.PartitionLeaderEpoch,
			Records: tr.Batch.NumRecords, Size: tr.Batch.Size(), Compression: tr.Batch.Compression(), CRC: tr.Batch.CRC}}
	if e := tr.IndexEntry; e != nil {
		v.IndexEntry = &IndexEntryView{RelativeOffset: e.RelativeOffset, Offset: tr.SegmentBaseOffset + int64(e.RelativeOffset), Position: e.Position}
	}
	for i, sc := range tr.Scanned {
		v.Scanned[i] = ScanView{Position: sc.Position, BaseOffset: sc.BaseOffset, LastOffset: sc.LastOffset, Size: sc.Size}
	}
	return c.JSON(http.StatusOK, v)
}

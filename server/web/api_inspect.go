package web

import (
	"errors"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/apiv1"
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

// PartitionView is apiv1.PartitionView.
type PartitionView = apiv1.PartitionView

// ReplicaView is apiv1.ReplicaView.
type ReplicaView = apiv1.ReplicaView

// RecordView is apiv1.RecordView.
type RecordView = apiv1.RecordView

// TruncationView is apiv1.TruncationView.
type TruncationView = apiv1.TruncationView

func (s *Server) getPartition(c echo.Context) error {
	snap := s.opts.Lab.Snapshot()
	name, p, err := pathPartition(c, &snap)
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
	return c.JSON(http.StatusOK, s.partitionView(&snap, name, p, offset, limit))
}

// partitionView builds the partition view of p (of topic name in snap),
// reading each running replica's window from its log.
func (s *Server) partitionView(snap *events.Snapshot, name string, p *events.Partition, offset int64, limit int) PartitionView {
	ti := topicInfo(&events.Topic{Name: name, Partitions: []events.Partition{*p}})
	v := PartitionView{Topic: name, PartitionInfo: ti.Partitions[0], HighWatermark: 0,
		ReplicaLogs: make([]ReplicaView, 0, len(p.ReplicaLogs)), Truncations: s.truncations(name, p.Partition)}
	for _, r := range p.ReplicaLogs {
		if r.Broker == p.Leader || p.Leader == events.NoBroker {
			v.HighWatermark = max(v.HighWatermark, r.HW)
		}
	}
	for _, r := range p.ReplicaLogs {
		v.ReplicaLogs = append(v.ReplicaLogs, s.replicaView(snap, name, p, r, offset, limit))
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
	return v
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
	if r.Txn != nil {
		lso := r.Txn.LSO
		rv.LSO = &lso
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
			rv.Records = append(rv.Records, apiv1.RecordViewOf(x))
		}
	}
	return rv
}

// readWindow reads up to limit records of l from offset on, or its newest
// limit records when offset < 0. An offset outside the log gives an empty
// window; ok is false only when the log cannot be read (closed under us).
func readWindow(l ReplicaLog, offset int64, limit int) ([]RecordView, bool) {
	start, end := l.LogStartOffset(), l.LogEndOffset()
	if offset < 0 {
		offset = max(start, end-int64(limit))
	}
	out := []RecordView{}
	if offset < start || offset >= end {
		return out, true
	}
	// A batch at a time: only each record's first bytes are kept, so 500
	// records of a megabyte are not all held at once.
	var recs []events.Record
	err := l.EachBatch(offset, end, limit, func(b storage.Batch) bool {
		n := len(recs)
		for _, r := range b.Records {
			if r.Offset >= offset && len(recs) < limit {
				recs = append(recs, events.RecordOf(r.Offset, b.Header.PartitionLeaderEpoch, r.Key, r.Value))
			}
		}
		events.MarkTxn(b.Header.Attributes, b.Header.ProducerID, recs[n:])
		return len(recs) < limit
	})
	events.MarkAborted(recs)
	for _, r := range recs {
		out = append(out, apiv1.RecordViewOf(r))
	}
	return out, err == nil
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
		tv := TruncationView{Seq: e.Seq, Time: e.Time, Broker: e.Broker, Message: e.Message, MessageKey: e.MessageKey,
			MessageArgs: e.MessageArgs, Truncated: nonNil(e.Truncated)}
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
func (s *Server) replicaLog(c echo.Context) (int32, string, int32, ReplicaLog, error) {
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

// SegmentsResponse is apiv1.SegmentsResponse.
type SegmentsResponse = apiv1.SegmentsResponse

// SegmentView is apiv1.SegmentView.
type SegmentView = apiv1.SegmentView

// IndexEntryView is apiv1.IndexEntryView.
type IndexEntryView = apiv1.IndexEntryView

// TimeEntryView is apiv1.TimeEntryView.
type TimeEntryView = apiv1.TimeEntryView

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
	r, err := segmentsView(id, name, partition, l)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// labRelative is a replica directory as seen from the lab's data directory:
// its broker's log dir and its own name (broker-1/demo-0), in Kafka's layout
// <data>/broker-<id>/<topic>-<partition>. The absolute path would tell a
// learner the server's file-system layout (in class mode, the teacher's).
func labRelative(dir string) string {
	return path.Join(filepath.Base(filepath.Dir(dir)), filepath.Base(dir))
}

// segmentsView lists the files of broker id's log l of the partition.
func segmentsView(id int32, name string, partition int32, l ReplicaLog) (SegmentsResponse, error) {
	segs, err := l.Segments()
	if err != nil {
		return SegmentsResponse{}, closedOr(err, id)
	}
	r := SegmentsResponse{Broker: id, Topic: name, Partition: partition, Dir: labRelative(l.Dir()),
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
	return r, nil
}

// closedOr maps a read from a log that closed under us (its broker just
// stopped) to 503 BROKER_NOT_AVAILABLE; other errors go to LabError.
func closedOr(err error, id int32) error {
	if errors.Is(err, storage.ErrClosed) {
		return KafkaError(http.StatusServiceUnavailable, kerr.BrokerNotAvailable, "broker "+strconv.Itoa(int(id))+" stopped while its log was read")
	}
	return LabError(err)
}

// LookupView is apiv1.LookupView.
type LookupView = apiv1.LookupView

// ProbeView is apiv1.ProbeView.
type ProbeView = apiv1.ProbeView

// ScanView is apiv1.ScanView.
type ScanView = apiv1.ScanView

// BatchView is apiv1.BatchView.
type BatchView = apiv1.BatchView

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
	v, err := lookupView(id, l, offset)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// lookupView walks the lookup of offset in broker id's log l.
func lookupView(id int32, l ReplicaLog, offset int64) (LookupView, error) {
	tr, err := l.Lookup(offset)
	if err != nil {
		return LookupView{}, closedOr(err, id)
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
	return v, nil
}

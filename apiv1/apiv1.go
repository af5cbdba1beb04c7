// Package apiv1 holds the JSON bodies of Tidemark's /api/v1 inspection
// routes. The web server fills them and the templ pages render them, so a
// page shows exactly what the API answers.
package apiv1

import (
	"time"

	"tidemark/events"
)

// PartitionInfo is one partition's placement and health.
type PartitionInfo struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	UnderReplicated bool    `json:"under_replicated"`
	Offline         bool    `json:"offline"`
}

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
	// LSO is the replica's last stable offset once its log holds
	// transactions (events.Replica.Txn), else absent.
	LSO *int64 `json:"lso,omitempty"`
}

// RecordView is one record in a replica's window: its key and value cut
// as events.Shown cuts them (KeySize, ValueSize and Digest set when cut),
// so a window of large records stays small.
type RecordView struct {
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Key         string `json:"key,omitempty"`
	Value       string `json:"value"`
	KeySize     int    `json:"key_size,omitempty"`
	ValueSize   int    `json:"value_size,omitempty"`
	Digest      string `json:"digest,omitempty"`
	Committed   bool   `json:"committed"`
	// A transactional batch's record (of ProducerID), a transaction
	// marker (Control: commit or abort) and a record of an aborted
	// transaction, as events.Record says them.
	Txn        bool   `json:"txn,omitempty"`
	ProducerID int64  `json:"producer_id,omitempty"`
	Control    string `json:"control,omitempty"`
	Aborted    bool   `json:"aborted,omitempty"`
}

// RecordViewOf is r's view, not yet marked committed.
func RecordViewOf(r events.Record) RecordView {
	return RecordView{Offset: r.Offset, LeaderEpoch: r.LeaderEpoch, Key: r.Key, Value: r.Value,
		KeySize: r.KeySize, ValueSize: r.ValueSize, Digest: r.Digest,
		Txn: r.Txn, ProducerID: r.ProducerID, Control: r.Control, Aborted: r.Aborted}
}

// TruncationView is one truncation: which replica, its new LEO, what it
// removed and why (Message names the rule; MessageKey and MessageArgs are
// the event's, for a page in another language).
type TruncationView struct {
	Seq         uint64                   `json:"seq"`
	Time        time.Time                `json:"time"`
	Broker      int32                    `json:"broker"`
	LEO         int64                    `json:"leo"`
	Message     string                   `json:"message,omitempty"`
	MessageKey  string                   `json:"message_key,omitempty"`
	MessageArgs []string                 `json:"message_args,omitempty"`
	Truncated   []events.TruncatedRecord `json:"truncated"`
}

// SegmentsResponse is the body of GET …/segments: one replica's files on disk.
// Dir is the replica's directory relative to the lab's data directory
// (broker-1/demo-0): where the server keeps its files is not the learner's
// business, and in class mode it would show the teacher's machine.
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

// Package storage is Tidemark's log storage: Apache Kafka's on-disk format,
// written and read with real files.
//
// A partition's log lives in a directory named <topic>-<partition> inside a
// log dir. The log is a list of segments; each segment is three files named
// by its base offset (the first offset it holds), zero-padded to 20 digits:
//
//	00000000000000000000.log        RecordBatch v2 batches, back to back
//	00000000000000000000.index      sparse offset index: (relative offset, position) pairs
//	00000000000000000000.timeindex  time index: (max timestamp so far, relative offset) pairs
//
// Finding offset N is three steps: a binary search over the segments' base
// offsets picks the segment, a binary search in its .index finds the last
// entry at or below N, and a forward scan over batch headers from that
// byte position finds the batch that holds N. The index is sparse (one entry
// per index.interval.bytes appended), so it stays small enough to keep in
// memory while the scan stays short.
//
// Writes go to the page cache; like Kafka, durability comes from replication
// by default, not from fsync. Flush fsyncs and advances the recovery point:
// every offset below it is on stable storage. After a crash (no clean-shutdown
// marker) Open re-reads only the segments from the one holding the recovery
// point to the end, cuts the log at the first torn or corrupt batch and
// rebuilds those segments' indexes. That is why recovery is fast no matter
// how long the log is.
//
// flush.messages and flush.ms are applied by the append itself, before it
// returns (Kafka's UnifiedLog.append), and by FlushIfDue on the broker's
// timer for flush.ms when no append comes.
//
// Every file operation goes through a vfs.FS (Options.FS; the OS's by
// default), so tests can make a chosen write, fsync, truncate, rename or
// open fail (package vfs/errorfs). Storage failures stick, as in Kafka: the
// first I/O or fsync error in a log dir takes the whole dir offline
// (LogDir.Offline, LogDir.OfflineC); the failing call and every later call
// that would touch its files return a *StorageError, which is
// KAFKA_STORAGE_ERROR. A failed append never moves the LEO and is cut off
// again, so neither a reader nor a restart sees part of it.
//
// The package knows files, not replicas: it has no idea what a leader is.
// Replication decides high watermarks and truncation points and calls
// TruncateTo, ApplyRetention and the checkpoint writers here.
//
// Concurrency: one writer and many readers per Log. A reader never sees a
// partial batch, because a segment's readable size moves only after a whole
// append has been written.
package storage

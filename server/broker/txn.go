package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/internal/crc32c"
	"tidemark/server/coordinator"
	"tidemark/server/wire"
	"tidemark/storage"
)

// Transactions, as Kafka's transaction coordinator and partition leaders
// serve them (KIP-98). The coordinator of a transactional id is the broker
// its id hashes to (coordinatorFor, as for groups); its state is the lab's
// shared coordinator.Txns, saved on disk. EndTxn records its decision, then
// writes a control batch (a commit or abort marker) to every partition the
// transaction wrote to, through each leader's WriteTxnMarkers (completeTxn); a read_committed fetch reads up to the last
// stable offset (the first offset of the oldest open transaction, or the
// HW) and is told which transactions in its range were aborted.

// txnAPIVersions are the transaction APIs, served from the versions
// clients send (the v4+ AddPartitionsToTxn is broker-to-broker).
var txnAPIVersions = map[int16][2]int16{
	24: {0, 3}, // AddPartitionsToTxn
	25: {0, 3}, // AddOffsetsToTxn
	26: {0, 3}, // EndTxn
	27: {0, 1}, // WriteTxnMarkers: the coordinator's markers to the leaders
	28: {0, 3}, // TxnOffsetCommit
}

// txnError is the error a transactional request to this broker gets
// before the coordinator sees it (as groupError for groups).
func (b *Broker) txnState(txnID string) (*coordinator.Txns, *coordinator.Coordinator, *kerr.Error) {
	if txnID == "" {
		return nil, nil, kerr.InvalidRequest
	}
	c, err := b.groupError(txnID)
	if err != nil {
		return nil, nil, err
	}
	return c.Transactions(), c, nil
}

// handleTxnInitProducerID is InitProducerId with a transactional id: the
// id's producer id, its epoch bumped (fencing any older instance: a
// zombie's next request is PRODUCER_FENCED), and an open transaction of
// the old epoch aborted first.
func (b *Broker) handleTxnInitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	ts, c, kerrr := b.txnState(*req.TransactionalID)
	if kerrr != nil {
		resp.ErrorCode = kerrr.Code
		return resp
	}
	txn, known, unlock := ts.Lock(*req.TransactionalID)
	defer unlock()
	if known && req.ProducerID >= 0 && (req.ProducerID != txn.ProducerID || req.ProducerEpoch != txn.Epoch) {
		resp.ErrorCode = kerr.ProducerFenced.Code
		return resp
	}
	if prepared, commit := txn.Prepared(); prepared {
		// A decision recorded before a crash (or a failed EndTxn) is
		// carried out first, at the epoch that made it.
		if kerrr := b.completeTxn(ctx, c, txn, commit); kerrr != nil {
			resp.ErrorCode = kerrr.Code
			return resp
		}
	}
	if !known || txn.Epoch >= math.MaxInt16-1 {
		pid, err := c.NewProducerID()
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return resp
		}
		txn.ProducerID, txn.Epoch = pid, 0
	} else {
		txn.Epoch++
	}
	if txn.State == coordinator.TxnOngoing {
		// The fenced instance's transaction is aborted, the decision
		// recorded first with the new epoch, which its markers carry.
		if kerrr := b.completeTxn(ctx, c, txn, false); kerrr != nil {
			resp.ErrorCode = kerrr.Code
			return resp
		}
	}
	txn.Reset(coordinator.TxnEmpty)
	resp.ProducerID, resp.ProducerEpoch = txn.ProducerID, txn.Epoch
	return resp
}

func (b *Broker) handleAddPartitionsToTxn(req *kmsg.AddPartitionsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	code := int16(0)
	ts, _, kerrr := b.txnState(req.TransactionalID)
	var txn *coordinator.Txn
	if kerrr == nil {
		var unlock func()
		txn, _, unlock = ts.Lock(req.TransactionalID)
		defer unlock()
		if kerrr = txn.Check(req.ProducerID, req.ProducerEpoch); kerrr == nil {
			if prepared, _ := txn.Prepared(); prepared {
				kerrr = kerr.ConcurrentTransactions // its markers are still being written
			}
		}
	}
	if kerrr != nil {
		code = kerrr.Code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			if code == 0 {
				if !b.partitionExists(t.Topic, p) {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else {
					txn.AddPartition(coordinator.TxnPartition{Topic: t.Topic, Partition: p})
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// partitionExists reports whether the applied metadata has the partition.
func (b *Broker) partitionExists(topic string, p int32) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.metadata.Topic(topic)
	return t != nil && p >= 0 && int(p) < len(t.Partitions)
}

func (b *Broker) handleAddOffsetsToTxn(req *kmsg.AddOffsetsToTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	ts, _, kerrr := b.txnState(req.TransactionalID)
	if kerrr == nil {
		txn, _, unlock := ts.Lock(req.TransactionalID)
		defer unlock()
		if kerrr = txn.Check(req.ProducerID, req.ProducerEpoch); kerrr == nil {
			if prepared, _ := txn.Prepared(); prepared {
				kerrr = kerr.ConcurrentTransactions
			} else {
				txn.State = coordinator.TxnOngoing
			}
		}
	}
	if kerrr != nil {
		resp.ErrorCode = kerrr.Code
	}
	return resp
}

// handleTxnOffsetCommit holds a transaction's offsets at the group's
// coordinator until the transaction commits (they are dropped if it
// aborts).
func (b *Broker) handleTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	// It comes to the group's coordinator, which in the lab shares the
	// transaction coordinator's state (Kafka's group coordinator keeps
	// the offsets pending until the transaction's marker reaches
	// __consumer_offsets).
	c, groupErr := b.groupError(req.Group)
	var txn *coordinator.Txn
	if groupErr == nil {
		var unlock func()
		txn, _, unlock = c.Transactions().Lock(req.TransactionalID)
		defer unlock()
		groupErr = txn.Check(req.ProducerID, req.ProducerEpoch)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			if groupErr != nil {
				rp.ErrorCode = groupErr.Code
			} else {
				if txn.Offsets == nil {
					txn.Offsets = map[string]map[string]map[int32]coordinator.Committed{}
				}
				g := txn.Offsets[req.Group]
				if g == nil {
					g = map[string]map[int32]coordinator.Committed{}
					txn.Offsets[req.Group] = g
				}
				if g[t.Topic] == nil {
					g[t.Topic] = map[int32]coordinator.Committed{}
				}
				cm := coordinator.Committed{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch}
				if p.Metadata != nil {
					cm.Metadata = *p.Metadata
				}
				g[t.Topic][p.Partition] = cm
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// handleEndTxn commits or aborts the open transaction: a marker in every
// partition it wrote to, then (committing) its offsets.
func (b *Broker) handleEndTxn(ctx context.Context, req *kmsg.EndTxnRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	ts, c, kerrr := b.txnState(req.TransactionalID)
	if kerrr != nil {
		resp.ErrorCode = kerrr.Code
		return resp
	}
	txn, _, unlock := ts.Lock(req.TransactionalID)
	defer unlock()
	if kerrr := txn.Check(req.ProducerID, req.ProducerEpoch); kerrr != nil {
		resp.ErrorCode = kerrr.Code
		return resp
	}
	prepared, preparedCommit := txn.Prepared()
	switch {
	case txn.State == coordinator.TxnCompleteCmt && req.Commit, txn.State == coordinator.TxnCompleteAbort && !req.Commit:
		return resp // a retry of the EndTxn that ended it
	case prepared && preparedCommit != req.Commit:
		resp.ErrorCode = kerr.InvalidTxnState.Code // the other decision is recorded
		return resp
	case !prepared && txn.State != coordinator.TxnOngoing:
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp
	}
	if kerrr := b.completeTxn(ctx, c, txn, req.Commit); kerrr != nil {
		resp.ErrorCode = kerrr.Code
	}
	return resp
}

// completeTxn ends txn's transaction as Kafka's coordinator does: the
// decision is saved (PrepareCommit or PrepareAbort) before any marker is
// written, then a marker goes to every partition, then (committing) its
// offsets are committed and the transaction saved complete. A failure
// leaves the decision recorded, to be carried out by the EndTxn retried or
// the next InitProducerId: CONCURRENT_TRANSACTIONS, which clients retry.
// Callers hold txn's lock.
func (b *Broker) completeTxn(ctx context.Context, c *coordinator.Coordinator, txn *coordinator.Txn, commit bool) *kerr.Error {
	ts := c.Transactions()
	if prepared, _ := txn.Prepared(); !prepared {
		state := txn.State
		txn.State = coordinator.TxnPrepareAbort
		if commit {
			txn.State = coordinator.TxnPrepareCommit
		}
		if err := ts.Save(txn); err != nil {
			b.logger.Error("saving a transaction's decision", "transactional.id", txn.ID, "err", err)
			txn.State = state
			return kerr.CoordinatorNotAvailable
		}
	}
	if err := b.writeMarkers(ctx, txn.ProducerID, txn.Epoch, commit, txn.Partitions); err != nil {
		b.logger.Warn("writing transaction markers", "transactional.id", txn.ID, "err", err)
		return kerr.ConcurrentTransactions // retriable: the client ends it again
	}
	state := coordinator.TxnCompleteAbort
	if commit {
		state = coordinator.TxnCompleteCmt
		for group, offs := range txn.Offsets {
			if err := c.CommitTxnOffsets(group, offs); err != nil {
				b.logger.Error("committing a transaction's offsets", "transactional.id", txn.ID, "err", err)
				return kerr.CoordinatorNotAvailable
			}
		}
	}
	txn.Reset(state)
	if err := ts.Save(txn); err != nil {
		b.logger.Error("saving a completed transaction", "transactional.id", txn.ID, "err", err)
	}
	return nil
}

// writeMarkers sends a commit or abort marker for producer id and epoch to
// the leader of every partition, each leader one WriteTxnMarkers request,
// and waits for all of them (acks=all at each leader).
func (b *Broker) writeMarkers(ctx context.Context, producerID int64, epoch int16, commit bool, parts []coordinator.TxnPartition) error {
	byLeader := map[string][]coordinator.TxnPartition{}
	b.mu.Lock()
	md := b.metadata
	b.mu.Unlock()
	for _, p := range parts {
		t := md.Topic(p.Topic)
		if t == nil || int(p.Partition) >= len(t.Partitions) {
			continue // deleted meanwhile: nothing to mark
		}
		leader := md.Broker(t.Partitions[p.Partition].Leader)
		if leader == nil || leader.Fenced {
			return fmt.Errorf("%w: %s-%d has no leader", kerr.NotLeaderForPartition, p.Topic, p.Partition)
		}
		byLeader[leader.Listener] = append(byLeader[leader.Listener], p)
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RequestTimeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(byLeader))
	for addr, ps := range byLeader {
		wg.Go(func() { errs <- sendMarkers(ctx, addr, producerID, epoch, commit, ps) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sendMarkers is one WriteTxnMarkers request to the leader at addr.
func sendMarkers(ctx context.Context, addr string, producerID int64, epoch int16, commit bool, ps []coordinator.TxnPartition) error {
	cl, err := wire.Dial(ctx, addr, "transaction-coordinator")
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = producerID, epoch, commit
	byTopic := map[string]int{}
	for _, p := range ps {
		i, ok := byTopic[p.Topic]
		if !ok {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = p.Topic
			m.Topics = append(m.Topics, t)
			i = len(m.Topics) - 1
			byTopic[p.Topic] = i
		}
		m.Topics[i].Partitions = append(m.Topics[i].Partitions, p.Partition)
	}
	req.Markers = append(req.Markers, m)
	raw, err := cl.Request(ctx, req)
	if err != nil {
		return err
	}
	for _, rm := range raw.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range rm.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("marker for %s-%d at %s: %w", t.Topic, p.Partition, addr, err)
				}
			}
		}
	}
	return nil
}

// handleWriteTxnMarkers appends each marker to the partitions this broker
// leads, as a control batch, and answers once each is replicated.
func (b *Broker) handleWriteTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		batch := controlBatch(m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, b.nowMs())
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				r := b.replicaFor(t.Topic, p)
				if r == nil {
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else {
					res := r.produce(ctx, -1, append([]byte(nil), batch...), nil, b.cfg.RequestTimeout)
					if res.Err != nil {
						rp.ErrorCode = errorCode(res.Err)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// Control batch attributes: transactional and control.
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// controlBatch is a transaction marker: a control batch of one record
// whose key is (version 0, type: 0 abort, 1 commit) and whose value is
// (version 0, coordinator epoch).
func controlBatch(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, nowMs int64) []byte {
	key := make([]byte, 4)
	if commit {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	rec := kmsg.Record{Key: key, Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	body := rec.AppendTo(nil)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrTransactional | attrControl,
		FirstTimestamp: nowMs, MaxTimestamp: nowMs, ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: -1,
		NumRecords: 1, Records: body}
	rb.Length = int32(61 - 12 + len(body))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32c.Checksum(out[21:]))
	return out
}

// txnIndex is what a replica's log says of transactions, read from the log
// as it grows (so leader and followers alike, and a new leader after a
// failover, know it): each producer's open transaction's first offset,
// and the aborted transactions' offset ranges. Kafka keeps the latter in
// each segment's .txnindex; the lab reads it into memory on the first
// read_committed fetch of a partition.
type txnIndex struct {
	mu      sync.Mutex
	scanned int64           // the log is read up to here
	open    map[int64]int64 // producer id → first offset of its open transaction
	aborted []abortedTxn
}

type abortedTxn struct {
	producerID  int64
	first, last int64 // the first record and the abort marker
}

// txnIndexOf returns r's index, made on first use.
func (b *Broker) txnIndexOf(r *replica) *txnIndex {
	v, _ := b.txnIndexes.LoadOrStore(r, &txnIndex{open: map[int64]int64{}})
	return v.(*txnIndex)
}

// update reads the batches appended since the last update (from the log
// start after a truncation).
func (x *txnIndex) update(l *storage.Log) error {
	leo, start := l.LogEndOffset(), l.LogStartOffset()
	if x.scanned > leo || x.scanned < start {
		x.scanned, x.open, x.aborted = start, map[int64]int64{}, nil
	}
	for x.scanned < leo {
		before := x.scanned
		err := l.EachBatch(x.scanned, leo, 512, func(bt storage.Batch) bool {
			h := bt.Header
			switch {
			case h.Attributes&attrControl != 0:
				first, ok := x.open[h.ProducerID]
				delete(x.open, h.ProducerID)
				if len(bt.Records) > 0 && len(bt.Records[0].Key) >= 4 && binary.BigEndian.Uint16(bt.Records[0].Key[2:]) == 0 {
					if !ok {
						first = h.BaseOffset
					}
					x.aborted = append(x.aborted, abortedTxn{producerID: h.ProducerID, first: first, last: h.BaseOffset})
				}
			case h.Attributes&attrTransactional != 0 && h.ProducerID >= 0:
				if _, ok := x.open[h.ProducerID]; !ok {
					x.open[h.ProducerID] = h.BaseOffset
				}
			}
			x.scanned = h.NextOffset()
			return true
		})
		if err != nil {
			return err
		}
		if x.scanned == before {
			break // nothing readable yet
		}
	}
	for len(x.aborted) > 0 && x.aborted[0].last < start {
		x.aborted = x.aborted[1:]
	}
	return nil
}

// readCommitted bounds a read_committed fetch of fp at the last stable
// offset and lists the aborted transactions in its range.
func (b *Broker) readCommitted(fp *fetchPart) {
	x := b.txnIndexOf(fp.r)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.update(fp.r.log); err != nil {
		fp.out.ErrorCode = errorCode(err)
		return
	}
	lso := fp.out.HighWatermark
	for _, first := range x.open {
		lso = min(lso, first)
	}
	fp.out.LastStableOffset = lso
	fp.upTo = min(fp.upTo, lso)
	fp.out.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	for _, a := range x.aborted {
		if a.last >= fp.req.FetchOffset && a.first < fp.upTo {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a.producerID, a.first
			fp.out.AbortedTransactions = append(fp.out.AbortedTransactions, at)
		}
	}
}

// lastStableOffset is the partition's last stable offset given its HW: the
// first offset of its oldest open transaction, if below.
func (b *Broker) lastStableOffset(topic string, partition int32, hw int64) (int64, error) {
	r := b.replicaFor(topic, partition)
	if r == nil {
		return 0, kerr.UnknownTopicOrPartition
	}
	x := b.txnIndexOf(r)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.update(r.log); err != nil {
		return 0, err
	}
	for _, first := range x.open {
		hw = min(hw, first)
	}
	return hw, nil
}

package lessons

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
	"tidemark/storage"
)

// The cluster's part of the vocabulary for transactions (KIP-98): a
// transactional producer as Kafka's client drives one over the protocol
// (FindCoordinator, InitProducerId with its transactional.id,
// AddPartitionsToTxn before its first write to a partition, transactional
// batches, EndTxn), and a consumer that fetches at an isolation level and
// filters as Kafka's consumer does (CompletedFetch: control batches never
// returned; under read_committed, up to the LSO and without the aborted
// transactions' records).

// txnProducer is one transactional producer instance of a script, named
// by the script; two instances may share a transactional.id (a zombie and
// its replacement).
type txnProducer struct {
	txnID string
	pid   int64
	epoch int16
	ready bool            // initTransactions succeeded
	open  bool            // beginTransaction was called and the transaction has not ended
	added map[string]bool // topics (partition 0) added to the open transaction
	seq   map[string]int32
	err   error // the last transactional request's error
}

// Control batch attributes and marker types (Kafka's RecordBatch bit 5,
// ControlRecordType: the key's type 0 ABORT, 1 COMMIT).
const (
	controlAttr = 0x20
	txnAttr     = 0x10
)

// controlValue names a control record by its type, as Kafka's
// ControlRecordType does: COMMIT or ABORT (the key is version, type).
func controlValue(key []byte) string {
	if len(key) >= 4 {
		switch binary.BigEndian.Uint16(key[2:]) {
		case 0:
			return "ABORT"
		case 1:
			return "COMMIT"
		}
	}
	return "CONTROL"
}

func (e *Env) txnProducer(name string) (*txnProducer, error) {
	p := e.txns[name]
	if p == nil || !p.ready {
		return nil, fmt.Errorf("no transactional producer %s (do init-transactions %s TXNID first)", name, name)
	}
	return p, nil
}

// txnCoordinator dials the transaction coordinator of txnID, found with
// FindCoordinator (key type 1) at any running broker.
func (e *Env) txnCoordinator(ctx context.Context, txnID string) (*wire.Client, error) {
	for _, id := range e.c.BrokerIDs() {
		b := e.c.Broker(id)
		if b == nil {
			continue
		}
		cl, err := wire.Dial(ctx, b.Addr(), "lesson-txn-producer")
		if err != nil {
			return nil, err
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(3)
		req.CoordinatorKey, req.CoordinatorType = txnID, 1
		raw, err := cl.Request(ctx, req)
		cl.Close()
		if err != nil {
			return nil, err
		}
		resp := raw.(*kmsg.FindCoordinatorResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
		cb := e.c.Broker(resp.NodeID)
		if cb == nil {
			return nil, fmt.Errorf("transaction coordinator %d is not running", resp.NodeID)
		}
		return wire.Dial(ctx, cb.Addr(), "lesson-txn-producer")
	}
	return nil, errors.New("no running broker")
}

// txnRequest sends req to txnID's coordinator and returns its answer.
// Requests that write markers (InitProducerId fencing an open
// transaction, EndTxn) wait for them at each leader: the action goes on
// once the answer came or every marker is in its leader's log (a
// replicated topic's followers fetch them later), and answered waits for
// the rest.
func (e *Env) txnRequest(txnID string, req kmsg.Request, markers []string) (answered func() (kmsg.Response, error), err error) {
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	cl, err := e.txnCoordinator(ctx, txnID)
	if err != nil {
		cancel()
		return nil, err
	}
	leos := map[string]int64{}
	for _, t := range markers {
		if st, ok := e.Status(e.Meta(t).Leader, t); ok {
			leos[t] = st.LogEndOffset
		}
	}
	done := make(chan struct{})
	var resp kmsg.Response
	var rerr error
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer cancel()
		defer cl.Close()
		resp, rerr = cl.Request(ctx, req)
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case <-done:
			e.wait()
			return func() (kmsg.Response, error) { return resp, rerr }, nil
		default:
		}
		all := len(markers) > 0
		for t, leo := range leos {
			if st, ok := e.Status(e.Meta(t).Leader, t); !ok || st.LogEndOffset <= leo {
				all = false
			}
		}
		if all || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	e.wait()
	return func() (kmsg.Response, error) {
		select {
		case <-done:
			return resp, rerr
		case <-time.After(10 * time.Second):
			return nil, errors.New("the transaction coordinator did not answer")
		}
	}, nil
}

// initTransactions is the client's initTransactions: InitProducerId with
// the transactional id at its coordinator, which bumps the id's epoch and
// so fences any older instance (aborting its open transaction).
func (e *Env) initTransactions(name, txnID string) error {
	p := &txnProducer{txnID: txnID, added: map[string]bool{}, seq: map[string]int32{}}
	if e.txns == nil {
		e.txns = map[string]*txnProducer{}
	}
	e.txns[name] = p
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = &txnID
	req.TransactionTimeoutMillis = 60000
	// An open transaction of an older instance gets abort markers first.
	var open []string
	for _, q := range e.txns {
		if q.txnID == txnID && q.open {
			for t := range q.added {
				open = append(open, t)
			}
		}
	}
	answer, err := e.txnRequest(txnID, req, open)
	if err != nil {
		return err
	}
	raw, err := answer()
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.InitProducerIDResponse)
	if p.err = kerr.ErrorForCode(resp.ErrorCode); p.err == nil {
		p.pid, p.epoch, p.ready = resp.ProducerID, resp.ProducerEpoch, true
		e.Say(T("%s: transactional.id %s, producer id %d, producer epoch %d.",
			"%s：transactional.id %s，生产者编号 %d，生产者 epoch %d。",
			"%s：transactional.id %s，生產者編號 %d，生產者 epoch %d。").F(name, txnID, p.pid, p.epoch))
	}
	return nil
}

// sendTxn is one transactional record: AddPartitionsToTxn before the
// transaction's first write to the partition, then an acks=all batch
// with the producer's id, epoch and next sequence, answered as send is.
func (e *Env) sendTxn(topic, value, name string) error {
	p, err := e.txnProducer(name)
	if err != nil {
		return err
	}
	if !p.open {
		return fmt.Errorf("send-txn: %s has no open transaction (do begin-transaction %s first)", name, name)
	}
	if !p.added[topic] {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.txnID, p.pid, p.epoch
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		answer, err := e.txnRequest(p.txnID, req, nil)
		if err != nil {
			return err
		}
		raw, err := answer()
		if err != nil {
			return err
		}
		for _, t := range raw.(*kmsg.AddPartitionsToTxnResponse).Topics {
			for _, rp := range t.Partitions {
				p.err = kerr.ErrorForCode(rp.ErrorCode)
			}
		}
		if p.err != nil { // the client does not send the record
			e.setResult(topic, value, &result{answered: true, offset: -1, err: p.err})
			return nil
		}
		p.added[topic] = true
	}
	batch := storage.NewTransactionalBatch([]storage.Record{{Value: []byte(value), Timestamp: e.c.Clock().Now().UnixMilli()}}, p.pid, p.epoch, p.seq[topic])
	pend, err := e.produceBytes(topic, value, batch)
	if err != nil {
		return err
	}
	p.seq[topic]++
	e.setResult(topic, value, &result{pending: pend})
	return nil
}

// endTxn is commitTransaction or abortTransaction: EndTxn at the
// coordinator, which writes a commit or abort marker to every partition
// of the transaction.
func (e *Env) endTxn(name string, commit bool) error {
	p, err := e.txnProducer(name)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.txnID, p.pid, p.epoch, commit
	var parts []string
	for t := range p.added {
		parts = append(parts, t)
	}
	answer, err := e.txnRequest(p.txnID, req, parts)
	if err != nil {
		return err
	}
	p.open, p.added = false, map[string]bool{}
	p.err = errPending
	e.txnAnswers[name] = func() error {
		raw, err := answer()
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(raw.(*kmsg.EndTxnResponse).ErrorCode)
	}
	return nil
}

// errPending marks an EndTxn whose answer txnErr has yet to collect.
var errPending = errors.New("pending")

// txnErr is the last transactional request's error of producer name,
// waiting for an EndTxn's answer.
func (e *Env) txnErr(name string) (error, error) {
	p := e.txns[name]
	if p == nil {
		return nil, fmt.Errorf("no transactional producer %s", name)
	}
	if p.err == errPending {
		p.err = e.txnAnswers[name]()
		delete(e.txnAnswers, name)
	}
	return p.err, nil
}

// fetchIsolated fetches partition 0 of topic from its leader over the
// Kafka protocol at an isolation level, from offset (the log start if
// negative) up to the HW (read_uncommitted) or the LSO (read_committed),
// and filters the records as Kafka's consumer does. It returns the values,
// the HW and the LSO the leader answered.
func (e *Env) fetchIsolated(topic string, offset int64, committed bool) (values []string, hw, lso int64, err error) {
	leader := e.Meta(topic).Leader
	b := e.c.Broker(leader)
	if b == nil {
		return nil, -1, -1, kerr.LeaderNotAvailable
	}
	if offset < 0 {
		if l := e.Log(leader, topic); l != nil {
			offset = l.LogStartOffset()
		}
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "lesson-consumer")
	if err != nil {
		return nil, -1, -1, err
	}
	defer cl.Close()
	aborted := map[int64]bool{} // producer ids whose aborted transaction is being read
	for range 100 {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.ReplicaID, req.MaxBytes, req.MaxWaitMillis, req.MinBytes = -1, 1<<20, 0, 0
		if committed {
			req.IsolationLevel = 1
		}
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := cl.Request(ctx, req)
		if err != nil {
			return values, hw, lso, err
		}
		fr := raw.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(fr.ErrorCode); err != nil {
			return values, hw, lso, err
		}
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return values, hw, lso, fmt.Errorf("fetch answered %d topics", len(fr.Topics))
		}
		part := fr.Topics[0].Partitions[0]
		hw, lso = part.HighWatermark, part.LastStableOffset
		if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
			return values, hw, lso, err
		}
		// The aborted transactions, by first offset (Kafka's consumer keeps
		// them in a priority queue and takes those that began at or before
		// each batch's last offset).
		pending := part.AbortedTransactions
		bs := part.RecordBatches
		progressed := false
		for len(bs) >= 61 {
			size := int(int32(binary.BigEndian.Uint32(bs[8:]))) + 12
			if size < 61 || size > len(bs) {
				break // a partial batch at the end
			}
			bt, err := storage.DecodeBatch(bs[:size])
			if err != nil {
				return values, hw, lso, err
			}
			bs = bs[size:]
			h := bt.Header
			progressed = true
			offset = max(offset, h.NextOffset())
			if committed && h.ProducerID >= 0 {
				rest := pending[:0:0]
				for _, a := range pending {
					if a.FirstOffset <= h.LastOffset() {
						aborted[a.ProducerID] = true
					} else {
						rest = append(rest, a)
					}
				}
				pending = rest
				if h.Attributes&controlAttr != 0 && len(bt.Records) > 0 && controlValue(bt.Records[0].Key) == "ABORT" {
					delete(aborted, h.ProducerID)
				} else if h.Attributes&txnAttr != 0 && aborted[h.ProducerID] {
					continue
				}
			}
			if h.Attributes&controlAttr != 0 {
				continue // control records are never returned to the application
			}
			for _, r := range bt.Records {
				if r.Offset >= rp.FetchOffset {
					values = append(values, string(r.Value))
				}
			}
		}
		bound := hw
		if committed {
			bound = lso
		}
		if !progressed || offset >= bound {
			return values, hw, lso, nil
		}
	}
	return values, hw, lso, errors.New("fetch: no end after 100 fetches")
}

// addTxnVocab registers the transactions' words.
func addTxnVocab() {
	actions["init-transactions"] = actionSpec{"word word", nil, func(e *Env, a []string, _ map[string]string) error {
		return e.initTransactions(a[0], a[1])
	}}
	actions["begin-transaction"] = actionSpec{"word", nil, func(e *Env, a []string, _ map[string]string) error {
		p, err := e.txnProducer(a[0])
		if err != nil {
			return err
		}
		if p.open {
			return fmt.Errorf("begin-transaction: %s already has an open transaction", a[0])
		}
		p.open, p.added = true, map[string]bool{} // beginTransaction sends nothing
		return nil
	}}
	actions["send-txn"] = actionSpec{"topic word word", nil, func(e *Env, a []string, _ map[string]string) error {
		return e.sendTxn(a[0], a[1], a[2])
	}}
	actions["commit-transaction"] = actionSpec{"word", nil, func(e *Env, a []string, _ map[string]string) error {
		return e.endTxn(a[0], true)
	}}
	actions["abort-transaction"] = actionSpec{"word", nil, func(e *Env, a []string, _ map[string]string) error {
		return e.endTxn(a[0], false)
	}}
	queries["txn-error"] = querySpec{"word", func(e *Env, a []string) (Value, error) {
		err, qerr := e.txnErr(a[0])
		if qerr != nil {
			return Value{}, qerr
		}
		return errValue(err), nil
	}}
	queries["producer-epoch"] = querySpec{"word", func(e *Env, a []string) (Value, error) {
		p := e.txns[a[0]]
		if p == nil || !p.ready {
			return Value{}, fmt.Errorf("no transactional producer %s", a[0])
		}
		return num(int64(p.epoch)), nil
	}}
	queries["lso"] = querySpec{"topic", func(e *Env, a []string) (Value, error) {
		// A read_committed fetch at the HW: the leader answers its LSO.
		hw := int64(0)
		if st, ok := e.Status(e.Meta(a[0]).Leader, a[0]); ok {
			hw = st.HighWatermark
		}
		_, _, lso, err := e.fetchIsolated(a[0], hw, true)
		if err != nil {
			return Value{}, err
		}
		return num(lso), nil
	}}
}

// isolationOf reads consume's isolation option: read_uncommitted (the
// consumer's default isolation.level) or read_committed.
func isolationOf(opt map[string]string) (committed, protocol bool, err error) {
	v, ok := opt["isolation"]
	switch {
	case !ok:
		return false, false, nil
	case v == "read_committed":
		return true, true, nil
	case v == "read_uncommitted":
		return false, true, nil
	}
	return false, false, fmt.Errorf("consume: isolation=%s: read_committed or read_uncommitted", v)
}

// fromOffset is consume's optional OFFSET argument; -1 (the log start)
// without it.
func fromOffset(a []string) int64 {
	if len(a) > 1 {
		n, _ := strconv.ParseInt(a[1], 10, 64)
		return n
	}
	return -1
}

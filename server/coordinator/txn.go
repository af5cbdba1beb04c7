package coordinator

import (
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction states, as Kafka's DescribeTransactions names them. An
// EndTxn first records its decision (PrepareCommit, PrepareAbort), then
// writes the markers, then records the transaction complete: a decision
// once recorded is the one carried out, whatever crashes in between.
const (
	TxnEmpty         = "Empty"
	TxnOngoing       = "Ongoing"
	TxnPrepareCommit = "PrepareCommit"
	TxnPrepareAbort  = "PrepareAbort"
	TxnCompleteAbort = "CompleteAbort"
	TxnCompleteCmt   = "CompleteCommit"
)

// TxnPartition is a partition in a transaction.
type TxnPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// Txn is one transactional id's state at the transaction coordinator:
// its producer id and epoch, and while a transaction is open the
// partitions it wrote to, the groups it commits offsets for and those
// offsets, held until the transaction commits.
type Txn struct {
	ID         string                                    `json:"id"`
	ProducerID int64                                     `json:"producer_id"`
	Epoch      int16                                     `json:"epoch"`
	State      string                                    `json:"state"`
	Partitions []TxnPartition                            `json:"partitions,omitempty"`
	Offsets    map[string]map[string]map[int32]Committed `json:"offsets,omitempty"` // group → topic → partition
}

// Prepared reports whether txn's decision is recorded but its markers
// may not all be written, and which decision.
func (txn *Txn) Prepared() (prepared, commit bool) {
	return txn.State == TxnPrepareCommit || txn.State == TxnPrepareAbort, txn.State == TxnPrepareCommit
}

// Txns is the lab's transaction coordinator state. Kafka keeps it in the
// __transaction_state log; the lab keeps it in the coordinator's state
// file (store.go), written before a request that changed it is answered,
// so a transaction open or being ended when the lab stops is carried on
// after it starts again: its producer can end it, or a new instance of
// its transactional id aborts it (InitProducerId). Its methods are safe
// for concurrent use; one transactional id's requests are serialized by
// Lock.
type Txns struct {
	c    *Coordinator
	mu   sync.Mutex
	byID map[string]*txnEntry
	// saved holds each id's state as last saved (copies, read by the
	// coordinator's persist without the entries' locks).
	saved map[string]Txn
}

type txnEntry struct {
	mu  sync.Mutex // held through a whole request, markers included
	txn Txn
}

// newTxns is the transaction state loaded from disk.
func newTxns(c *Coordinator, loaded map[string]Txn) *Txns {
	t := &Txns{c: c, byID: map[string]*txnEntry{}, saved: map[string]Txn{}}
	for id, txn := range loaded {
		t.byID[id] = &txnEntry{txn: cloneTxn(txn)}
		t.saved[id] = txn
	}
	return t
}

// Transactions returns the lab's transaction coordinator state.
func (c *Coordinator) Transactions() *Txns {
	return c.txns
}

// Lock returns the state of transactional id, locked (with ok false if
// it has none yet), and the function that unlocks it, saving it first if
// it changed (a failure to save is logged: Save reports it to a caller
// that must know).
func (t *Txns) Lock(id string) (txn *Txn, ok bool, unlock func()) {
	t.mu.Lock()
	e := t.byID[id]
	if e == nil {
		e = &txnEntry{txn: Txn{ID: id, ProducerID: -1, Epoch: -1, State: TxnEmpty}}
		t.byID[id] = e
	}
	t.mu.Unlock()
	e.mu.Lock()
	return &e.txn, e.txn.ProducerID >= 0, func() {
		if err := t.Save(&e.txn); err != nil {
			t.c.log.Error("saving transaction state", "transactional.id", id, "err", err)
		}
		e.mu.Unlock()
	}
}

// Save writes txn (locked by the caller) to the coordinator's state file
// if it changed since it was last saved.
func (t *Txns) Save(txn *Txn) error {
	if txn.ProducerID < 0 {
		return nil // nothing handed out yet: nothing to keep
	}
	t.mu.Lock()
	old, ok := t.saved[txn.ID]
	if ok && txnEqual(old, *txn) {
		t.mu.Unlock()
		return nil
	}
	t.saved[txn.ID] = cloneTxn(*txn)
	t.mu.Unlock()
	t.c.mu.Lock()
	t.c.seq++
	t.c.mu.Unlock()
	return t.c.persist()
}

// snapshot is the saved state of every transactional id, for persist.
func (t *Txns) snapshot() map[string]Txn {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.saved) == 0 {
		return nil
	}
	return maps.Clone(t.saved) // the values are never changed in place
}

func cloneTxn(txn Txn) Txn {
	txn.Partitions = slices.Clone(txn.Partitions)
	if txn.Offsets != nil {
		offs := make(map[string]map[string]map[int32]Committed, len(txn.Offsets))
		for g, topics := range txn.Offsets {
			offs[g] = make(map[string]map[int32]Committed, len(topics))
			for topic, parts := range topics {
				offs[g][topic] = maps.Clone(parts)
			}
		}
		txn.Offsets = offs
	}
	return txn
}

func txnEqual(a, b Txn) bool {
	if a.ID != b.ID || a.ProducerID != b.ProducerID || a.Epoch != b.Epoch || a.State != b.State ||
		!slices.Equal(a.Partitions, b.Partitions) || len(a.Offsets) != len(b.Offsets) {
		return false
	}
	for g, topics := range a.Offsets {
		bt, ok := b.Offsets[g]
		if !ok || len(bt) != len(topics) {
			return false
		}
		for topic, parts := range topics {
			if bp, ok := bt[topic]; !ok || !maps.Equal(parts, bp) {
				return false
			}
		}
	}
	return true
}

// Check reports whether a request of producer id and epoch may act on txn:
// INVALID_PRODUCER_ID_MAPPING for another producer id, PRODUCER_FENCED
// for an older epoch (a zombie: another instance called InitProducerId
// since).
func (txn *Txn) Check(producerID int64, epoch int16) *kerr.Error {
	switch {
	case txn.ProducerID < 0 || producerID != txn.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch != txn.Epoch:
		return kerr.ProducerFenced
	}
	return nil
}

// AddPartition adds a partition to the open transaction (opening it).
func (txn *Txn) AddPartition(p TxnPartition) {
	txn.State = TxnOngoing
	if !slices.Contains(txn.Partitions, p) {
		txn.Partitions = append(txn.Partitions, p)
	}
}

// Reset ends the transaction: no partitions, no pending offsets.
func (txn *Txn) Reset(state string) {
	txn.State, txn.Partitions, txn.Offsets = state, nil, nil
}

// NewProducerID hands out a producer id from the coordinator's block, as
// InitProducerId does for an idempotent producer.
func (c *Coordinator) NewProducerID() (int64, error) {
	resp := c.InitProducerID(kmsg.NewPtrInitProducerIDRequest())
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, err
	}
	return resp.ProducerID, nil
}

// CommitTxnOffsets commits a committed transaction's offsets for group,
// durably, as OffsetCommit does.
func (c *Coordinator) CommitTxnOffsets(group string, offsets map[string]map[int32]Committed) error {
	c.mu.Lock()
	for topic, parts := range offsets {
		for p, cm := range parts {
			c.commitLocked(group, topic, p, cm)
		}
	}
	c.seq++
	c.mu.Unlock()
	return c.persist()
}

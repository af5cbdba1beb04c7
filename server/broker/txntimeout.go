package broker

import (
	"time"
)

// Transaction timeouts, as Kafka's transaction coordinator keeps them: a
// transaction open longer than its producer's transaction.timeout.ms is
// aborted by the coordinator (abortTimedOutTransactions), its producer's
// epoch bumped first, so the producer, if it comes back, is fenced rather
// than adding to a transaction that is gone. Without it, a transaction
// whose producer never returns would hold its partitions' last stable
// offset back for good.

const (
	// maxTxnTimeoutMs is Kafka's transaction.max.timeout.ms (15 minutes):
	// InitProducerId asking more is INVALID_TRANSACTION_TIMEOUT.
	maxTxnTimeoutMs = 15 * 60 * 1000
	// txnTimeoutCheck is how often a broker looks for the timed-out
	// transactions it coordinates (Kafka's
	// transaction.abort.timed.out.transaction.cleanup.interval.ms is 10 s).
	txnTimeoutCheck = time.Second
)

// txnTimeoutLoop aborts the timed-out transactions this broker coordinates
// (and completes those whose EndTxn failed part way),
// every txnTimeoutCheck of real time (the producers' clock), but not while
// the lab is paused: a paused lab's partitions move only with its steps,
// so the markers would wait.
func (b *Broker) txnTimeoutLoop() {
	defer b.wg.Done()
	t := time.NewTicker(txnTimeoutCheck)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		if !b.cfg.Clock.Paused() {
			b.abortTimedOutTxns()
		}
	}
}

func (b *Broker) abortTimedOutTxns() {
	c := b.coordinator()
	if c == nil {
		return
	}
	ts := c.Transactions()
	for _, id := range ts.Due(ts.NowMs()) {
		if _, err := b.groupError(id); err != nil {
			continue // another broker coordinates it
		}
		txn, _, unlock := ts.Lock(id)
		prepared, commit := txn.Prepared()
		switch {
		case prepared:
			// An EndTxn that failed part way: its decision is carried
			// out, as Kafka's coordinator retries the markers.
			if kerrr := b.completeTxn(b.ctx, c, txn, commit); kerrr != nil {
				b.errLog.log("completing a transaction", "transactional.id", id, "err", kerrr)
			}
		case txn.TimedOut(ts.NowMs()):
			txn.Epoch++ // fences the producer, as Kafka does
			if kerrr := b.completeTxn(b.ctx, c, txn, false); kerrr != nil {
				b.errLog.log("aborting a timed-out transaction", "transactional.id", id, "err", kerrr)
			} else {
				b.logger.Info("aborted a timed-out transaction", "transactional.id", id, "transaction.timeout.ms", txn.TimeoutMs)
			}
		}
		unlock()
	}
}

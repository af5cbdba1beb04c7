package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/invariant"
	"tidemark/server/cluster"
)

// Transactions under chaos: a transactional producer (franz-go, a real
// Kafka client) commits and aborts transactions on a running 3-broker lab
// while the leaders of its partitions and its transaction coordinator
// crash, mid-transaction or between two, and come back. Then a
// read_committed consumer reads everything and CheckTxns holds it to
// exactly-once: no record of an aborted transaction is ever read, every
// committed transaction is read whole (nothing acknowledged as committed
// is lost), a transaction whose end the producer never learned is read
// whole or not at all, and no record is read twice.
//
// The seed decides each transaction's records, partitions and outcome and
// where the crashes fall; the timing of a running lab and a real client
// does not repeat exactly, so a seed is a workload, and the check must
// hold whatever the timing.

// TxnConfig is one transactional chaos run.
type TxnConfig struct {
	Seed uint64
	// Transactions is how many transactions the producer runs (default 12).
	Transactions int
	// Crashes is how many broker crashes fall among them (default 3); each
	// crashed broker restarts after the next transaction, so at most one
	// is down and min.insync.replicas=2 holds.
	Crashes int
	Logger  *slog.Logger
}

// TxnOutcome is what the producer was told of one transaction.
type TxnOutcome string

const (
	TxnCommitted TxnOutcome = "committed" // EndTxn(commit) succeeded
	TxnAborted   TxnOutcome = "aborted"   // EndTxn(abort) succeeded
	TxnUnknown   TxnOutcome = "unknown"   // the producer never learned how it ended
)

// TxnRecord is one transaction as the producer saw it.
type TxnRecord struct {
	ID      int
	Outcome TxnOutcome
	// Acked are the values the producer was told were written (in the
	// transaction); Sent adds those whose produce failed.
	Acked, Sent []string
}

// TxnResult is a run's figures and what the check found.
type TxnResult struct {
	Seed                        uint64
	Committed, Aborted, Unknown int
	Crashes                     int
	FailedProduces              int // transactions with a produce that failed (then aborted)
	Read                        int // records read under read_committed
	Elapsed                     time.Duration
	Violations                  []string
}

// txnTopic is the run's topic.
const txnTopic = "txn-chaos"

// RunTxns runs cfg on a fresh lab in a temporary dir and checks it.
func RunTxns(ctx context.Context, cfg TxnConfig) (*TxnResult, error) {
	if cfg.Transactions <= 0 {
		cfg.Transactions = 12
	}
	if cfg.Crashes < 0 {
		cfg.Crashes = 0
	} else if cfg.Crashes == 0 {
		cfg.Crashes = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	began := time.Now()
	c, closeLab, err := openTemp(cluster.Options{Brokers: 3, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	defer closeLab()
	if _, err := c.CreateTopic(txnTopic, 3, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		return nil, err
	}
	w := &txnWorkload{c: c, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7478)), down: -1}
	defer w.closeProducer()
	records, err := w.run(ctx)
	if err != nil {
		return nil, err
	}
	read, err := readCommitted(ctx, c)
	if err != nil {
		return nil, err
	}
	res := &TxnResult{Seed: cfg.Seed, Crashes: w.crashes, Elapsed: time.Since(began), Violations: CheckTxns(records, read)}
	for _, rec := range records {
		if len(rec.Acked) < len(rec.Sent) {
			res.FailedProduces++
		}
		switch rec.Outcome {
		case TxnCommitted:
			res.Committed++
		case TxnAborted:
			res.Aborted++
		default:
			res.Unknown++
		}
	}
	for _, vs := range read {
		res.Read += len(vs)
	}
	return res, nil
}

// txnWorkload is the producer side of a run.
type txnWorkload struct {
	c       *cluster.Cluster
	cfg     TxnConfig
	rng     *rand.Rand
	prod    *kgo.Client
	down    int32 // the crashed broker, -1 if none
	crashes int
}

const txnID = "chaos-tx"

func (w *txnWorkload) seeds() []string {
	var out []string
	for id := int32(1); id <= 3; id++ {
		if b := w.c.Broker(id); b != nil && id != w.down {
			out = append(out, b.Addr())
		}
	}
	return out
}

func (w *txnWorkload) producer() (*kgo.Client, error) {
	if w.prod == nil {
		p, err := kgo.NewClient(kgo.SeedBrokers(w.seeds()...), kgo.TransactionalID(txnID),
			kgo.DefaultProduceTopic(txnTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(30*time.Second), kgo.TransactionTimeout(60*time.Second),
			kgo.RetryTimeout(30*time.Second))
		if err != nil {
			return nil, err
		}
		w.prod = p
	}
	return w.prod, nil
}

func (w *txnWorkload) closeProducer() {
	if w.prod != nil {
		w.prod.Close()
		w.prod = nil
	}
}

// crashPoint is where a transaction's crash falls.
type crashPoint int

const (
	noCrash     crashPoint = iota
	crashBefore            // before the transaction begins
	crashMid               // after half its records, before EndTxn
	crashEnd               // while EndTxn writes the markers
)

// plan decides, from the seed, which transactions a crash falls in:
// Crashes of them, never two in a row (the broker down restarts after the
// next transaction).
func (w *txnWorkload) plan() []crashPoint {
	n := w.cfg.Transactions
	points := make([]crashPoint, n)
	slots := w.rng.Perm(n / 2)
	for i := 0; i < w.cfg.Crashes && i < len(slots); i++ {
		points[slots[i]*2] = crashPoint(1 + w.rng.IntN(3))
	}
	return points
}

func (w *txnWorkload) run(ctx context.Context) ([]TxnRecord, error) {
	points := w.plan()
	var out []TxnRecord
	for i := range w.cfg.Transactions {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		commit := w.rng.IntN(10) < 7
		n := 1 + w.rng.IntN(5)
		parts := make([]int32, n)
		for j := range parts {
			parts[j] = int32(w.rng.IntN(3))
		}
		victim := w.rng.IntN(4) // 0..2: the leader of that partition; 3: the coordinator
		if points[i] == crashBefore {
			if err := w.crash(ctx, victim); err != nil {
				return nil, err
			}
		}
		at := func(p crashPoint) func() error {
			if points[i] != p {
				return nil
			}
			return func() error { return w.crash(ctx, victim) }
		}
		rec, err := w.transaction(ctx, i, commit, parts, at(crashMid), at(crashEnd))
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
		if points[i] == noCrash && w.down >= 0 {
			if err := w.restart(); err != nil {
				return nil, err
			}
		}
	}
	if w.down >= 0 {
		if err := w.restart(); err != nil {
			return nil, err
		}
	}
	// A sentinel transaction, one record a partition: the reader knows it
	// has read everything once it read these.
	rec, err := w.transaction(ctx, -1, true, []int32{0, 1, 2}, nil, nil)
	if err != nil {
		return nil, err
	}
	if rec.Outcome != TxnCommitted {
		return nil, fmt.Errorf("the sentinel transaction ended %s", rec.Outcome)
	}
	return append(out, rec), nil
}

// transaction runs one transaction: half its records, mid (a crash, if
// not nil), the rest, then EndTxn, with end (a crash, if not nil) run
// alongside. A failed produce aborts it; a failed end makes its outcome
// unknown and the producer is replaced (the next instance's InitProducerId
// completes or aborts what is left).
func (w *txnWorkload) transaction(ctx context.Context, id int, commit bool, parts []int32, mid, end func() error) (TxnRecord, error) {
	rec := TxnRecord{ID: id, Outcome: TxnUnknown}
	p, err := w.producer()
	if err != nil {
		return rec, err
	}
	if err := p.BeginTransaction(); err != nil {
		w.closeProducer()
		return rec, nil // nothing was sent: unknown with no records is vacuous
	}
	failed := false
	for j, part := range parts {
		if j == len(parts)/2 && mid != nil {
			if err := mid(); err != nil {
				return rec, err
			}
		}
		v := fmt.Sprintf("t%d-r%d", id, j)
		if id < 0 {
			v = fmt.Sprintf("end-%d", part)
		}
		rec.Sent = append(rec.Sent, v)
		pctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		err := p.ProduceSync(pctx, &kgo.Record{Value: []byte(v), Partition: part}).FirstErr()
		cancel()
		if err != nil {
			failed = true
			break
		}
		rec.Acked = append(rec.Acked, v)
	}
	try := kgo.TryCommit
	if !commit || failed {
		try = kgo.TryAbort
	}
	var endErr error
	var crashing sync.WaitGroup
	if end != nil {
		crashing.Go(func() { endErr = end() })
	}
	ectx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = p.EndTransaction(ectx, try)
	cancel()
	crashing.Wait()
	if endErr != nil {
		return rec, endErr
	}
	switch {
	case err != nil:
		w.closeProducer()
	case try == kgo.TryCommit:
		rec.Outcome = TxnCommitted
	default:
		rec.Outcome = TxnAborted
	}
	return rec, ctx.Err()
}

// crash crashes victim's broker: the leader of partition victim, or (3)
// the transaction coordinator's broker.
func (w *txnWorkload) crash(ctx context.Context, victim int) error {
	if w.down >= 0 {
		return nil
	}
	var id int32 = -1
	if victim < 3 {
		if t, ok := w.c.Controller().Topic(txnTopic); ok {
			id = t.Partitions[victim].Leader
		}
	} else {
		id = w.coordinator(ctx)
	}
	if id < 1 {
		return nil // no leader right now: nothing to crash
	}
	if err := w.c.Crash(id); err != nil {
		return err
	}
	w.down = id
	w.crashes++
	return nil
}

// coordinator asks FindCoordinator which broker coordinates the
// transactional id (-1 if no broker answers).
func (w *txnWorkload) coordinator(ctx context.Context) int32 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(w.seeds()...))
	if err != nil {
		return -1
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = 1, []string{txnID}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(fctx, cl)
	if err != nil || len(resp.Coordinators) == 0 || resp.Coordinators[0].ErrorCode != 0 {
		return -1
	}
	return resp.Coordinators[0].NodeID
}

func (w *txnWorkload) restart() error {
	id := w.down
	w.down = -1
	return w.c.Restart(id)
}

// readCommitted reads the topic from the start under read_committed until
// it has read every partition's sentinel, and returns each partition's
// values in offset order.
func readCommitted(ctx context.Context, c *cluster.Cluster) (map[int32][]string, error) {
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		if b := c.Broker(id); b != nil {
			seeds = append(seeds, b.Addr())
		}
	}
	start := map[string]map[int32]kgo.Offset{txnTopic: {}}
	for p := range int32(3) {
		start[txnTopic][p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(start),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out := map[int32][]string{}
	ended := map[int32]bool{}
	for len(ended) < 3 {
		fs := cons.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return nil, fmt.Errorf("read_committed: %d of 3 partitions read to their sentinel: %w", len(ended), err)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !kerr.IsRetriable(err) {
				ferr = fmt.Errorf("read_committed partition %d: %w", p, err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			out[r.Partition] = append(out[r.Partition], v)
			if v == fmt.Sprintf("end-%d", r.Partition) {
				ended[r.Partition] = true
			}
		})
	}
	return out, nil
}

// CheckTxns holds what a read_committed consumer read (by partition) to
// what the producer was told, and returns the violations: a record of an
// aborted transaction read, a committed transaction's acknowledged record
// missing, an unknown one read in part, a record read twice or one never
// sent.
func CheckTxns(records []TxnRecord, read map[int32][]string) []string {
	txns := make([]invariant.Txn, 0, len(records))
	for _, rec := range records {
		t := invariant.Txn{Name: fmt.Sprintf("transaction %d", rec.ID), Acked: rec.Acked, Sent: rec.Sent}
		if rec.ID < 0 {
			t.Name = "the sentinel transaction"
		}
		if rec.Outcome != TxnUnknown {
			t.Outcome = string(rec.Outcome)
		}
		txns = append(txns, t)
	}
	var all []string
	for _, vs := range read {
		all = append(all, vs...)
	}
	var bad []string
	for _, v := range invariant.Transactions(txns, all) {
		bad = append(bad, v.String())
	}
	slices.Sort(bad)
	return bad
}

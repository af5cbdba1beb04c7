package controller

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestStoreCompactsLevelZero fills level 0 of a store opened with the
// controller's options (memtables shrunk to 64 KiB and writes unsynced, so
// it takes milliseconds) past NumLevelZeroTables: with no compactor
// running, needsCompaction says so, and compactStore empties level 0 and
// keeps every key.
func TestStoreCompactsLevelZero(t *testing.T) {
	opts := badgerOptions(t.TempDir(), slog.New(slog.DiscardHandler)).WithMemTableSize(64 << 10).WithValueThreshold(1 << 10).WithSyncWrites(false)
	db, err := badger.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := make([]byte, 1<<10)
	keys := 0
	for !needsCompaction(db) {
		if keys > 100_000 {
			t.Fatalf("level 0 never grew past %d tables: %+v", opts.NumLevelZeroTables, db.Levels()[0])
		}
		if err := db.Update(func(txn *badger.Txn) error {
			for range 10 {
				if err := txn.Set(fmt.Appendf(nil, "partition/t/%010d", keys), value); err != nil {
					return err
				}
				keys++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := compactStore(db); err != nil {
		t.Fatal(err)
	}
	if n := db.Levels()[0].NumTables; n != 0 || needsCompaction(db) {
		t.Fatalf("level 0 holds %d tables after compactStore, want 0", n)
	}
	if err := db.View(func(txn *badger.Txn) error {
		for _, k := range []int{0, keys / 2, keys - 1} {
			if _, err := txn.Get(fmt.Appendf(nil, "partition/t/%010d", k)); err != nil {
				return fmt.Errorf("key %d of %d: %w", k, keys, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

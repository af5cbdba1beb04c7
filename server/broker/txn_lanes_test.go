package broker

import (
	"testing"

	"tidemark/events"
	"tidemark/storage"
)

// TestTxnRecordsForLanes: a transaction marker decodes for the lanes as
// its marker (commit or abort, its bytes left out) with its producer;
// plain batches stay unmarked, and hasTxnBatch tells a record set holding
// a transactional batch from one that holds none.
func TestTxnRecordsForLanes(t *testing.T) {
	plain := storage.NewBatch([]storage.Record{{Key: []byte("k"), Value: []byte("v")}})
	for _, commit := range []bool{true, false} {
		marker := controlBatch(42, 1, commit, 0, 1000)
		recs := decodeForUI(marker)
		want := events.ControlAbort
		if commit {
			want = events.ControlCommit
		}
		if len(recs) != 1 || recs[0].Control != want || !recs[0].Txn || recs[0].ProducerID != 42 || recs[0].Key != "" || recs[0].Value != "" {
			t.Errorf("marker (commit %v) for the lanes: %+v", commit, recs)
		}
		if !hasTxnBatch(append(append([]byte(nil), plain...), marker...)) {
			t.Errorf("a record set ending in a marker (commit %v) holds no transactional batch", commit)
		}
	}
	if recs := decodeForUI(plain); len(recs) != 1 || recs[0].Txn || recs[0].Control != "" || recs[0].Value != "v" {
		t.Errorf("a plain batch for the lanes: %+v", recs)
	}
	if hasTxnBatch(plain) || hasTxnBatch(nil) || hasTxnBatch(plain[:30]) {
		t.Error("hasTxnBatch found a transactional batch in a plain, an empty or a cut record set")
	}
}

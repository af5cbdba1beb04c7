package storage

import "testing"

// TestEachBatch: EachBatch hands over the batches ReadBatches returns, in
// order, one at a time, and stops when told to, reading nothing after.
func TestEachBatch(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 10, 3, 100) // 10 batches of 3 records
	all, err := l.ReadBatches(4, l.LogEndOffset(), 100)
	if err != nil || len(all) != 9 || all[0].Header.BaseOffset != 3 {
		t.Fatalf("ReadBatches from 4: %d batches, first at %d, %v", len(all), all[0].Header.BaseOffset, err)
	}
	var seen []int64
	err = l.EachBatch(4, l.LogEndOffset(), 100, func(b Batch) bool {
		seen = append(seen, b.Header.BaseOffset)
		return len(seen) < 4
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{3, 6, 9, 12}
	if len(seen) != len(want) {
		t.Fatalf("EachBatch went on after false: batches at %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] || all[i].Header.BaseOffset != want[i] {
			t.Fatalf("batches at %v, want %v", seen, want)
		}
	}
	// maxBatches and maxOffset bound it as they bound ReadBatches.
	n := 0
	if err := l.EachBatch(0, 9, 100, func(Batch) bool { n++; return true }); err != nil || n != 3 {
		t.Fatalf("EachBatch below offset 9: %d batches, %v; want 3", n, err)
	}
	n = 0
	if err := l.EachBatch(0, l.LogEndOffset(), 2, func(Batch) bool { n++; return true }); err != nil || n != 2 {
		t.Fatalf("EachBatch of at most 2: %d batches, %v", n, err)
	}
}

package invariant

import "testing"

// TestCompactionRemovable: what the log cleaner may remove, and what it
// may not.
func TestCompactionRemovable(t *testing.T) {
	c := NewCompaction(Topic{Compact: true, DeleteRetentionMs: 1000}, 10_000)
	c.Saw("k1", 0)
	c.Saw("k1", 3) // k1's later value
	c.Saw("k2", 1)
	c.Saw("", 7) // keyless: supersedes nothing
	for _, x := range []struct {
		name      string
		key       string
		offset    int64
		tombstone bool
		ts        int64
		want      bool
	}{
		{"superseded", "k1", 0, false, 0, true},
		{"a key's latest", "k1", 3, false, 0, false},
		{"the only value of its key", "k2", 1, false, 0, false},
		{"a key never seen", "k3", 5, false, 0, false},
		{"a tombstone past delete.retention.ms", "k2", 1, true, 8_999, true},
		{"a tombstone within delete.retention.ms", "k2", 1, true, 9_000, false},
		{"a superseded tombstone", "k1", 0, true, 9_999, true},
		{"keyless (written before the policy)", "", 6, false, 0, true},
	} {
		if got := c.Removable(x.key, x.offset, x.tombstone, x.ts); got != x.want {
			t.Errorf("%s: Removable(%q, %d, %v, %d) = %v, want %v", x.name, x.key, x.offset, x.tombstone, x.ts, got, x.want)
		}
	}
	// A topic that does not compact removes nothing; nor does no Compaction.
	d := NewCompaction(Topic{DeleteRetentionMs: 1000}, 10_000)
	d.Saw("k1", 3)
	var none *Compaction
	if d.Removable("k1", 0, false, 0) || d.Removable("", 0, false, 0) || none.Removable("k1", 0, true, 0) {
		t.Fatal("removable without compaction")
	}
}

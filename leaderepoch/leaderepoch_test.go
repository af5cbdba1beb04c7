package leaderepoch

import (
	"slices"
	"testing"
)

func TestAssign(t *testing.T) {
	c, ok := Assign(nil, Entry{0, 0})
	if !ok || !slices.Equal(c, []Entry{{0, 0}}) {
		t.Fatalf("first: %v %v", c, ok)
	}
	if _, ok := Assign(c, Entry{0, 3}); ok {
		t.Fatal("the same epoch at a later offset changes nothing")
	}
	if _, ok := Assign(c, Entry{-1, 3}); ok {
		t.Fatal("a batch without an epoch changes nothing")
	}
	// Epoch 1 never got a record: epoch 2 at the same offset replaces it.
	c, _ = Assign([]Entry{{0, 0}, {1, 4}}, Entry{2, 4})
	if !slices.Equal(c, []Entry{{0, 0}, {2, 4}}) {
		t.Fatalf("empty epoch kept: %v", c)
	}
	// A lower epoch at a later offset (after an unclean election on a
	// replica that had seen a higher one) drops what would break the order.
	c, _ = Assign([]Entry{{0, 0}, {3, 4}}, Entry{2, 6})
	if !slices.Equal(c, []Entry{{0, 0}, {2, 6}}) || !Valid(c) {
		t.Fatalf("order: %v", c)
	}
}

func TestTruncate(t *testing.T) {
	c := []Entry{{0, 0}, {2, 4}, {3, 6}}
	if got, _ := TruncateFromEnd(c, 4); !slices.Equal(got, []Entry{{0, 0}}) {
		t.Fatalf("from end: %v", got)
	}
	if _, ok := TruncateFromEnd(c, 7); ok {
		t.Fatal("nothing starts at or after 7")
	}
	if got, _ := TruncateFromStart(c, 5); !slices.Equal(got, []Entry{{2, 5}, {3, 6}}) {
		t.Fatalf("from start: %v", got)
	}
	if got, ok := TruncateFromStart(c, 0); ok || !slices.Equal(got, c) {
		t.Fatalf("from start 0: %v %v", got, ok)
	}
	if !slices.Equal(c, []Entry{{0, 0}, {2, 4}, {3, 6}}) {
		t.Fatal("the input was changed")
	}
}

func TestEndOffsetFor(t *testing.T) {
	cache := []Entry{{0, 0}, {2, 5}, {5, 9}}
	for _, tc := range []struct {
		requested int32
		want      EndOffset
	}{
		{-1, EndOffset{UndefinedEpoch, UndefinedOffset}},
		{0, EndOffset{0, 5}},
		{1, EndOffset{0, 5}}, // the largest epoch ≤ 1 is 0 (KIP-279)
		{4, EndOffset{2, 9}},
		{5, EndOffset{5, 12}}, // the latest epoch ends at the LEO
		{6, EndOffset{UndefinedEpoch, UndefinedOffset}},
	} {
		if got := EndOffsetFor(cache, 12, tc.requested); got != tc.want {
			t.Errorf("EndOffsetFor(%d) = %v, want %v", tc.requested, got, tc.want)
		}
	}
	if got := EndOffsetFor([]Entry{{3, 4}}, 9, 1); got != (EndOffset{1, 4}) {
		t.Errorf("older than every entry: %v", got)
	}
	if Latest(nil) != UndefinedEpoch || Latest(cache) != 5 {
		t.Error("Latest")
	}
	if Valid([]Entry{{1, 4}, {2, 4}}) || !Valid(cache) {
		t.Error("Valid")
	}
}

package fds

import "testing"

// TestLevels: the levels follow the share of the limit open, and an
// unknown limit is Plenty.
func TestLevels(t *testing.T) {
	open := 0
	defer SetAccount(1000, func() int { return open })()
	for _, tc := range []struct {
		open int
		want Level
	}{{0, Plenty}, {599, Plenty}, {600, CloseIdle}, {849, CloseIdle}, {850, RefuseConns}, {900, RefuseTopics}, {1200, RefuseTopics}} {
		open = tc.open
		if got := Now(); got != tc.want {
			t.Errorf("%d of 1000 open: %v, want %v", tc.open, got, tc.want)
		}
	}
	restore := SetAccount(0, func() int { return 5 })
	if Now() != Plenty {
		t.Error("unknown limit: not Plenty")
	}
	restore()
}

// TestCountOpen: the process has stdin, stdout and stderr at least.
func TestCountOpen(t *testing.T) {
	if Limit() == 0 {
		t.Skip("no limit here")
	}
	if n, _ := InUse(); n < 3 {
		t.Fatalf("%d descriptors open", n)
	}
}

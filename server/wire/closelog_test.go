package wire

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestCloseLogRateLimited: a client closed the same way a hundred times
// in a row (a tight reconnect loop) writes its first three lines and no
// more within LogInterval; another cause from the same address, and the
// same cause from another address, still get theirs.
func TestCloseLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var c closeLog
	c.every.LogInterval = time.Hour
	loop := errors.New("unsupported api key or version: Metadata v0 (key 3) is not served by this listener")
	for range 100 {
		c.warn(log, "127.0.0.1", "unsupported api key or version", loop)
	}
	c.warn(log, "127.0.0.1", "malformed request", errors.New("frame truncated"))
	c.warn(log, "127.0.0.2", "unsupported api key or version", loop)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 3 for the loop and 1 for each other cause:\n%s", len(lines), buf.String())
	}
}

package wire

import (
	"context"
	"runtime"
	"testing"
)

// TestRegionStats: one fetch of a segment's batches is counted as sent by
// sendfile (no byte through user space) or as copied (every byte read into
// user space, at least one read and one write), as the server is told.
func TestRegionStats(t *testing.T) {
	seg := newSegment(t, 4)
	var size int64
	for _, b := range seg.batches {
		size += int64(len(b))
	}
	for _, copyRegions := range []bool{false, true} {
		addr, _ := startServer(t, fetchHandler(seg, 12), Options{CopyFileRegions: copyRegions})
		c, err := Dial(context.Background(), addr, "follower")
		if err != nil {
			t.Fatal(err)
		}
		before := Regions()
		req := fetchRequest("orders", 0, 1)
		req.Topics[0].Partitions[1].FetchOffset = 12 // at the end: nothing to send
		req.SetVersion(12)
		if _, err := c.Request(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		c.Close()
		d := Regions().Sub(before)
		switch {
		case copyRegions || runtime.GOOS != "linux":
			if d.CopiedRegions < 1 || d.CopiedBytes < size || d.CopySyscalls < 2 {
				t.Errorf("copy=%v: %+v, want a copied region of %d bytes", copyRegions, d, size)
			}
		default:
			if d.SendfileRegions < 1 || d.SendfileBytes < size || d.SendfileCalls < 1 || d.CopiedBytes != 0 {
				t.Errorf("sendfile: %+v, want a region of %d bytes and nothing copied", d, size)
			}
		}
	}
}

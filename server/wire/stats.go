package wire

import "sync/atomic"

// Process-wide totals of the file regions fetch responses carried: how
// many went from the page cache to the socket with sendfile(2), and how
// many were read into user space and written (Options.CopyFileRegions, or
// a file sendfile cannot send).
var (
	sendfileRegions, sendfileBytes, sendfileCalls atomic.Int64
	copiedRegions, copiedBytes, copySyscalls      atomic.Int64
)

// RegionStats are the totals since the process started. They count every
// Server of the process, so a reader that wants one fetch's share takes
// the difference around it while nothing else fetches.
type RegionStats struct {
	// SendfileRegions and SendfileBytes were sent by sendfile(2): the
	// bytes never entered user space. SendfileCalls is its system calls.
	SendfileRegions, SendfileBytes, SendfileCalls int64
	// CopiedRegions and CopiedBytes were read into a user-space buffer and
	// written to the socket; CopySyscalls counts those reads and writes.
	CopiedRegions, CopiedBytes, CopySyscalls int64
}

// Regions returns the current totals.
func Regions() RegionStats {
	return RegionStats{
		SendfileRegions: sendfileRegions.Load(), SendfileBytes: sendfileBytes.Load(), SendfileCalls: sendfileCalls.Load(),
		CopiedRegions: copiedRegions.Load(), CopiedBytes: copiedBytes.Load(), CopySyscalls: copySyscalls.Load(),
	}
}

// Sub returns s minus before: what happened in between.
func (s RegionStats) Sub(before RegionStats) RegionStats {
	return RegionStats{
		SendfileRegions: s.SendfileRegions - before.SendfileRegions, SendfileBytes: s.SendfileBytes - before.SendfileBytes,
		SendfileCalls: s.SendfileCalls - before.SendfileCalls, CopiedRegions: s.CopiedRegions - before.CopiedRegions,
		CopiedBytes: s.CopiedBytes - before.CopiedBytes, CopySyscalls: s.CopySyscalls - before.CopySyscalls,
	}
}

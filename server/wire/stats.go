package wire

import "sync/atomic"

// regionCounters count the file regions fetch responses carried: how many
// went from the page cache to the socket with sendfile(2), and how many
// were read into user space and written (Options.CopyFileRegions, or a file
// sendfile cannot send). There is one set for the process and one per
// Server, so a reader can take one broker's share while others fetch.
type regionCounters struct {
	sendfileRegions, sendfileBytes, sendfileCalls atomic.Int64
	copiedRegions, copiedBytes, copySyscalls      atomic.Int64
}

// process counts every Server of the process.
var process regionCounters

// regionCount adds to the process's counters and to one Server's.
type regionCount struct{ server *regionCounters }

func (c regionCount) each(f func(*regionCounters)) {
	f(&process)
	if c.server != nil {
		f(c.server)
	}
}

func (c regionCount) sendfileCall() { c.each(func(r *regionCounters) { r.sendfileCalls.Add(1) }) }
func (c regionCount) copySyscall()  { c.each(func(r *regionCounters) { r.copySyscalls.Add(1) }) }

func (c regionCount) sent(n int64) {
	c.each(func(r *regionCounters) { r.sendfileRegions.Add(1); r.sendfileBytes.Add(n) })
}
func (c regionCount) copiedRegion() { c.each(func(r *regionCounters) { r.copiedRegions.Add(1) }) }
func (c regionCount) copied(n int64) {
	c.each(func(r *regionCounters) { r.copiedBytes.Add(n) })
}

func (r *regionCounters) stats() RegionStats {
	return RegionStats{
		SendfileRegions: r.sendfileRegions.Load(), SendfileBytes: r.sendfileBytes.Load(), SendfileCalls: r.sendfileCalls.Load(),
		CopiedRegions: r.copiedRegions.Load(), CopiedBytes: r.copiedBytes.Load(), CopySyscalls: r.copySyscalls.Load(),
	}
}

// RegionStats are totals of file regions sent. Regions() counts every
// Server of the process, so a reader that wants one fetch's share takes
// the difference around it while nothing else fetches; Server.Regions
// counts one Server's since it was made.
type RegionStats struct {
	// SendfileRegions and SendfileBytes were sent by sendfile(2): the
	// bytes never entered user space. SendfileCalls is its system calls.
	SendfileRegions, SendfileBytes, SendfileCalls int64
	// CopiedRegions and CopiedBytes were read into a user-space buffer and
	// written to the socket; CopySyscalls counts those reads and writes.
	CopiedRegions, CopiedBytes, CopySyscalls int64
}

// Regions returns the process's totals since it started.
func Regions() RegionStats { return process.stats() }

// Regions returns this Server's totals since NewServer; zero before any
// fetch response carried a file region.
func (s *Server) Regions() RegionStats { return s.regions.stats() }

// Sub returns s minus before: what happened in between.
func (s RegionStats) Sub(before RegionStats) RegionStats {
	return RegionStats{
		SendfileRegions: s.SendfileRegions - before.SendfileRegions, SendfileBytes: s.SendfileBytes - before.SendfileBytes,
		SendfileCalls: s.SendfileCalls - before.SendfileCalls, CopiedRegions: s.CopiedRegions - before.CopiedRegions,
		CopiedBytes: s.CopiedBytes - before.CopiedBytes, CopySyscalls: s.CopySyscalls - before.CopySyscalls,
	}
}

package fds

import (
	"os"
	"syscall"
)

// Limit returns the process's open-file limit (RLIMIT_NOFILE's soft
// value); 0 when it cannot be read or is unlimited.
func Limit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<40 { // not RLIM_INFINITY
		return rl.Cur
	}
	return 0
}

// countOpen counts the process's open descriptors (/proc/self/fd, less the
// one reading it); 0 when it cannot be read.
func countOpen() int {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	return max(len(names)-1, 0)
}

package fds

import "syscall"

// Limit returns the process's open-file limit (RLIMIT_NOFILE's soft
// value); 0 when it cannot be read or is unlimited.
func Limit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<40 { // not RLIM_INFINITY
		return rl.Cur
	}
	return 0
}

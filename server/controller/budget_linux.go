package controller

import "syscall"

// machineLimits returns the process's open-file limit and the machine's
// physical memory in bytes; 0 for what cannot be read.
func machineLimits() (files, memory uint64) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < 1<<40 { // not RLIM_INFINITY
		files = rl.Cur
	}
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) == nil {
		memory = uint64(si.Totalram) * uint64(si.Unit)
	}
	return files, memory
}

package fds

import (
	"encoding/binary"
	"sync"
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
// one reading it); 0 when it cannot be read. It counts the directory's
// entries in place, without a string for each.
func countOpen() int {
	fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer syscall.Close(fd)
	buf := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(buf)
	n := 0
	for {
		got, err := syscall.ReadDirent(fd, *buf)
		if err != nil || got <= 0 {
			break
		}
		n += countDirents((*buf)[:got])
	}
	return max(n-1, 0)
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// countDirents counts the linux_dirent64 records in b other than "." and
// "..": each is d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), then
// the name, NUL-terminated.
func countDirents(b []byte) int {
	n := 0
	for len(b) >= 20 {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 20 || reclen > len(b) {
			break
		}
		if name := b[19:reclen]; !(name[0] == '.' && (name[1] == 0 || name[1] == '.' && name[2] == 0)) {
			n++
		}
		b = b[reclen:]
	}
	return n
}

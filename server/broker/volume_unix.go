//go:build linux || darwin || freebsd

package broker

import "syscall"

// volumeBytes returns the total and usable bytes of the volume holding
// path (statfs: usable is what an unprivileged writer may still use), or
// Kafka's UNKNOWN_VOLUME_BYTES (-1) when statfs fails.
func volumeBytes(path string) (total, usable int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return unknownVolumeBytes, unknownVolumeBytes
	}
	return int64(st.Blocks) * int64(st.Bsize), int64(st.Bavail) * int64(st.Bsize)
}

//go:build !(linux || darwin || freebsd)

package broker

// volumeBytes is Kafka's UNKNOWN_VOLUME_BYTES (-1) where statfs is not used.
func volumeBytes(string) (total, usable int64) { return unknownVolumeBytes, unknownVolumeBytes }

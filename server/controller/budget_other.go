//go:build !linux

package controller

// machineLimits returns 0s (unknown) where the lab does not read them; the
// budget then assumes 8,192 descriptors and no memory bound.
func machineLimits() (files, memory uint64) { return 0, 0 }

//go:build !amd64 || purego

package crc32c

import "hash/crc32"

func detect() int { return implGeneric }

func update(crc uint32, p []byte) uint32 { return crc32.Update(crc, table, p) }

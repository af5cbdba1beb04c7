package storage

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
)

// bombBatch returns a produced batch whose records are zstd: one record
// holding a value of n zero bytes; the batch is about 2 KiB for 60 MiB.
// With stream, the zstd frame does not say its size (a streaming encoder's
// frame), so only decoding finds it.
func bombBatch(t testing.TB, n int, stream bool) []byte {
	t.Helper()
	plain := NewBatch([]Record{{Value: make([]byte, n), Timestamp: 1}})
	var body []byte
	if stream {
		var buf bytes.Buffer
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		if err != nil {
			t.Fatal(err)
		}
		zw.Write(plain[batchHeaderSize:])
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		body = buf.Bytes()
	} else {
		zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		if err != nil {
			t.Fatal(err)
		}
		body = zw.EncodeAll(plain[batchHeaderSize:], nil)
		zw.Close()
	}
	return sealed(plain[:batchHeaderSize], withRecords(4, body))
}

// vmHWM returns the process's peak resident set (VmHWM) in bytes; 0 where
// /proc does not say.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			var kb int64
			for _, c := range f[1] {
				kb = kb*10 + int64(c-'0')
			}
			return kb << 10
		}
	}
	return 0
}

// TestDecompressionBombRefused is the probe at the validator: 20
// produces of a ~2 KiB zstd batch holding one 60 MiB value are refused
// with MESSAGE_TOO_LARGE, each having decoded no more than
// MaxDecompressedBatchBytes: the bytes allocated per produce stay within
// a few times the bound, not 60 MiB. Before, each was accepted (and every
// reader paid the 60 MiB). A batch just within the bound is accepted.
func TestDecompressionBombRefused(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "frame says its size", true: "streamed frame"}[stream], func(t *testing.T) {
			bombRefused(t, stream)
		})
	}
}

func bombRefused(t *testing.T, stream bool) {
	bomb := bombBatch(t, 60<<20, stream)
	if len(bomb) > 8<<10 {
		t.Fatalf("the bomb is %d bytes, want a small one", len(bomb))
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before, peak := ms.TotalAlloc, uint64(0)
	for i := range 20 {
		_, err := ValidateProducedBatch(bomb)
		if !errors.Is(err, kerr.MessageTooLarge) {
			t.Fatalf("produce %d of a %d-byte batch inflating to 60 MiB: %v, want MESSAGE_TOO_LARGE", i, len(bomb), err)
		}
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	perProduce := (ms.TotalAlloc - before) / 20
	t.Logf("batch %d bytes; allocated %.1f MiB per produce; heap in use at most %.1f MiB; process peak RSS %.1f MiB",
		len(bomb), float64(perProduce)/(1<<20), float64(peak)/(1<<20), float64(vmHWM())/(1<<20))
	if perProduce > 3*MaxDecompressedBatchBytes {
		t.Fatalf("%d bytes allocated per refused produce, want at most 3 × %d", perProduce, MaxDecompressedBatchBytes)
	}
	if peak > 256<<20 {
		t.Fatalf("heap in use reached %d bytes", peak)
	}

	ok := bombBatch(t, MaxDecompressedBatchBytes-64, stream)
	if _, err := ValidateProducedBatch(ok); err != nil {
		t.Fatalf("a batch within the bound: %v", err)
	}
}

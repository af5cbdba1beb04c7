package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRecord writes one record field by field with the lengths given as
// they are (kmsg would write a null as -1): key and value lengths, then a
// header count and each header's key and value lengths. A negative length
// has no bytes after it.
func rawRecord(offsetDelta int32, keyLen, valueLen, headerCount int32, headerLens ...int32) []byte {
	var body []byte
	body = append(body, 0)                      // attributes
	body = kbin.AppendVarlong(body, 0)          // timestamp delta
	body = kbin.AppendVarint(body, offsetDelta) // offset delta
	field := func(l int32) {
		body = kbin.AppendVarint(body, l)
		if l > 0 {
			body = append(body, bytes.Repeat([]byte("x"), int(l))...)
		}
	}
	field(keyLen)
	field(valueLen)
	body = kbin.AppendVarint(body, headerCount)
	for _, l := range headerLens {
		field(l)
	}
	return append(kbin.AppendVarint(nil, int32(len(body))), body...)
}

// poisonBatch is a produced batch of three records whose second is rec
// (written with offset delta 1).
func poisonBatch(rec []byte) []byte {
	good := goodBatch() // three records
	body := rawRecord(0, 1, 2, 0)
	body = append(body, rec...)
	body = append(body, rawRecord(2, -1, 2, 0)...)
	return sealed(good, withRecords(0, body))
}

// poisonCases are the poison records, and their kin.
func poisonCases() []struct {
	name string
	rec  []byte
} {
	return []struct {
		name string
		rec  []byte
	}{
		{"key length -5", rawRecord(1, -5, 2, 0)},
		{"value length -7", rawRecord(1, 1, -7, 0)},
		{"header count -3", rawRecord(1, 1, 2, -3)},
		{"header key length -1", rawRecord(1, 1, 2, 1, -1, 1)},
		{"header value length -2", rawRecord(1, 1, 2, 1, 1, -2)},
	}
}

// TestPoisonRecordsRefused: a batch with a valid CRC whose record has a
// negative length other than -1 (key, value, header value), a negative
// header count or a negative header key length is INVALID_RECORD, as
// Kafka's record reader refuses the last two. Before, all five were
// appended, and librdkafka consumers stopped at their offset. The same
// batch with the lengths a client writes (-1 for a null) is accepted.
func TestPoisonRecordsRefused(t *testing.T) {
	for _, tc := range poisonCases() {
		_, err := ValidateProducedBatch(poisonBatch(tc.rec))
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: %v, want INVALID_RECORD", tc.name, err)
		}
	}
	for name, rec := range map[string][]byte{
		"null key":          rawRecord(1, -1, 2, 0),
		"null value":        rawRecord(1, 1, -1, 0),
		"null header value": rawRecord(1, 1, 2, 1, 1, -1),
		"empty header key":  rawRecord(1, 1, 2, 1, 0, 3),
	} {
		if _, err := ValidateProducedBatch(poisonBatch(rec)); err != nil {
			t.Errorf("%s: %v, want it accepted", name, err)
		}
	}
}

// TestWritePoisonSeeds keeps FuzzValidateProducedBatch's seed corpus in
// testdata/fuzz in step with poisonCases: with -rewrite-seeds it writes
// them, and without it fails if one is missing.
func TestWritePoisonSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzValidateProducedBatch")
	for i, tc := range poisonCases() {
		name := filepath.Join(dir, fmt.Sprintf("poison-%d", i))
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nint(-1)\nbyte('\\x00')\n", poisonBatch(tc.rec))
		got, err := os.ReadFile(name)
		if err == nil && string(got) == want {
			continue
		}
		if os.Getenv("TIDEMARK_REWRITE_SEEDS") == "" {
			t.Fatalf("%s (%s) is missing or stale: run with TIDEMARK_REWRITE_SEEDS=1", name, tc.name)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// recordsRoundTrip fails unless every record of raw, the decompressed
// records of a batch of n records, reads with franz-go's kmsg and writes
// back byte for byte: a record kmsg would write differently (a negative
// length other than -1, a non-minimal varint) is one some client reads
// differently, or not at all.
func recordsRoundTrip(t *testing.T, raw []byte, n int32) {
	t.Helper()
	for i := int32(0); i < n; i++ {
		length, vn := kbin.Varint(raw)
		if vn <= 0 || length < 0 || int(length) > len(raw)-vn {
			t.Fatalf("record %d: length cut short", i)
		}
		rec := raw[:vn+int(length)]
		raw = raw[len(rec):]
		var r kmsg.Record
		if err := r.ReadFrom(rec); err != nil {
			t.Fatalf("record %d: kmsg: %v", i, err)
		}
		if again := r.AppendTo(nil); !bytes.Equal(again, rec) {
			t.Fatalf("record %d: accepted as % x, kmsg writes it back as % x", i, rec, again)
		}
	}
}

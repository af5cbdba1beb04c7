package web

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"tidemark/events"
)

// streamLab is a testLab whose partition holds records without end, each
// made by value(offset); it counts the records it was asked for and, at
// each, how many bytes of the answer had been written by then.
type streamLab struct {
	*testLab
	value   func(off int64) []byte
	asked   int
	written []int // bytes of the answer written when record i was made
	out     *writeRecorder
}

func (l *streamLab) ConsumeEach(_ string, _ int32, offset int64, limit int, fn func(ConsumedRecord) bool) (int64, error) {
	if offset < 0 {
		offset = 0
	}
	for off := offset; off < offset+int64(limit); off++ {
		l.asked++
		l.written = append(l.written, l.out.Body.Len())
		key := []byte("k")
		if off%3 == 0 {
			key = nil
		}
		if !fn(ConsumedRecord{Offset: off, LeaderEpoch: 2, Timestamp: 1700000000000 + off, Key: key, Value: l.value(off)}) {
			break
		}
	}
	return 1 << 40, nil
}

func (l *streamLab) Consume(topic string, partition int32, offset int64, limit int) ([]ConsumedRecord, int64, error) {
	var out []ConsumedRecord
	hw, err := l.ConsumeEach(topic, partition, offset, limit, func(r ConsumedRecord) bool { out = append(out, r); return true })
	return out, hw, err
}

// writeRecorder is a ResponseRecorder that notes its largest single write.
type writeRecorder struct {
	*httptest.ResponseRecorder
	largest int
}

func (w *writeRecorder) Write(b []byte) (int, error) {
	w.largest = max(w.largest, len(b))
	return w.ResponseRecorder.Write(b)
}

// awkward is a value of n bytes that exercises the text encoding: runes of
// 1 to 4 bytes (cut across the route's pieces), bytes that are not UTF-8,
// quotes, backslashes, control characters and what JSON escapes for HTML.
func awkward(n int) []byte {
	if len(awkwardBytes) < n {
		parts := []string{"a", "é", "€", "😀", "\xff", "\xe2\x82", `"`, `\`, "\n", "\x01", "<", ">", "&", "\u2028"}
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			b.WriteString(parts[i*7%len(parts)])
		}
		awkwardBytes = b.Bytes()
	}
	return awkwardBytes[:n:n]
}

var awkwardBytes []byte

// TestRecordsRouteStreams: GET …/records writes each record as it reads
// it — record i is on its way before record i+1 is read — and a large
// value in pieces (no write over 128 KiB for a 1.5 MiB value); it stops
// reading at MaxRecordsBytes of keys and values; and what it writes is
// byte for byte what encoding/json writes for the same ConsumeResponse, in
// text (runes cut across pieces, bytes that are not UTF-8, HTML
// characters) and in base64. Before, the route read every record, then
// encoded the whole answer in one buffer and one write.
func TestRecordsRouteStreams(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		value       func(int64) []byte
		wantRecords int
	}{
		{"text, 100 KiB values", "limit=1000", func(off int64) []byte { return awkward(100<<10 + int(off)) }, 10},
		{"base64, 100 KiB values", "limit=1000&encoding=base64", func(off int64) []byte { return awkward(100<<10 + int(off)) }, 10},
		{"text, one 1.5 MiB value", "limit=5", func(int64) []byte { return awkward(3 << 19) }, 1},
		{"base64, one 1.5 MiB value", "limit=5&encoding=base64", func(int64) []byte { return awkward(3 << 19) }, 1},
		{"small records up to the limit", "limit=7", func(off int64) []byte {
			if off == 4 {
				return nil // a tombstone
			}
			return awkward(int(off))
		}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &writeRecorder{ResponseRecorder: httptest.NewRecorder()}
			lab := &streamLab{testLab: newTestLab(events.BusOptions{}), value: tc.value, out: out}
			s := newTestServer(t, lab, Options{})
			s.Handler().ServeHTTP(out, loopbackRequest("GET", "/api/v1/topics/demo/partitions/0/records?offset=0&"+tc.query, nil))
			if out.Code != 200 {
				t.Fatalf("status %d: %.300s", out.Code, out.Body)
			}
			var got ConsumeResponse
			if err := json.Unmarshal(out.Body.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if len(got.Records) != tc.wantRecords || lab.asked > tc.wantRecords+1 {
				t.Fatalf("%d records in the answer, %d read; want %d, and at most one more read", len(got.Records), lab.asked, tc.wantRecords)
			}
			for i := 1; i < len(lab.written); i++ {
				if lab.written[i] <= lab.written[i-1] {
					t.Fatalf("nothing written between reading records %d and %d: the answer is not streamed", i-1, i)
				}
			}
			if out.largest > 128<<10 {
				t.Fatalf("a write of %d bytes: the answer is not written in pieces", out.largest)
			}
			// What encoding/json writes for the records the route chose.
			field, enc := textOrNull, EncodingText
			if strings.Contains(tc.query, "base64") {
				field, enc = base64OrNull, EncodingBase64
			}
			want := ConsumeResponse{HighWatermark: 1 << 40, NextOffset: int64(tc.wantRecords), Encoding: enc}
			for off := range int64(tc.wantRecords) {
				key := []byte("k")
				if off%3 == 0 {
					key = nil
				}
				want.Records = append(want.Records, ConsumedRecordJSON{Offset: off, LeaderEpoch: 2, Timestamp: 1700000000000 + off,
					Key: field(key), Value: field(tc.value(off))})
			}
			var buf bytes.Buffer
			json.NewEncoder(&buf).Encode(want)
			if !bytes.Equal(out.Body.Bytes(), buf.Bytes()) {
				g, w := out.Body.Bytes(), buf.Bytes()
				i := 0
				for i < min(len(g), len(w)) && g[i] == w[i] {
					i++
				}
				t.Fatalf("answer differs from encoding/json's at byte %d of %d/%d: %q against %q", i, len(g), len(w),
					g[max(0, i-20):min(len(g), i+20)], w[max(0, i-20):min(len(w), i+20)])
			}
		})
	}
}

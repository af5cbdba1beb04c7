package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzMaxBytes is the frame limit under fuzzing, small enough that the
// fuzzer can reach it.
const fuzzMaxBytes = 1 << 16

// FuzzReadRequest feeds arbitrary bytes to the listener's request decoder
// (size prefix, header, kmsg body, leftover check) and asserts:
//   - it never panics and allocates at most a bounded multiple of the bytes
//     it was given, never the size the prefix claims;
//   - every error is one the listener knows how to act on;
//   - a request it accepts, re-encoded by kmsg's RequestFormatter, decodes
//     again to the same header and to a body that re-encodes to the same
//     bytes (decoding is a function of the bytes, and nothing is lost).
//
// The seed corpus in testdata/fuzz/FuzzReadRequest runs with plain go test;
// TestWriteFuzzSeeds regenerates it.
func FuzzReadRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		req, err := ReadRequest(bytes.NewReader(data), fuzzMaxBytes)
		runtime.ReadMemStats(&after)
		// kmsg may expand each wire byte into a wider struct field (an
		// array element of a few bytes becomes a struct of ~100), so the
		// bound is linear in the input with a generous factor.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(2*readChunk+512*len(data)) {
			t.Fatalf("decoding %d bytes allocated %d", len(data), alloc)
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrUnsupported):
			if req == nil || req.Body != nil {
				t.Fatalf("unsupported request without its header: %+v", req)
			}
			return
		case errors.Is(err, ErrMalformed), errors.Is(err, io.EOF):
			if req != nil {
				t.Fatalf("error %v with a request", err)
			}
			return
		default:
			t.Fatalf("unexpected error kind: %v", err)
		}

		h := req.Header
		opts := []kmsg.RequestFormatterOpt{}
		if h.ClientID != nil {
			opts = append(opts, kmsg.FormatterClientID(*h.ClientID))
		}
		re := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req.Body, h.CorrelationID)
		again, err := ReadRequest(bytes.NewReader(re), math.MaxInt32)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", describeKey(h.APIKey, h.APIVersion), err)
		}
		h2 := again.Header
		if h2.APIKey != h.APIKey || h2.APIVersion != h.APIVersion || h2.CorrelationID != h.CorrelationID ||
			(h.ClientID == nil) != (h2.ClientID == nil) || (h.ClientID != nil && *h.ClientID != *h2.ClientID) {
			t.Fatalf("header %+v became %+v", h, h2)
		}
		if b1, b2 := req.Body.AppendTo(nil), again.Body.AppendTo(nil); !bytes.Equal(b1, b2) {
			t.Fatalf("%s body changed across a round trip:\n%x\n%x", describeKey(h.APIKey, h.APIVersion), b1, b2)
		}
	})
}

// TestWriteFuzzSeeds regenerates the checked-in seed corpus when
// WIRE_WRITE_FUZZ_SEEDS=1; otherwise it checks the corpus still has every
// seed, so CI runs them all. Seeds named broken-* must fail to decode and
// the others must decode.
func TestWriteFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReadRequest")
	seeds := fuzzSeeds()
	for name, data := range seeds {
		_, err := ReadRequest(bytes.NewReader(data), fuzzMaxBytes)
		if broken := strings.HasPrefix(name, "broken-"); (err != nil) != broken {
			t.Errorf("seed %s: err = %v", name, err)
		}
	}
	if os.Getenv("WIRE_WRITE_FUZZ_SEEDS") != "1" {
		for name := range seeds {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("seed %s missing (run with WIRE_WRITE_FUZZ_SEEDS=1): %v", name, err)
			}
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range seeds {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fuzzSeeds returns valid requests of several APIs and versions (classic
// and flexible) and broken frames, keyed by corpus file name.
func fuzzSeeds() map[string][]byte {
	s := map[string][]byte{}
	add := func(name string, req kmsg.Request, version int16) {
		s[name] = frameOf(req, version, 42, "seed-client")
	}

	add("api-versions-v0", kmsg.NewPtrApiVersionsRequest(), 0)
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0"
	add("api-versions-v3", av, 3)

	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("orders")
	md.Topics = []kmsg.MetadataRequestTopic{rt}
	add("metadata-v1", md, 1)
	add("metadata-v9", md, 9)
	add("metadata-v12", md, 12)

	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 30000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = makeBatch(0, "a", "b")
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{pp}
	pr.Topics = []kmsg.ProduceRequestTopic{pt}
	add("produce-v3", pr, 3)
	add("produce-v9", pr, 9)

	fr := fetchRequest("orders", 0, 1)
	fr.Topics[0].Partitions[0].CurrentLeaderEpoch = 4
	fr.Topics[0].Partitions[0].LastFetchedEpoch = 3
	add("fetch-v4", fr, 4)
	add("fetch-v12", fr, 12)
	fr.ReplicaState.ID, fr.ReplicaState.Epoch = 2, 7 // tagged field
	add("fetch-v15-replica-state", fr, 15)

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -2
	lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
	lo.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	add("list-offsets-v1", lo, 1)
	add("list-offsets-v6", lo, 6)

	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "orders"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.LeaderEpoch = 3
	ot.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{op}
	oe.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{ot}
	add("offset-for-leader-epoch-v3", oe, 3)
	add("offset-for-leader-epoch-v4", oe, 4)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "orders", 3, 3
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	ctt.Configs = []kmsg.CreateTopicsRequestTopicConfig{cfg}
	ct.Topics = []kmsg.CreateTopicsRequestTopic{ctt}
	add("create-topics-v5", ct, 5)

	s["null-client-id"] = kmsg.NewRequestFormatter().AppendRequest(nil, func() kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.SetVersion(4)
		return r
	}(), 1)

	withSize := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	s["broken-absurd-length"] = []byte{0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 1}
	s["broken-negative-length"] = []byte{0xff, 0xff, 0xff, 0xff}
	s["broken-truncated-header"] = withSize([]byte{0, 0, 0, 0, 0, 3, 0})
	s["broken-unknown-key"] = withSize([]byte{0, 0, 0, 0, 0x7f, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff})
	s["broken-trailing-byte"] = withSize(append(frameOf(md, 4, 1, "c"), 0))
	s["broken-garbage-body"] = withSize(append(frameOf(md, 9, 1, "c")[:16], 0xff, 0xff, 0xff, 0xff, 0x0f))
	s["broken-truncated-body"] = frameOf(pr, 9, 1, "c")[:40]
	s["broken-header-tags"] = withSize(append(frameOf(md, 9, 1, "c")[:15], 5, 1, 2, 3))
	return s
}

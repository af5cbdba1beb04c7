package cluster

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// procStatus returns a /proc/self/status field in bytes (VmRSS, VmHWM); 0
// where /proc does not say.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestDecompressionBombOverKafka is the memory probe over a real
// Kafka connection to a 3-broker lab: 20 produces (acks=all) of a ~2 KiB
// zstd batch holding one 60 MiB value, half whose zstd frame says its size
// and half streamed (it does not), are each refused with
// MESSAGE_TOO_LARGE; the process's peak RSS over the 20 (VmHWM, reset
// before them) stays within 200 MiB of where it started, and the lab
// still takes a normal record. Before, each was appended and replicated,
// and RSS grew by hundreds of megabytes a produce.
func TestDecompressionBombOverKafka(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("bombed", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic("bombed"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var bombs [2][]byte
	{
		var r kmsg.Record
		r.Value = make([]byte, 60<<20)
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		plain := r.AppendTo(nil)
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		if err != nil {
			t.Fatal(err)
		}
		bombs[0] = rawBatch(4, 1, 0, enc.EncodeAll(plain, nil))
		var buf bytes.Buffer
		enc.Reset(&buf)
		enc.Write(plain)
		enc.Close()
		bombs[1] = rawBatch(4, 1, 0, buf.Bytes())
	}
	runtime.GC()
	debug.FreeOSMemory()
	base := procStatus("VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("cannot reset the peak RSS (%v): it includes making the bombs", err)
	}
	for i := range 20 {
		bomb := bombs[i%2]
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "bombed"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = bomb
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); !errors.Is(got, kerr.MessageTooLarge) {
			t.Fatalf("produce %d of a %d-byte bomb: %v, want MESSAGE_TOO_LARGE", i, len(bomb), got)
		}
	}
	peak := procStatus("VmHWM")
	t.Logf("bombs of %d and %d bytes; RSS %.0f MiB before the 20 produces, peak %.0f MiB during them",
		len(bombs[0]), len(bombs[1]), float64(base)/(1<<20), float64(peak)/(1<<20))
	if base > 0 && peak-base > 200<<20 {
		t.Fatalf("peak RSS %d MiB, %d MiB above the start", peak>>20, (peak-base)>>20)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

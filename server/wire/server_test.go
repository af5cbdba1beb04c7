package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// labHandler serves Metadata v0–12 and Produce v3–9; produced records are
// counted, and a Produce with acks=0 is never answered.
func labHandler(produced *atomic.Int64) *funcHandler {
	return &funcHandler{
		table: VersionTable{3: {Min: 0, Max: 12}, 0: {Min: 3, Max: 9}},
		fn: func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
			switch r := req.(type) {
			case *kmsg.MetadataRequest:
				return metadataResponse(rc, r), nil
			case *kmsg.ProduceRequest:
				resp := r.ResponseKind().(*kmsg.ProduceResponse)
				for _, t := range r.Topics {
					rt := kmsg.NewProduceResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						var rb kmsg.RecordBatch
						if err := rb.ReadFrom(p.Records); err != nil {
							return nil, err
						}
						produced.Add(int64(rb.NumRecords))
						rp := kmsg.NewProduceResponseTopicPartition()
						rp.Partition = p.Partition
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
				return resp, nil
			}
			return nil, fmt.Errorf("unexpected %T", req)
		},
	}
}

func TestClientRoundTrip(t *testing.T) {
	addr, _ := startServer(t, labHandler(new(atomic.Int64)), Options{})
	ctx := context.Background()
	c, err := Dial(ctx, addr, "follower-2")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// The client asks ApiVersions v5, which the listener does not serve: it
	// must be told v4 and retry (KIP-511).
	table, err := c.Negotiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := VersionTable{3: {0, 12}, 0: {3, 9}, 18: {0, apiVersionsMax}}
	if fmt.Sprint(table) != fmt.Sprint(want) {
		t.Fatalf("negotiated %v, want %v", table, want)
	}

	for _, v := range []VersionRange{{0, 0}, {0, 8}, {0, 99}} { // classic and flexible
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = []kmsg.MetadataRequestTopic{rt}
		if err := c.PickVersion(req, v); err != nil {
			t.Fatal(err)
		}
		resp, err := c.Request(ctx, req)
		if err != nil {
			t.Fatalf("v%d: %v", req.GetVersion(), err)
		}
		mr := resp.(*kmsg.MetadataResponse)
		if len(mr.Topics) != 1 || *mr.Topics[0].Topic != "orders" || mr.Brokers[0].NodeID != 1 {
			t.Fatalf("v%d: unexpected response %+v", req.GetVersion(), mr)
		}
	}
	if err := c.PickVersion(kmsg.NewPtrFetchRequest(), VersionRange{4, 12}); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("PickVersion(Fetch) = %v, want UNSUPPORTED_VERSION", err)
	}
}

func TestAPIVersionsTooNew(t *testing.T) {
	addr, _ := startServer(t, labHandler(new(atomic.Int64)), Options{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// v9 does not exist in kmsg either: the body must not even be parsed.
	frame := frameOf(kmsg.NewPtrApiVersionsRequest(), 4, 7, "x")
	binary.BigEndian.PutUint16(frame[6:], 9)
	frame = append(frame, 0xde, 0xad)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	if _, err := conn.Write(frame); err != nil {
		t.Fatal(err)
	}
	raw, err := ReadFrame(conn, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(raw)); corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse() // header v0: body right after the id
	resp.SetVersion(0)
	if err := resp.ReadFrom(raw[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != apiVersionsMax {
		t.Fatalf("unexpected response %+v", resp)
	}
}

// TestKgoInterop proves the framing against a real Kafka client: franz-go
// negotiates ApiVersions, reads Metadata, and produces with acks=0 (no
// responses) and acks=1.
func TestKgoInterop(t *testing.T) {
	var produced atomic.Int64
	addr, _ := startServer(t, labHandler(&produced), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("kgo-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetVersion() != 12 || len(resp.Topics) != 1 || *resp.Topics[0].Topic != "orders" {
		t.Fatalf("Metadata v%d: %+v", resp.GetVersion(), resp.Topics)
	}

	for _, acks := range []kgo.Acks{kgo.NoAck(), kgo.LeaderAck()} {
		before := produced.Load()
		p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite(),
			kgo.DefaultProduceTopic("orders"), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		const n = 50
		for i := range n {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("m", i))).FirstErr(); err != nil {
				t.Fatalf("acks %v: %v", acks, err)
			}
		}
		// With acks=0 ProduceSync returns once written; the broker's count
		// catches up as it reads.
		for produced.Load()-before < n {
			select {
			case <-ctx.Done():
				t.Fatalf("acks %v: broker saw %d of %d records", acks, produced.Load()-before, n)
			case <-time.After(time.Millisecond):
			}
		}
		p.Close()
	}
}

// TestPipelinedOrder writes several requests at once on one connection,
// including an acks=0 produce, while the first request's handler blocks:
// responses must come back in request order, one per answerable request.
func TestPipelinedOrder(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex // the race detector cannot see TCP's happens-before
	var seen []string
	h := &funcHandler{
		table: VersionTable{3: {0, 12}, 0: {3, 9}},
		fn: func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
			switch r := req.(type) {
			case *kmsg.MetadataRequest:
				mu.Lock()
				seen = append(seen, *r.Topics[0].Topic)
				mu.Unlock()
				if *r.Topics[0].Topic == "t0" {
					<-release
				}
				return metadataResponse(rc, r), nil
			case *kmsg.ProduceRequest:
				mu.Lock()
				seen = append(seen, "produce")
				mu.Unlock()
				return nil, nil
			}
			return nil, errors.New("unexpected")
		},
	}
	conn := dialServer(t, h)
	var out []byte
	const n = 8
	for i := range n {
		if i == 3 {
			p := kmsg.NewPtrProduceRequest()
			p.Acks = 0
			out = append(out, frameOf(p, 7, 1000, "c")...)
		}
		out = append(out, metadataFrame(fmt.Sprint("t", i), int16(i%13), int32(i))...) // mixed classic and flexible
	}
	if _, err := conn.Write(out); err != nil {
		t.Fatal(err)
	}
	close(release)
	for i := range n {
		raw, err := ReadFrame(conn, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b := raw[4:]
		if corr := int32(binary.BigEndian.Uint32(raw)); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(int16(i % 13))
		if resp.IsFlexible() {
			b = b[1:] // empty header tags
		}
		if err := resp.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		if got := *resp.Topics[0].Topic; got != fmt.Sprint("t", i) {
			t.Fatalf("response %d is for %s", i, got)
		}
	}
	want := []string{"t0", "t1", "t2", "produce", "t3", "t4", "t5", "t6", "t7"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, want) {
		t.Fatalf("handled %v, want %v", seen, want)
	}
}

// expectClosed reads from conn until the server closes it.
func expectClosed(t *testing.T, conn net.Conn) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("connection was not closed")
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	metadata := func(v int16) []byte {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = []kmsg.MetadataRequestTopic{rt}
		return frameOf(req, v, 1, "bad")
	}
	withSize := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
		return b
	}
	cases := []struct {
		name   string
		input  []byte
		reason []string
	}{
		{"absurd length", []byte{0x7f, 0xff, 0xff, 0xff, 0, 3}, []string{"malformed", "larger than the limit"}},
		{"over limit", binary.BigEndian.AppendUint32(nil, 1<<20+1), []string{"malformed", "larger than the limit of 1048576"}},
		{"negative length", []byte{0xff, 0xff, 0xff, 0xfe}, []string{"malformed", "negative frame size"}},
		{"truncated header", withSize([]byte{0, 0, 0, 0, 0, 3, 0, 1, 0}), []string{"malformed", "truncated request header"}},
		{"truncated client id", withSize([]byte{0, 0, 0, 0, 0, 3, 0, 1, 0, 0, 0, 1, 0, 9, 'a'}), []string{"malformed", "truncated request header"}},
		{"unknown api key", withSize([]byte{0, 0, 0, 0, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff}), []string{"unsupported", "key 32512"}},
		{"unserved key without error code", frameOf(kmsg.NewPtrFetchRequest(), 4, 1, "bad"), []string{"unsupported", "Fetch v4"}},
		{"garbage body", withSize(append(metadata(9)[:18], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), []string{"malformed", "body does not decode"}},
		{"trailing garbage", withSize(append(metadata(4), 0)), []string{"malformed", "trailing bytes"}},
		{"truncated frame", metadata(9)[:20], []string{"malformed", "frame truncated"}},
		{"handler panic", metadata(1), []string{"panic"}},
	}
	h := &funcHandler{
		table: VersionTable{3: {0, 12}},
		fn: func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
			r := req.(*kmsg.MetadataRequest)
			if *rc.Header.ClientID == "bad" {
				panic("handler bug")
			}
			return metadataResponse(rc, r), nil
		},
	}
	addr, sink := startServer(t, h, Options{MaxRequestBytes: 1 << 20})
	ctx := context.Background()
	good, err := Dial(ctx, addr, "good")
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write(tc.input); err != nil {
				t.Fatal(err)
			}
			if tc.name == "truncated frame" {
				conn.(*net.TCPConn).CloseWrite()
			}
			expectClosed(t, conn)
			sink.waitFor(t, append([]string{"closing connection", "remote=" + conn.LocalAddr().String()}, tc.reason...)...)
			// Other connections carry on.
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(12)
			if _, err := good.Request(ctx, req); err != nil {
				t.Fatalf("healthy connection broken: %v", err)
			}
		})
	}
}

// TestUnsupportedVersionAnswered checks that a key the handler does not
// serve is answered with UNSUPPORTED_VERSION when the response can carry it,
// and the connection stays usable.
func TestUnsupportedVersionAnswered(t *testing.T) {
	addr, _ := startServer(t, labHandler(new(atomic.Int64)), Options{})
	ctx := context.Background()
	c, err := Dial(ctx, addr, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "group"
	resp, err := c.Request(ctx, fc) // v0: top-level ErrorCode
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.FindCoordinatorResponse).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Fatalf("error code %d", code)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(13) // kmsg knows it, the handler stops at 12; v13 has a top-level ErrorCode
	resp, err = c.Request(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.MetadataResponse).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Fatalf("Metadata v13 error code %d", code)
	}
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 1
	p.SetVersion(10) // the handler stops at 9; Produce has only per-partition codes
	if _, err := c.Request(ctx, p); err == nil {
		t.Fatal("Produce v10 was answered")
	}
}

func TestHandlerContractViolations(t *testing.T) {
	h := &funcHandler{
		table: VersionTable{3: {0, 12}, 0: {3, 9}},
		fn: func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
			switch *rc.Header.ClientID {
			case "nil":
				return nil, nil
			case "wrong":
				return kmsg.NewPtrApiVersionsResponse(), nil
			case "acks0-error":
				p := req.(*kmsg.ProduceRequest)
				resp := p.ResponseKind().(*kmsg.ProduceResponse)
				rt := kmsg.NewProduceResponseTopic()
				rt.Topic = "orders"
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
				rt.Partitions = append(rt.Partitions, rp)
				resp.Topics = append(resp.Topics, rt)
				return resp, nil
			}
			return nil, errors.New("storage on fire")
		},
	}
	addr, sink := startServer(t, h, Options{})
	ctx := context.Background()
	for _, tc := range []struct{ client, reason string }{
		{"nil", "handler returned no response"},
		{"wrong", "wrong response type"},
		{"err", "storage on fire"},
		{"acks0-error", "NOT_LEADER_FOR_PARTITION"},
	} {
		c, err := Dial(ctx, addr, tc.client)
		if err != nil {
			t.Fatal(err)
		}
		var req kmsg.Request = kmsg.NewPtrMetadataRequest()
		if tc.client == "acks0-error" {
			p := kmsg.NewPtrProduceRequest()
			p.Acks = 0
			p.SetVersion(9)
			req = p
			if _, err := c.Request(ctx, req); err != nil { // no response expected
				t.Fatal(err)
			}
			req = kmsg.NewPtrMetadataRequest()
		}
		if _, err := c.Request(ctx, req); err == nil {
			t.Fatalf("%s: request answered", tc.client)
		}
		sink.waitFor(t, "closing connection", tc.reason)
		c.Close()
	}
}

func TestClientHonorsContext(t *testing.T) {
	h := &funcHandler{
		table: VersionTable{3: {0, 12}},
		fn: func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
			<-ctx.Done() // never answers; ends when the server stops
			return nil, ctx.Err()
		},
	}
	addr, _ := startServer(t, h, Options{})
	c, err := Dial(context.Background(), addr, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if _, err := c.Request(context.Background(), kmsg.NewPtrMetadataRequest()); !errors.Is(err, ErrClientBroken) {
		t.Fatalf("err = %v, want ErrClientBroken", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	c2, err := Dial(ctx2, addr, "c2")
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c2.Request(ctx2, kmsg.NewPtrMetadataRequest())
		done <- err
	}()
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
}

func TestInjectedDialer(t *testing.T) {
	addr, _ := startServer(t, labHandler(new(atomic.Int64)), Options{})
	cut := errors.New("link 1->2 cut")
	var dialed []string
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		dialed = append(dialed, a)
		if a == "cut:9092" {
			return nil, cut
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	if _, err := DialOptions(context.Background(), "cut:9092", "f", ClientOptions{Dialer: dial}); !errors.Is(err, cut) {
		t.Fatalf("err = %v", err)
	}
	c, err := DialOptions(context.Background(), "broker-1", "f", ClientOptions{Dialer: dial})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Negotiate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dialed, []string{"cut:9092", "broker-1"}) {
		t.Fatalf("dialed %v", dialed)
	}
}

// TestReadFrameAllocatesOnlyWhatArrives claims a 100 MB frame but sends 10
// bytes: the reader must fail having allocated about one read chunk.
func TestReadFrameAllocatesOnlyWhatArrives(t *testing.T) {
	in := append(binary.BigEndian.AppendUint32(nil, 100_000_000), make([]byte, 10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), DefaultMaxRequestBytes)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*readChunk {
		t.Fatalf("allocated %d bytes for a frame that sent 10", got)
	}
}

// TestReadFrameLargeFrames reads frames larger than the first read chunk
// back to back, sent in small pieces: each comes back whole and stays as
// it was after the next is read (the pooled first chunk is copied out, not
// kept), and a produce-sized frame costs about its own size in allocations.
func TestReadFrameLargeFrames(t *testing.T) {
	var in []byte
	var want [][]byte
	for i, size := range []int{readChunk + 1, 3*readChunk + 5, 100_000, readChunk} {
		frame := bytes.Repeat([]byte{byte(i + 1)}, size)
		want = append(want, frame)
		in = append(binary.BigEndian.AppendUint32(in, uint32(size)), frame...)
	}
	r := iotest.HalfReader(bytes.NewReader(in))
	var got [][]byte
	for range want {
		frame, err := ReadFrame(r, DefaultMaxRequestBytes)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, frame)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d: %d bytes, want %d, or not the bytes sent", i, len(got[i]), len(want[i]))
		}
	}
	// The fewest bytes of 5 reads: a sync.Pool may drop what it holds (the
	// race detector makes it drop some on purpose).
	frame := append(binary.BigEndian.AppendUint32(nil, 100_000), make([]byte, 100_000)...)
	fewest := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := ReadFrame(bytes.NewReader(frame), DefaultMaxRequestBytes); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		fewest = min(fewest, after.TotalAlloc-before.TotalAlloc)
	}
	if fewest > 100_000+readChunk/2 {
		t.Fatalf("allocated %d bytes for a frame of 100,000", fewest)
	}
}

func TestNewServerRejectsBadTables(t *testing.T) {
	for _, table := range []VersionTable{
		{18: {0, 3}},
		{3: {5, 2}},
		{3: {0, 99}},
		{30000: {0, 0}},
	} {
		if _, err := NewServer(&funcHandler{table: table}, Options{}); err == nil {
			t.Errorf("table %v accepted", table)
		}
	}
	if _, err := NewServer(&funcHandler{}, Options{MaxRequestBytes: 3}); err == nil {
		t.Error("MaxRequestBytes 3 accepted")
	}
}

// preparingHandler is a funcHandler that is also a Preparer.
type preparingHandler struct {
	funcHandler
	prepare func(req kmsg.Request) any
}

func (h *preparingHandler) Prepare(req kmsg.Request) any { return h.prepare(req) }

// TestPreparedAheadOfTurn checks that a Preparer's Prepare runs as soon as a
// request is decoded, while the connection's earlier request is still being
// handled, and that Handle gets its result.
func TestPreparedAheadOfTurn(t *testing.T) {
	secondPrepared := make(chan struct{})
	h := &preparingHandler{prepare: func(req kmsg.Request) any {
		topic := *req.(*kmsg.MetadataRequest).Topics[0].Topic
		if topic == "t1" {
			close(secondPrepared)
		}
		return "prepared " + topic
	}}
	h.table = VersionTable{3: {0, 12}}
	h.fn = func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
		r := req.(*kmsg.MetadataRequest)
		topic := *r.Topics[0].Topic
		if topic == "t0" {
			select { // t1 is prepared while t0 is being handled
			case <-secondPrepared:
			case <-time.After(10 * time.Second):
				return nil, errors.New("t1 was not prepared while t0 was handled")
			}
		}
		if rc.Prepared != "prepared "+topic {
			return nil, fmt.Errorf("%s: Prepared is %v", topic, rc.Prepared)
		}
		return metadataResponse(rc, r), nil
	}
	conn := dialServer(t, h)
	out := append(metadataFrame("t0", 9, 0), metadataFrame("t1", 9, 1)...)
	if _, err := conn.Write(out); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	for i := range 2 {
		raw, err := ReadFrame(conn, 1<<20)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(raw)); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
}

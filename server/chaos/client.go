package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/broker"
	"tidemark/server/wire"
)

// wireClient is the checker's consumer connection to one broker.
type wireClient struct {
	addr string
	cl   *wire.Client
}

func (r *runner) closeClient(id int32) {
	if w := r.clients[id]; w != nil {
		w.cl.Close()
		delete(r.clients, id)
	}
}

func (r *runner) closeClients() {
	for id := range r.clients {
		r.closeClient(id)
	}
}

// visibleHW asks a leader for the latest offset as a consumer does
// (ListOffsets over its Kafka listener): its HW. False while the leader
// answers with an error, such as OFFSET_NOT_AVAILABLE while its HW has not
// reached the start of its leader epoch (KIP-207).
func (r *runner) visibleHW(b *broker.Broker, topic string, partition int32) (int64, bool) {
	for attempt := 0; attempt < 2; attempt++ {
		w := r.clients[b.ID()]
		if w == nil || w.addr != b.Addr() {
			r.closeClient(b.ID())
			ctx, cancel := context.WithTimeout(r.ctx, handOff)
			cl, err := wire.Dial(ctx, b.Addr(), "tidemark-chaos-checker")
			cancel()
			if err != nil {
				return 0, false
			}
			w = &wireClient{addr: b.Addr(), cl: cl}
			r.clients[b.ID()] = w
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(4)
		req.ReplicaID = -1
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp, p.CurrentLeaderEpoch = partition, -1, -1
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		ctx, cancel := context.WithTimeout(r.ctx, handOff)
		raw, err := w.cl.Request(ctx, req)
		cancel()
		if err != nil {
			r.closeClient(b.ID()) // a broker restarted on the same port: dial again
			continue
		}
		resp := raw.(*kmsg.ListOffsetsResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, false
		}
		rp := resp.Topics[0].Partitions[0]
		return rp.Offset, rp.ErrorCode == 0
	}
	return 0, false
}

// consume reads each partition from its start up to hws[p] with franz-go,
// as any consumer would.
func consume(ctx context.Context, seeds []string, topic string, hws map[int32]int64) (map[int32][]Rec, error) {
	out := map[int32][]Rec{}
	offsets := map[int32]kgo.Offset{}
	for p, hw := range hws {
		if hw > 0 {
			offsets[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(offsets) == 0 {
		return out, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	next := map[int32]int64{}
	done := func() bool {
		for p, hw := range hws {
			if next[p] < hw {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read up to %v of %v: %w", next, hws, ctx.Err())
		}
		var errs []error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, kerr.OffsetNotAvailable) {
				errs = append(errs, err)
			}
		})
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < hws[rec.Partition] {
				out[rec.Partition] = append(out[rec.Partition], newRec(rec.Offset, rec.LeaderEpoch, rec.Key, rec.Value, rec.Timestamp.UnixMilli()))
			}
			next[rec.Partition] = max(next[rec.Partition], rec.Offset+1)
		})
		if len(errs) > 0 && !kgoRetriable(errs) {
			return nil, errors.Join(errs...)
		}
	}
	return out, nil
}

// kgoRetriable reports whether every fetch error is one a consumer retries.
func kgoRetriable(errs []error) bool {
	for _, err := range errs {
		var ke *kerr.Error
		if !errors.As(err, &ke) || !ke.Retriable {
			return false
		}
	}
	return true
}

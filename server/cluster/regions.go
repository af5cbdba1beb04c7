package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
)

// SetCopyFileRegions makes broker id serve fetched record data by copying
// it through user space (copy) or with sendfile (broker.Config's
// CopyFileRegions). A broker's listener is set up when it starts, so the
// choice applies from the broker's next (re)start on. An unknown id is
// refused.
func (c *Cluster) SetCopyFileRegions(id int32, copy bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, known := c.ports[id]; !known {
		return fmt.Errorf("cluster: no broker %d", id)
	}
	if c.copyRegions == nil {
		c.copyRegions = map[int32]bool{}
	}
	c.copyRegions[id] = copy
	return nil
}

// FetchRegions sends broker id one consumer Fetch of partition p of topic
// from offset 0 over the Kafka protocol, as a client would, and returns
// the record bytes it got and how that broker sent them (its
// wire.RegionStats difference around the fetch) with the fetch's wall
// time. The broker counts a region once the kernel took it, which can be
// just after the client has read it, so this waits (bounded) for the
// counters to cover what arrived.
func (c *Cluster) FetchRegions(ctx context.Context, id int32, topic string, p int32) (int64, wire.RegionStats, time.Duration, error) {
	b := c.Broker(id)
	if b == nil {
		return 0, wire.RegionStats{}, 0, fmt.Errorf("cluster: broker %d is not running", id)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "lab-fetch")
	if err != nil {
		return 0, wire.RegionStats{}, 0, err
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11) // topics by name
	req.ReplicaID, req.MaxBytes = -1, 64<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = p, 64<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	before := b.Regions()
	start := time.Now()
	resp, err := cl.Request(ctx, req)
	took := time.Since(start)
	if err != nil {
		return 0, wire.RegionStats{}, took, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return 0, wire.RegionStats{}, took, fmt.Errorf("cluster: fetch response for %d topics", len(fr.Topics))
	}
	rp0 := fr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp0.ErrorCode); err != nil {
		return 0, wire.RegionStats{}, took, err
	}
	n := int64(len(rp0.RecordBatches))
	for {
		d := b.Regions().Sub(before)
		if d.SendfileBytes+d.CopiedBytes >= n {
			return n, d, took, nil
		}
		select {
		case <-ctx.Done():
			return n, d, took, fmt.Errorf("cluster: broker %d counted %d of the %d bytes it sent", id, d.SendfileBytes+d.CopiedBytes, n)
		case <-time.After(time.Millisecond):
		}
	}
}

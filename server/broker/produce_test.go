package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
	"tidemark/storage"
)

// TestAcksZeroProduceFailureClosesConnection: an acks=0 produce gets no
// response, so when it fails Kafka closes the connection (the producer
// then refreshes its metadata). Every failure must do so — to a follower
// (NOT_LEADER_OR_FOLLOWER), to an unknown topic, with records that do not
// decode — and a produce that succeeds must leave the connection open.
func TestAcksZeroProduceFailureClosesConnection(t *testing.T) {
	ctl, brokers := testBrokers(t, 2, nil)
	_, leader, follower := leaderAndFollower(t, ctl, brokers, nil)
	good := storage.NewBatch([]storage.Record{{Value: []byte("m1")}})
	garbled := append([]byte(nil), good...)
	garbled[len(garbled)-1] ^= 0xff // the CRC no longer matches
	for _, tc := range []struct {
		name    string
		to      *Broker
		topic   string
		records []byte
		closed  bool
	}{
		{"to the leader", leader, "t", good, false},
		{"to a follower", follower, "t", good, true},
		{"unknown topic", leader, "nope", good, true},
		{"invalid records", leader, "t", garbled, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cl, err := wire.Dial(ctx, tc.to.Addr(), "acks0")
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks, req.TimeoutMillis = 0, 1000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = tc.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = tc.records
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			if _, err := cl.Request(ctx, req); err != nil { // written, never answered
				t.Fatal(err)
			}
			// The connection answers in order: the next request is answered
			// unless the produce closed it.
			md := kmsg.NewPtrMetadataRequest()
			md.SetVersion(12)
			_, err = cl.Request(ctx, md)
			if closed := err != nil; closed != tc.closed {
				t.Fatalf("after the acks=0 produce, a Metadata request got err %v; want the connection closed: %v", err, tc.closed)
			}
		})
	}
}

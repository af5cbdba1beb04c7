package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestValidateOnlyThenMetadata replays what kafkajs 2.2.4's
// createTopics({validateOnly: true}) sends with its default
// waitForLeaders: a validate-only CreateTopics, answered as Kafka's
// controller answers it (the topic as it would be, a topic id drawn and
// dropped, nothing created), then a Metadata request for the topic. The
// kafkajs admin client sends it with allowAutoTopicCreation false, so it
// is UNKNOWN_TOPIC_OR_PARTITION, which kafkajs reports as "This server
// does not host this topic-partition": Kafka answers the same, so kafkajs
// fails there too (waitForLeaders: false avoids it). With
// allowAutoTopicCreation (kafkajs' producer and consumer), the Metadata
// request auto-creates the topic, with the broker's defaults rather than
// the validated ones, as Kafka does.
func TestValidateOnlyThenMetadata(t *testing.T) {
	c := openRunning(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	for _, allow := range []bool{false, true} {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.ValidateOnly, ct.TimeoutMillis = true, 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "validated", 4, 2
		ct.Topics = append(ct.Topics, rt)
		cr, err := ct.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := cr.Topics[0]
		if got.ErrorCode != 0 || got.NumPartitions != 4 || got.ReplicationFactor != 2 || got.TopicID == [16]byte{} {
			t.Fatalf("validate-only answer: %v, %d partitions, RF %d, topic id %x", kerr.ErrorForCode(got.ErrorCode), got.NumPartitions, got.ReplicationFactor, got.TopicID)
		}
		if _, ok := c.Controller().Topic("validated"); ok {
			t.Fatal("validate-only created the topic")
		}

		md := kmsg.NewPtrMetadataRequest()
		md.AllowAutoTopicCreation = allow
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("validated")
		md.Topics = append(md.Topics, mt)
		mr, err := md.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		code := mr.Topics[0].ErrorCode
		if !allow {
			if code != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("metadata without auto-creation: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
			}
			continue
		}
		if code != 0 && code != kerr.LeaderNotAvailable.Code {
			t.Fatalf("metadata with auto-creation: %v", kerr.ErrorForCode(code))
		}
		tp, ok := c.Controller().Topic("validated")
		if !ok || len(tp.Partitions) != 1 {
			t.Fatalf("auto-created topic: %+v, want the default 1 partition (not the 4 validated)", tp)
		}
	}
}

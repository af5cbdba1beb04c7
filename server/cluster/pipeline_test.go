package cluster

import (
	"testing"

	"tidemark/replication/pipeline"
	"tidemark/server/controller"
)

// The pipeline's replication stories are scenario files in
// lessons/scenarios, played on this cluster by lessons.TestScenarios:
// pipeline-rebuild and pipeline-failures-rf5 (once TestPipelineTopicFailures),
// pipeline-crashed-middle, pipeline-crashed-head, pipeline-ack-cut,
// pipeline-power-loss-tail, pipeline-lab-restart, pipeline-link-delay and
// pipeline-long-cut (once TestPipelineTopic<Name>).

// TestPipelineTopicKgo: franz-go produces (idempotent, acks=all) to a
// pipeline topic and reads every record back, on a running lab; every
// record cost one write and one ack per hop (RF 3: four messages).
func TestPipelineTopicKgo(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("p", 1, 3, map[string]string{"replication.protocol": "pipeline"}); err != nil {
		t.Fatal(err)
	}
	kgoRoundTrip(t, c, "p", 100)
	sent := c.ReplicationMessages()[controller.ProtocolPipeline]
	writes, acks := sent[pipeline.KindWrite.String()], sent[pipeline.KindAck.String()]
	t.Logf("pipeline messages: %d writes, %d acks for 100 records", writes, acks)
	if writes < 200 || acks < 200 {
		t.Errorf("%d writes and %d acks for 100 records, want at least 200 each", writes, acks)
	}
}

package web

import (
	"testing"

	"tidemark/events"
)

// TestTopicInfoReplicationProtocol: the API names every topic's
// replication.protocol, isr where the topic does not set it.
func TestTopicInfoReplicationProtocol(t *testing.T) {
	for _, c := range []struct {
		configs map[string]string
		want    string
	}{
		{nil, "isr"},
		{map[string]string{"replication.protocol": "quorum"}, "quorum"},
		{map[string]string{"replication.protocol": "pipeline"}, "pipeline"},
		{map[string]string{"min.insync.replicas": "2"}, "isr"},
	} {
		if got := topicInfo(&events.Topic{Name: "t", Configs: c.configs}).ReplicationProtocol; got != c.want {
			t.Errorf("configs %v: replication_protocol %q, want %q", c.configs, got, c.want)
		}
	}
}

package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// brokenReplicaLab creates topics (all replicas on brokers 1–3) but broker
// 2 never opens its replicas, as when the process is out of descriptors.
type brokenReplicaLab struct{ *testLab }

func (l brokenReplicaLab) CreateTopic(name string, partitions int32, rf int16, _ map[string]string) error {
	if partitions > 5 {
		return fmt.Errorf("%w: budget exceeded (--max-partition-replicas)", kerr.PolicyViolation)
	}
	t := &events.Topic{Name: name}
	for p := range partitions {
		part := events.Partition{Partition: p, Leader: 1, Replicas: []int32{1, 2, 3}[:rf], ISR: []int32{1}}
		t.Partitions = append(t.Partitions, part)
	}
	l.publish(events.Event{Kind: events.KindTopic, Topic: name, TopicCreated: t})
	return nil
}
func (l brokenReplicaLab) DeleteTopic(string) error                      { return nil }
func (l brokenReplicaLab) AlterConfigs(string, map[string]*string) error { return nil }
func (l brokenReplicaLab) ReplicaLog(broker int32, topic string, partition int32) (ReplicaLog, int64, error) {
	if broker == 2 {
		return nil, 0, fmt.Errorf("%w: broker 2 has no replica of %s-%d", kerr.UnknownTopicOrPartition, topic, partition)
	}
	return nil, 0, nil
}

// TestCreateTopicReplicasMustOpen: a topic whose replica could not open on
// a running broker is not a 201 but KAFKA_STORAGE_ERROR naming the broker
// and partition; one whose replicas all opened is; the lab's budget refusal
// (POLICY_VIOLATION) is a 400.
func TestCreateTopicReplicasMustOpen(t *testing.T) {
	s := newTestServer(t, brokenReplicaLab{newTestLab(events.BusOptions{})}, Options{})
	post := func(body string) (int, string) {
		req := loopbackRequest("POST", "/api/v1/topics", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, body := post(`{"name":"solo","partitions":1,"replication_factor":1}`); code != http.StatusCreated {
		t.Fatalf("RF 1 on broker 1: %d %s", code, body)
	}
	code, body := post(`{"name":"wide","partitions":2,"replication_factor":3}`)
	if code != http.StatusInternalServerError || !strings.Contains(body, "KAFKA_STORAGE_ERROR") || !strings.Contains(body, "broker 2 has no log for wide-0") {
		t.Fatalf("replica missing on broker 2: %d %s", code, body)
	}
	code, body = post(`{"name":"huge","partitions":6,"replication_factor":1}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "POLICY_VIOLATION") || !strings.Contains(body, "--max-partition-replicas") {
		t.Fatalf("over the budget: %d %s", code, body)
	}
	if e := LabError(kerr.PolicyViolation).(*Error); e.Status != http.StatusBadRequest {
		t.Fatalf("POLICY_VIOLATION maps to %d", e.Status)
	}
}

// The server finds a lab's Inspector by a type assertion: a test lab whose
// ReplicaLog drifted from the interface would skip its checks silently.
var (
	_ Inspector = brokenReplicaLab{}
	_ Inspector = fuzzLab{}
)

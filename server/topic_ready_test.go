package server

import (
	"encoding/json"
	"testing"

	"tidemark/server/cluster"
	"tidemark/server/web"
)

// TestCreateTopicAnswersWhenReady: POST /api/v1/topics answers once every
// partition has a leader that applied it and a full ISR, so a produce
// sent on its answer with no retries (delivery_timeout_ms 0) is
// acknowledged at once by every partition (issue 28: a producer started
// on the 201 spent its first half second in retry back-off). With a
// broker down the ISRs cannot be full: the answer comes after
// ready_timeout_ms, naming each partition and why.
func TestCreateTopicAnswersWhenReady(t *testing.T) {
	cl, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	a := &apiLab{t: t, cl: cl, h: testWeb(t, cl, web.Options{}).Handler()}
	for _, proto := range []string{"isr", "quorum", "pipeline"} {
		var created web.CreateTopicResponse
		a.ok(201, "POST", "/api/v1/topics", `{"name":"r-`+proto+`","partitions":3,"replication_factor":3,"configs":{"replication.protocol":"`+proto+`"}}`, &created)
		if !created.Ready || len(created.NotReady) != 0 {
			t.Fatalf("%s: %+v", proto, created)
		}
		for p := 0; p < 3; p++ {
			var res web.ProduceResponse
			a.ok(200, "POST", "/api/v1/topics/r-"+proto+"/records", `{"partition":`+itoa(int32(p))+`,"acks":"all","delivery_timeout_ms":0,"records":[{"value":"v"}]}`, &res)
			if len(res.Attempts) != 1 {
				t.Fatalf("%s-%d: %d attempts: %+v", proto, p, len(res.Attempts), res.Attempts)
			}
		}
	}
	a.ok(200, "POST", "/api/v1/brokers/3/crash", "", nil)
	rec := a.do("POST", "/api/v1/topics", `{"name":"short","partitions":2,"replication_factor":3,"ready_timeout_ms":300}`)
	var created web.CreateTopicResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &created); rec.Code != 201 || err != nil {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if created.Ready || len(created.NotReady) != 2 {
		t.Fatalf("with broker 3 down: %s", rec.Body)
	}
	for _, nr := range created.NotReady {
		if nr.Reason != web.NotReadyBrokerDown {
			t.Fatalf("partition %d: reason %q: %s", nr.Partition, nr.Reason, rec.Body)
		}
	}
	if rec := a.do("POST", "/api/v1/topics", `{"name":"bad","ready_timeout_ms":-1}`); rec.Code != 400 {
		t.Fatalf("ready_timeout_ms -1: %d %s", rec.Code, rec.Body)
	}
}

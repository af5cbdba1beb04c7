package server

import (
	"encoding/json"
	"testing"

	"tidemark/server/cluster"
	"tidemark/server/web"
)

// TestProduceRidesAFailover: on a running lab, a produce sent through the
// API right after its partition's leader crashed is answered by the new
// leader once the controller has moved the leadership, as a producer's
// retries within delivery.timeout.ms would be; the answer lists the
// attempts, the first ones at the crashed broker (issue 28: the API
// answered 503 NOT_LEADER_OR_FOLLOWER and the script had to retry).
func TestProduceRidesAFailover(t *testing.T) {
	cl, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	a := &apiLab{t: t, cl: cl, h: testWeb(t, cl, web.Options{}).Handler()}
	a.ok(201, "POST", "/api/v1/topics", `{"name":"f","partitions":1,"replication_factor":3}`, nil)
	var res web.ProduceResponse
	a.ok(200, "POST", "/api/v1/topics/f/records", `{"acks":"all","records":[{"value":"before"}]}`, &res)
	old := res.Leader
	a.ok(200, "POST", "/api/v1/brokers/"+itoa(old)+"/crash", "", nil)
	// Sent at once: the controller notices the crash only when the broker's
	// session expires (2 s of lab time), then a follower takes over.
	rec := a.do("POST", "/api/v1/topics/f/records", `{"acks":"all","records":[{"value":"after"}],"delivery_timeout_ms":60000}`)
	if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != 200 || err != nil {
		t.Fatalf("the produce after the crash: %d %s", rec.Code, rec.Body)
	}
	if res.Leader == old || len(res.Attempts) < 2 || res.Attempts[0].Error == "" || res.Attempts[len(res.Attempts)-1].Broker != res.Leader {
		t.Fatalf("answered by broker %d (the crashed one was %d), attempts %+v", res.Leader, old, res.Attempts)
	}
	t.Logf("after the crash of broker %d: %d attempts, the last at broker %d: %+v", old, len(res.Attempts), res.Leader, res.Attempts)
}

func itoa(v int32) string {
	b, _ := json.Marshal(v)
	return string(b)
}

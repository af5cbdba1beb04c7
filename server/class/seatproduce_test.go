package class

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"tidemark/server/broker"
	"tidemark/server/cluster"
	"tidemark/server/labs"
)

// TestSeatFirstProduce: a seat's first produce, made as soon as the seat
// wakes (a fresh seat creating topic demo, or a hibernated one whose demo
// exists), finds every partition on its leader. Before, a broker could
// still be applying the metadata that held demo (its heartbeat loop had
// started the apply; the wake's own heartbeat saw the version as applied
// and returned), so the produce got UNKNOWN_TOPIC_OR_PARTITION.
func TestSeatFirstProduce(t *testing.T) {
	dir := t.TempDir()
	runs, err := labs.New(labs.Options{Root: filepath.Join(dir, "lessons"), SweepInterval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runs.Close() })
	clk := &clock{now: time.Unix(1000, 0)}
	c, _, err := Open(Options{Dir: filepath.Join(dir, "class"), Name: "test", Seats: 1,
		// Heartbeats every millisecond: each broker's heartbeat loop then
		// often starts applying a change before the wake's own heartbeat.
		Cluster: cluster.Options{Brokers: 3, Logger: quiet(), Broker: broker.Config{HeartbeatInterval: time.Millisecond}},
		Setup: func(cl *cluster.Cluster) error {
			if _, ok := cl.Controller().Topic("demo"); ok {
				return nil
			}
			_, err := cl.CreateTopic("demo", 3, 3, map[string]string{"min.insync.replicas": "2"})
			return err
		},
		NewHandler: func(env Env) (http.Handler, io.Closer, error) { return seatHandler{env, nil}, nopCloser{}, nil },
		Runs:       runs, MaxAwake: 1, IdleAfter: time.Minute, SweepInterval: -1, Now: clk.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i := range 10 {
		if i%2 == 0 {
			if _, err := c.ResetSeat(1); err != nil { // the next wake creates demo
				t.Fatal(err)
			}
		}
		cl, done, err := c.Cluster(1)
		if err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := cl.Produce(ctx, "demo", p, -1, []cluster.Record{{Value: []byte("first")}}, 5*time.Second)
			cancel()
			if err != nil {
				t.Errorf("wake %d: the first produce to demo-%d: %v", i, p, err)
			}
		}
		done()
		clk.Add(2 * time.Minute)
		if got := c.Sweep(); len(got) != 1 { // hibernates it: the next wake finds demo
			t.Fatalf("Sweep = %v", got)
		}
	}
}

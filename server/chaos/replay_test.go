package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"tidemark/server/cluster"
	"tidemark/server/controller"
)

// playRecorded runs actions of seed under cfg and returns the export and
// the cluster's whole event stream, one JSON line an event, with what
// differs between two plays by design left out: the wall-clock time the
// lab's clock started at (times are kept relative to the first event) and
// the listeners' ports.
func playRecorded(t *testing.T, seed uint64, cfg Config, actions []Action) (exported, stream []byte) {
	t.Helper()
	var buf bytes.Buffer
	o := Options{Open: func(opts cluster.Options) (*cluster.Cluster, func() error, error) {
		c, closeCluster, err := openTemp(opts)
		if err != nil {
			return nil, nil, err
		}
		return c, func() error {
			evs, _ := c.Bus().Since(0, 0)
			for _, e := range evs {
				e.Time = time.Time{}.Add(e.Time.Sub(evs[0].Time))
				e.Listener = ""
				b, err := json.Marshal(e)
				if err != nil {
					t.Error(err)
				}
				buf.Write(append(b, '\n'))
			}
			return closeCluster()
		}, nil
	}}
	res, err := Run(context.Background(), seed, cfg, actions, o)
	if err != nil {
		t.Fatalf("%s seed %d: %v", cfg, seed, err)
	}
	if exported, err = res.Export(); err != nil {
		t.Fatal(err)
	}
	return exported, buf.Bytes()
}

// firstLineDiffering names the first line where a and b differ.
func firstLineDiffering(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// TestPipelineReplayExact: strict-pipeline seeds whose two plays of one
// schedule differed now play the same, export and event stream byte for
// byte, three times each. Seed 7: the brokers applied a new topic's
// metadata at once, so which heads' recovery writes found their successors
// ready (and which were refused and retried a step later) depended on
// goroutine scheduling (Cluster.propagate now applies in broker order);
// and the run took a head's append as the produce's hand-off while the
// head was still forwarding it, so the tail's ack landed in one action or
// the next (the engine now waits for the forwarding, topicRun.forwarded).
// Seed 23: two acks=all requests answered by one HW advance were answered
// in map order (now in request order). Seed 12 showed both.
func TestPipelineReplayExact(t *testing.T) {
	playsAlike(t, StrictOn(controller.ProtocolPipeline), []uint64{7, 12, 23}, 3)
}

// playsAlike plays each seed's schedule under cfg plays times, in parallel
// subtests, and fails where a play's export or event stream differs from
// the first's.
func playsAlike(t *testing.T, cfg Config, seeds []uint64, plays int) {
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			actions := Generate(seed, DefaultActions)
			exported, stream := playRecorded(t, seed, cfg, actions)
			for play := 2; play <= plays; play++ {
				again, againStream := playRecorded(t, seed, cfg, actions)
				if !bytes.Equal(exported, again) {
					t.Errorf("play %d's export differs at %s", play, firstLineDiffering(exported, again))
				}
				if !bytes.Equal(stream, againStream) {
					t.Errorf("play %d's events differ at %s", play, firstLineDiffering(stream, againStream))
				}
			}
		})
	}
}

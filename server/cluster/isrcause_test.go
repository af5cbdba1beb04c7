package cluster

import (
	"context"
	"testing"
	"time"

	"tidemark/events"
	"tidemark/i18n"
)

// isrEvents returns the ISR events published after seq.
func isrEvents(c *Cluster, seq uint64) []events.Event {
	var out []events.Event
	for _, e := range listedSince(c.Bus(), seq) {
		if e.Kind == events.KindISR {
			out = append(out, e)
		}
	}
	return out
}

// TestISRChangeCauses drives a paused lab through the three ways a
// follower leaves or joins an ISR and checks that each ISR event carries
// its cause as the rules or the controller decided it, with its figures:
// a follower that stops fetching is dropped for lag past
// replica.lag.time.max.ms (how long, and the setting), rejoins at the
// offset it caught up to, and leaves when its broker crashes and the
// controller fences it. Time moves only with the lab clock's steps.
func TestISRChangeCauses(t *testing.T) {
	c := openPaused(t)
	if _, err := c.CreateTopic("demo", 1, 3, map[string]string{"replica.lag.time.max.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Produce(ctx, "demo", 0, 1, []Record{{Value: []byte("a")}}, time.Second); err != nil {
		t.Fatal(err)
	}
	stepFetchAll(t, c, 2, 3, 2, 3) // both followers at the leader's LEO, 1
	if _, err := c.Produce(ctx, "demo", 0, 1, []Record{{Value: []byte("b")}}, time.Second); err != nil {
		t.Fatal(err)
	}
	stepFetchAll(t, c, 2, 2) // only 2 follows: 3 stays at offset 1

	seq := c.Bus().LastSeq()
	if err := c.Step(1500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	evs := isrEvents(c, seq)
	if len(evs) != 1 || len(evs[0].ISRChanges) != 1 {
		t.Fatalf("after 1.5 s without 3 catching up: ISR events %+v, want one with one change", evs)
	}
	lag := evs[0].ISRChanges[0]
	if lag.Cause != events.ISRLagged || lag.Broker != 3 || lag.Joined || lag.MaxLagMs != 1000 || lag.LagMs != 1500 {
		t.Errorf("lag change %+v, want broker 3 lagged 1500 ms past replica.lag.time.max.ms 1000", lag)
	}
	for _, c := range []struct {
		lang i18n.Lang
		want string
	}{
		{i18n.English, "leader 1 changed the ISR of demo-0: broker 3 dropped: it had not caught up with the leader for 1500 ms, more than replica.lag.time.max.ms=1000; ISR [1 2], partition epoch 1"},
		{i18n.SimplifiedChinese, "leader 1 修改了 demo-0 的 ISR：broker 3 被移出：它已有 1500 毫秒未追上 leader，超过 replica.lag.time.max.ms=1000；ISR [1 2]，分区 epoch 1"},
	} {
		if got := i18n.Message(c.lang, evs[0].Message, evs[0].MessageKey, evs[0].MessageArgs); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.lang, got, c.want)
		}
	}

	// 3 fetches again: at its second fetch the leader hears it reached 2.
	seq = c.Bus().LastSeq()
	stepFetchAll(t, c, 3, 3)
	evs = isrEvents(c, seq)
	if len(evs) != 1 || len(evs[0].ISRChanges) != 1 {
		t.Fatalf("after 3 caught up: ISR events %+v, want one with one change", evs)
	}
	if up := evs[0].ISRChanges[0]; up.Cause != events.ISRCaughtUp || up.Broker != 3 || !up.Joined || up.Offset != 2 {
		t.Errorf("catch-up change %+v, want broker 3 back at offset 2", up)
	}

	// 3 crashes; the controller fences it when its session expires.
	seq = c.Bus().LastSeq()
	if err := c.Crash(3); err != nil {
		t.Fatal(err)
	}
	if err := c.Step(3 * time.Second); err != nil {
		t.Fatal(err)
	}
	evs = isrEvents(c, seq)
	if len(evs) != 1 || len(evs[0].ISRChanges) != 1 {
		t.Fatalf("after 3 crashed: ISR events %+v, want one with one change", evs)
	}
	if f := evs[0].ISRChanges[0]; f.Cause != events.ISRSessionExpired || f.Broker != 3 || f.Joined {
		t.Errorf("fencing change %+v, want broker 3's session expired", f)
	}
	if want := "demo-0: broker 3 left: its session expired (no heartbeat within broker.session.timeout.ms) and the controller fenced it; ISR [1 2], partition epoch 3"; evs[0].Message != want {
		t.Errorf("fencing message\n got %q\nwant %q", evs[0].Message, want)
	}
}

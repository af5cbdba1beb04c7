package lessons

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
	"tidemark/server/broker"
	"tidemark/server/cluster"
	"tidemark/server/controller"
	"tidemark/wasm/panel"
)

// The walks of TestEventMessagesInEveryLanguage, each on a lab of its own.
var messageWalks = []string{
	// Truncation to the HW on becoming follower (KIP-101 scenario 1),
	// failover by session timeout, restarts, one within its session.
	`scenario messages-hw
brokers 3
fencing zookeeper
backends cluster
setup
  do create-topic hw rf=3 truncation.rule=high-watermark
step
  do send hw m1
  do settle
  do await hw m1
  do checkpoint 1 2 3
  do send hw m2
  do fetch 2 3 2 3
  do await hw m2
  do crash 1
  do step 2100ms
  check truncated-records 3 hw == [1:m2/e0]
  do crash 2
  do step 2100ms
  do restart 1 2
  do settle
  do crash 3
  do restart 3
`,
	// Leader-epoch truncation after both replicas lose power (KIP-101
	// scenario 2): recovery loses what was not fsynced, a diverging epoch.
	`scenario messages-power-loss
brokers 2
fencing zookeeper
backends cluster
setup
  do create-topic le rf=2 truncation.rule=leader-epoch
step
  do send le m1
  do settle
  do await le m1
  do flush 1 2
  do checkpoint 1 2
  do send le m2
  do fetch 2 2
  do await le m2
  do flush 1
  do checkpoint 1
  do power-loss 1 2
  do step 2100ms
  do restart 2
  do produce le m3 acks=all
  do restart 1
  do settle
  check truncated-records 1 le == [1:m2/e0]
`,
	// An unclean election: the follower left the ISR, then the leader died.
	`scenario messages-unclean
brokers 2
fencing zookeeper
backends cluster
setup
  do create-topic uc rf=2 unclean.leader.election.enable=true
step
  do send uc m1
  do settle
  do await uc m1
  do send uc m2
  do step 3001ms
  do await uc m2
  do crash 1
  do step 2100ms
  check leader uc == 2
`,
	// A pipeline topic: a member crashes (the pipeline is rebuilt without
	// it, the write in flight cut by the recovery) and comes back with a
	// stale generation stamp (discarded, copied, rejoined at the tail).
	`scenario messages-pipeline
brokers 3
fencing kraft-elr
backends cluster
setup
  do create-topic p rf=3 replication.protocol=pipeline min.insync.replicas=2
  do step 1s
step
  do send p m1
  do await p m1
  do crash 2
  do send p m2
  do await p m2
  do step 1s
  do restart 2
  do step 3s
  check isr p == [1 3 2]
`,
	// Retention deletes whole segments older than retention.ms.
	`scenario messages-retention
brokers 1
fencing kraft-elr
backends cluster
setup
  do create-topic logs segment.bytes=1024
step
  do fill logs old 0 9 100
  do step 10m
  do fill logs new 9 6 100
  do alter logs retention.ms 300000
  do step 1s
  check log-start 1 logs > 0
`,
	// kraft-elr: links cut and healed, the fencing rule changed, topics and
	// configs, a refused produce, restarts after unclean shutdowns, a new
	// incarnation, and an election from the ELR.
	`scenario messages-kraft-elr
brokers 3
fencing kraft-elr
backends cluster
setup
  do create-topic t rf=3 min.insync.replicas=2 unclean.leader.election.enable=false truncation.rule=leader-epoch
step
  do send t m1
  do settle
  do await t m1
  do cut-one-way 1 2
  do cut 0 3
  do heal
  do fencing-rule kraft
  do fencing-rule kraft-elr
  do create-topic one rf=1
  do create-topic more partitions=2 rf=1
  do alter more retention.ms 60000
  do crash 2 3
  do step 2100ms
  do produce t m2 acks=all
  check error t m2 == NOT_ENOUGH_REPLICAS
  do crash 1
  do restart 2 3
  do step 2100ms
  do restart 1
  do step 2100ms
  do settle
  do crash 3
  do restart 3
  do step 2100ms
  do settle
  do cut-one-way 2 0
  do cut-one-way 3 0
  do step 2100ms
  do crash 1
  do heal
  do step 2100ms
  do step 2100ms
  do restart 1
  do step 2100ms
  do settle
`,
}

// TestEventMessagesInEveryLanguage walks real labs through every fault —
// crash, power loss, restart and recovery, a cut one way and both ways,
// heal, clean, ELR and unclean elections, fencing by session timeout, a
// fencing-rule change, topic create, delete and config changes, a produce
// refused, a disk failure, retention, a clean restart, and truncation
// under both rules — and requires every event message to have a key, every key it
// uses (its words too) to be in the catalogs, its English to be the
// event's Message, and its Simplified and Traditional Chinese, as the
// pages and the panel render them, to hold no English sentence.
func TestEventMessagesInEveryLanguage(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 1 << 16})
	var c *cluster.Cluster
	var opts cluster.Options
	for _, src := range messageWalks {
		c, opts = playOnLab(t, bus, src)
	}
	// What the scenario language does not say: the leader's disk fails
	// under a produce, a config goes back to its default, topics are
	// deleted, and the lab stops cleanly and starts again.
	tp, _ := c.Controller().Topic("t")
	leader := tp.Partitions[0].Leader
	if err := c.FailDisk(leader); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(context.Background(), "t", 0, -1, []cluster.Record{{Value: []byte("m4")}}, time.Second); err == nil {
		t.Fatal("produce on a failed disk succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.AwaitStopped(ctx, leader); err != nil {
		t.Fatalf("broker %d did not halt: %v", leader, err)
	}
	if _, err := c.AlterConfigs("more", map[string]*string{"retention.ms": nil}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"one", "more"} {
		if err := c.DeleteTopic(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	evs, _ := bus.Since(0, 0)
	checkEventMessages(t, evs)
}

// playOnLab plays a scenario's setup and steps on a lab of its own that
// publishes on bus, every check required to hold, and returns the lab
// (open until the test ends) and its options.
func playOnLab(t *testing.T, bus *events.Bus, src string) (*cluster.Cluster, cluster.Options) {
	t.Helper()
	s, err := ParseScript("walk.scenario", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	rule, err := controller.ParseFencingRule(s.Runs()[0].Fencing)
	if err != nil {
		t.Fatal(err)
	}
	opts := cluster.Options{DataDir: t.TempDir(), Brokers: s.Brokers, Paused: true, FencingRule: &rule, Bus: bus,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: broker.Config{HighWatermarkCheckpointInterval: time.Hour}}
	c, err := cluster.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := newEnv(ctx, c, func() time.Duration { return 0 })
	t.Cleanup(func() { cancel(); c.Close(); e.wg.Wait() })
	items := []Item{}
	for _, a := range s.Setup {
		items = append(items, Item{Line: a.Line, Action: &a})
	}
	for _, st := range s.Steps {
		items = append(items, st.Items...)
	}
	for _, it := range items {
		if err := e.item(it); err != nil {
			t.Fatalf("%s line %d: %v", s.ID, it.Line, err)
		}
		if n := len(e.out.Checks); it.Check != nil && !e.out.Checks[n-1].Pass {
			t.Fatalf("%s line %d: check %s: got %s", s.ID, it.Line, it.Name.En, e.out.Checks[n-1].Got.En)
		}
	}
	return c, opts
}

// checkEventMessages checks evs' messages (TestEventMessagesInEveryLanguage)
// and that the walks said every message they are meant to.
func checkEventMessages(t *testing.T, evs []events.Event) {
	t.Helper()
	en := i18n.Catalog(i18n.English)
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Message == "" {
			continue
		}
		if e.MessageKey == "" {
			t.Errorf("#%d %s has a Message but no key: %q", e.Seq, e.Kind, e.Message)
			continue
		}
		for _, k := range messageKeys(e.MessageKey, e.MessageArgs) {
			seen[k] = true
			if _, ok := en[k]; !ok {
				t.Errorf("#%d %s: key %s is in no catalog", e.Seq, e.Kind, k)
			}
		}
		if got := i18n.Message(i18n.English, "", e.MessageKey, e.MessageArgs); got != e.Message {
			t.Errorf("#%d: English renders %q, Message is %q", e.Seq, got, e.Message)
		}
		for _, lang := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			page := i18n.Message(lang, e.Message, e.MessageKey, e.MessageArgs)
			// The panel formats without fmt: it must say the same.
			if live := panel.EventMessage(e, panel.Catalog(i18n.Catalog(lang))); live != page {
				t.Errorf("%s #%d: the panel says %q, the page %q", lang, e.Seq, live, page)
			}
			for _, p := range i18ntest.ChineseProblems(page) {
				t.Errorf("%s #%d %s (%s): %s", lang, e.Seq, e.Kind, e.MessageKey, p)
			}
		}
	}
	for _, k := range []string{
		"event.fault.crash", "event.fault.power-loss.other", "event.fault.restart", "event.fault.disk-failure",
		"event.fault.halted", "event.link.cut", "event.word.dir.one", "event.word.dir.both", "event.link.heal",
		"event.recovery.kept", "event.recovery.lost", "event.broker.started.clean", "event.broker.started.empty", "event.broker.started.recovered",
		"event.broker.fenced.timeout", "event.broker.not-running", "event.broker.rereg.zookeeper", "event.broker.rereg.kraft",
		"event.broker.unfenced", "event.broker.log-dir-offline", "event.election", "event.word.how.clean",
		"event.word.how.unclean", "event.word.how.elr", "event.isr.unclean-restart",
		"event.config.fencing-rule", "event.topic.created.one", "event.topic.created.other", "event.topic.deleted",
		"event.config.topic", "event.config.topic.default", "event.produce-error", "errors.NOT_ENOUGH_REPLICAS",
		"event.truncation", "event.word.trunc.become-follower", "event.word.trunc.smaller", "event.fetch.diverging",
		"event.retention",
	} {
		if !seen[k] {
			t.Errorf("the walks never said %s", k)
		}
	}
}

// messageKeys lists the catalog keys a message uses: its key and the words
// among its arguments.
func messageKeys(key string, args []string) []string {
	out := []string{key}
	for _, a := range args {
		if events.IsWordKey(a) {
			word, _, _ := strings.Cut(a, events.WordArgSep)
			out = append(out, word)
		}
	}
	return out
}

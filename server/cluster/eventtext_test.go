package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
	"tidemark/server/controller"
	"tidemark/wasm/panel"
)

// TestEventMessagesInEveryLanguage walks real labs through every fault —
// crash, power loss, restart and recovery, a cut one way and both ways,
// heal, clean, ELR and unclean elections, fencing by session timeout, a
// fencing-rule change, topic create, delete and config changes, a produce
// refused, a disk failure, and truncation under both rules — and requires
// every event message to have a key, every key it uses (its words too) to
// be in the catalogs, its English to be the event's Message, and its
// Simplified and Traditional Chinese, as the panel and the pages render
// them, to hold no English sentence.
func TestEventMessagesInEveryLanguage(t *testing.T) {
	var (
		evs []events.Event
		err error
	)
	collect := func(l *lab) {
		got, _ := l.c.Bus().Since(0, 0)
		evs = append(evs, got...)
	}

	// Truncation to the HW on becoming follower (KIP-101 scenario 1,
	// zookeeper rule): crash, failover by session timeout, restarts.
	l := newLab(t, labOptions{brokers: 3, configs: map[string]string{"truncation.rule": "high-watermark"}})
	p := l.produceAsync("m1")
	l.settle()
	p.ok(0)
	l.checkpoint(1, 2, 3)
	p = l.produceAsync("m2")
	l.fetch(2, 3, 2, 3)
	p.ok(1)
	l.crash(1)
	l.step(failover)
	l.wantTruncated(3, rec{1, 0, "m2"})
	l.crash(2)
	l.step(failover)
	l.restart(1)
	l.restart(2)
	l.settle()
	l.crash(3)
	l.restart(3) // within its session: it keeps its ISR places
	collect(l)

	// Leader-epoch truncation after both replicas lose power (KIP-101
	// scenario 2): recovery loses unsynced records, a diverging epoch.
	l = newLab(t, labOptions{brokers: 2, configs: map[string]string{"truncation.rule": "leader-epoch"}})
	p = l.produceAsync("m1")
	l.settle()
	p.ok(0)
	l.flush(1, 2)
	l.checkpoint(1, 2)
	p = l.produceAsync("m2")
	l.fetch(2, 2)
	p.ok(1)
	l.flush(1)
	l.checkpoint(1)
	l.powerLoss(1, 2)
	l.step(failover)
	l.restart(2)
	l.mustProduce("m3", -1, 1)
	l.restart(1)
	l.settle()
	l.wantTruncated(1, rec{1, 0, "m2"})
	// The lab stops cleanly and starts again: after a clean shutdown.
	opts := l.c.opts
	if err := l.c.Close(); err != nil {
		t.Fatal(err)
	}
	if l.c, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.c.Close() })
	collect(l)

	// An unclean election: the follower left the ISR, then the leader died.
	l = newLab(t, labOptions{brokers: 2, configs: map[string]string{"unclean.leader.election.enable": "true"}})
	p = l.produceAsync("m1")
	l.settle()
	p.ok(0)
	p = l.produceAsync("m2")
	p.waiting()
	l.step(3001 * time.Millisecond) // b2 fetches no more: it leaves the ISR
	p.ok(1)
	l.crash(1)
	l.step(failover)
	l.wantLeader(2, 1, 2)
	collect(l)

	// kraft-elr: links cut and healed, the fencing rule changed, topics
	// and configs, a refused produce, an election from the ELR, a
	// restart after an unclean stop, and a failed disk.
	l = ruleLab(t, controller.FencingKRaftELR, strictConfigs)
	l.commitAll("m1")
	for _, c := range []struct {
		from, to int32
		oneWay   bool
	}{{1, 2, true}, {ControllerNode, 3, false}} {
		if err := l.c.Cut(c.from, c.to, c.oneWay); err != nil {
			t.Fatal(err)
		}
	}
	l.c.Heal()
	for _, r := range []string{"kraft", "kraft-elr"} {
		if err := l.c.SetFencingRule(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.c.CreateTopic("other", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.c.CreateTopic("more", 2, 1, nil); err != nil {
		t.Fatal(err)
	}
	retention := "60000"
	if _, err := l.c.AlterConfigs("other", map[string]*string{"retention.ms": &retention}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.c.AlterConfigs("other", map[string]*string{"retention.ms": nil}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"other", "more"} {
		if err := l.c.DeleteTopic(name); err != nil {
			t.Fatal(err)
		}
	}
	l.crash(2, 3)
	l.step(failover) // 2 and 3 leave the ISR below min.insync.replicas: the ELR
	if _, err := l.produce("m2", -1); !errors.Is(err, kerr.NotEnoughReplicas) {
		l.fatalf("m2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	l.crash(1)
	l.restart(2) // back from a crash: it leaves the ELR (KIP-966)
	l.restart(3)
	l.step(failover)
	l.restart(1)
	l.step(failover)
	l.settle()
	l.crash(3)
	l.restart(3) // a new incarnation: fenced until it catches up (KIP-903)
	l.step(failover)
	l.settle()
	// b2 and b3 lose the controller and leave the ISR, b3 below
	// min.insync.replicas (the ELR); the leader dies; b3 is back and
	// elected from the ELR.
	for _, id := range []int32{2, 3} {
		if err := l.c.Cut(id, ControllerNode, true); err != nil {
			t.Fatal(err)
		}
	}
	l.step(failover)
	l.crash(1)
	l.c.Heal()
	l.step(failover)
	l.step(failover)
	l.restart(1)
	l.step(failover)
	l.settle()
	leader, _, _ := l.meta() // its disk fails under the next produce
	if err := l.c.FailDisk(leader); err != nil {
		t.Fatal(err)
	}
	if _, err := l.c.Produce(context.Background(), scenarioTopic, 0, -1, []Record{{Value: []byte("m5")}}, time.Second); err == nil {
		l.fatalf("produce on a failed disk succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.c.AwaitStopped(ctx, leader); err != nil {
		l.fatalf("broker %d did not halt: %v", leader, err)
	}
	l.step(failover)
	collect(l)

	checkEventMessages(t, evs)
}

// checkEventMessages checks evs' messages (TestEventMessagesInEveryLanguage)
// and that the walk saw every kind of message it is meant to.
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
		"event.recovery.kept", "event.recovery.lost", "event.broker.started.clean", "event.broker.started.recovered",
		"event.broker.fenced.timeout", "event.broker.not-running", "event.broker.rereg.zookeeper", "event.broker.rereg.kraft",
		"event.broker.unfenced", "event.broker.log-dir-offline", "event.election", "event.word.how.clean",
		"event.word.how.unclean", "event.word.how.elr", "event.isr.unclean-restart",
		"event.config.fencing-rule", "event.topic.created.one", "event.topic.created.other", "event.topic.deleted",
		"event.config.topic", "event.config.topic.default", "event.produce-error", "errors.NOT_ENOUGH_REPLICAS",
		"event.truncation", "event.word.trunc.become-follower", "event.word.trunc.smaller", "event.fetch.diverging",
	} {
		if !seen[k] {
			t.Errorf("the walk never said %s", k)
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

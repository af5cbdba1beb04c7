package panel

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
)

// everyKind builds one event of each kind, with the fields and the
// message (key and arguments, as the brokers, the controller and the lab
// make them) a real lab gives it; a kind with several shapes (a fault, a
// clock change, an ISR change's causes) comes once per shape.
func everyKind() []events.Event {
	msg := i18n.EventMessage
	tp := func(k events.Kind, broker int32) events.Event {
		return events.Event{Kind: k, Broker: broker, Topic: "demo", Partition: 0}
	}
	with := func(e events.Event, f func(*events.Event)) events.Event { f(&e); return e }
	off := func(base, last, leo, hw int64) *events.Offsets {
		return &events.Offsets{Base: base, Last: last, LEO: leo, HW: hw}
	}
	recs := []events.Record{{Offset: 6, LeaderEpoch: 1, Value: "m1"}}
	lagged := []events.ISRChange{{Cause: events.ISRLagged, Broker: 3, LagMs: 10050, MaxLagMs: 10000}}
	caught := []events.ISRChange{{Cause: events.ISRCaughtUp, Broker: 3, Joined: true, Offset: 9}}
	expired := []events.ISRChange{{Cause: events.ISRSessionExpired, Broker: 2, ToELR: true}}
	restarted := []events.ISRChange{{Cause: events.ISRRestarted, Broker: 2}}
	isr := func(key string, ch []events.ISRChange, args ...any) events.Event {
		e := with(tp(events.KindISR, 1), func(e *events.Event) { e.ISR, e.ISRChanges = []int32{1, 2}, ch })
		return msg(e, key, append(args, i18n.ISRCause(ch), i18n.ISRToELR(ch), []int32{1, 2}, i18n.Word("event.word.elr", []int32{3}), 4)...)
	}
	fault := func(k events.FaultKind, broker int32) events.Event {
		return events.Event{Kind: events.KindFault, Broker: broker, Fault: &events.Fault{Kind: k}}
	}
	wire := func(k events.Kind, w events.Wire) events.Event {
		return with(tp(k, w.From), func(e *events.Event) { e.Wire = &w; e.Acks = events.AcksAll; e.ISR = []int32{1, 2} })
	}
	return []events.Event{
		with(tp(events.KindAppend, 1), func(e *events.Event) {
			e.Offsets, e.Leader, e.Records = off(6, 8, 9, 6), &events.Leadership{LeaderEpoch: 1}, recs
		}),
		with(tp(events.KindFetch, 2), func(e *events.Event) { e.Offsets, e.Leader = off(6, 8, 0, 6), &events.Leadership{Leader: 1} }),
		msg(with(tp(events.KindFetch, 2), func(e *events.Event) { e.Offsets = off(6, 5, 0, 6) }), "event.fetch.diverging", 1, 5),
		with(tp(events.KindHW, 1), func(e *events.Event) { e.Offsets = off(0, 0, 0, 9) }),
		msg(with(tp(events.KindLEO, 2), func(e *events.Event) { e.Offsets = off(0, 0, 9, 0) }),
			"event.recovery.kept", 9, i18n.Count("event.word.segments", 2), 5),
		isr("event.isr.alter", lagged, 1, "demo-0"),
		isr("event.isr.alter", caught, 1, "demo-0"),
		isr("event.isr.removed", expired, "demo-0"),
		isr("event.isr.removed", restarted, "demo-0"),
		msg(with(tp(events.KindISR, events.NoBroker), func(e *events.Event) {
			e.ISRChanges = []events.ISRChange{{Cause: events.ISRELRCleared, Broker: 3}}
		}), "event.isr.elr-cleared", "demo-0", []int32{1, 2}, 2),
		msg(with(tp(events.KindISR, 3), func(e *events.Event) {
			e.ISRChanges = []events.ISRChange{{Cause: events.ISRUncleanRestart, Broker: 3}}
		}), "event.isr.unclean-restart", 3, "demo-0", []int32{1}, []int32{}),
		msg(with(tp(events.KindElection, 2), func(e *events.Event) {
			e.Leader, e.ISR = &events.Leadership{Leader: 2, PreviousLeader: 1, LeaderEpoch: 2}, []int32{2, 3}
		}), "event.election", i18n.Word("event.word.reason.fenced", 1), "demo-0", 1, 2, 2, i18n.Word("event.word.how.clean")),
		msg(with(tp(events.KindElection, 3), func(e *events.Event) {
			e.Leader, e.ISR = &events.Leadership{Leader: 3, PreviousLeader: 1, LeaderEpoch: 3, Unclean: true}, []int32{3}
		}), "event.election", i18n.Word("event.word.reason.unclean-enabled"), "demo-0", 1, 3, 3, i18n.Word("event.word.how.unclean")),
		msg(with(tp(events.KindElection, events.NoBroker), func(e *events.Event) {
			e.Leader = &events.Leadership{Leader: events.NoBroker, PreviousLeader: 1, LeaderEpoch: 4}
		}), "event.election.unclean-off", i18n.Word("event.word.reason.fenced", 1), "demo-0", 1, -1, 4, i18n.Word("event.word.offline.isr", []int32{1})),
		with(tp(events.KindEpoch, 2), func(e *events.Event) { e.Leader = &events.Leadership{LeaderEpoch: 2, StartOffset: 9} }),
		with(tp(events.KindAck, 1), func(e *events.Event) { e.Acks, e.Offsets = events.AcksAll, off(6, 8, 9, 9) }),
		with(tp(events.KindAck, 1), func(e *events.Event) { e.Acks, e.Offsets = events.AcksNone, off(6, 8, 9, 6) }),
		msg(with(tp(events.KindProduceError, 1), func(e *events.Event) { e.Acks, e.Error = events.AcksAll, "NOT_ENOUGH_REPLICAS" }),
			"event.produce-error", "NOT_ENOUGH_REPLICAS", i18n.KafkaError("NOT_ENOUGH_REPLICAS")),
		msg(with(tp(events.KindTruncation, 2), func(e *events.Event) {
			e.Offsets, e.Truncated = off(5, 8, 5, 5), []events.TruncatedRecord{{Offset: 5, LeaderEpoch: 1, Digest: "ab12"}}
		}), "event.truncation", i18n.Word("event.word.cause.high-watermark"), "high-watermark", i18n.Word("event.word.trunc.become-follower", 1, 2, 5)),
		msg(with(tp(events.KindTruncation, 2), func(e *events.Event) { e.Offsets = off(5, 8, 5, 5) }),
			"event.truncation", i18n.Word("event.word.cause.diverging-epoch"), "leader-epoch", i18n.Word("event.word.trunc.smaller", 1, 1, 5, 7)),
		with(tp(events.KindRecords, 2), func(e *events.Event) { e.Records, e.Offsets = recs, off(6, 6, 0, 0) }),
		msg(fault(events.FaultCrash, 2), "event.fault.crash", 2),
		msg(fault(events.FaultPowerLoss, 2), i18n.Plural("event.fault.power-loss", 120), 2, 120),
		msg(fault(events.FaultRestart, 2), "event.fault.restart", 2),
		msg(fault(events.FaultDiskFailure, 2), "event.fault.disk-failure", 2),
		msg(with(fault(events.FaultCut, events.NoBroker), func(e *events.Event) { e.Fault.From, e.Fault.To, e.Fault.OneWay = 2, 3, true }),
			"event.link.cut", i18n.Word("event.word.node.broker", 2), i18n.Word("event.word.node.broker", 3), i18n.Word("event.word.dir.one")),
		msg(with(fault(events.FaultCut, events.NoBroker), func(e *events.Event) { e.Fault.From, e.Fault.To = 0, 3 }),
			"event.link.cut", i18n.Word("event.word.node.controller"), i18n.Word("event.word.node.broker", 3), i18n.Word("event.word.dir.both")),
		msg(fault(events.FaultHeal, events.NoBroker), "event.link.heal"),
		msg(with(tp(events.KindConfig, events.NoBroker), func(e *events.Event) {
			e.Config = &events.ConfigChange{Key: "min.insync.replicas", Value: "2", Previous: "1"}
		}), "event.config.topic", "demo", "min.insync.replicas", "2"),
		msg(events.Event{Kind: events.KindConfig, Broker: events.NoBroker, Config: &events.ConfigChange{Key: "fencing.rule", Value: "kraft", Previous: "kraft-elr"}},
			"event.config.fencing-rule", "kraft", "kraft-elr"),
		{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockPause}},
		{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockResume}},
		{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: 100}},
		{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockRate, Rate: 0.25}},
		msg(events.Event{Kind: events.KindBroker, Broker: 2, BrokerState: events.BrokerFenced, Listener: "127.0.0.1:9093"},
			"event.broker.fenced.timeout", 2, 2100, 2000),
		msg(events.Event{Kind: events.KindBroker, Broker: 2, BrokerState: events.BrokerFenced},
			"event.broker.rereg.kraft", 2, 7, "kraft-elr"),
		msg(events.Event{Kind: events.KindBroker, Broker: 2, BrokerState: events.BrokerUp}, "event.broker.unfenced", 2),
		msg(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: "demo",
			TopicCreated: &events.Topic{Name: "demo", Partitions: []events.Partition{{}, {}}}}, "event.topic.created.other", "demo", 2, 3),
		msg(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: "demo"}, "event.topic.deleted", "demo"),
		wire(events.KindFetchRequest, events.Wire{From: 2, To: 1, FetchOffset: 6, LastFetchedEpoch: 1}),
		wire(events.KindFetchResponse, events.Wire{From: 1, To: 2, Records: 3, HW: 6}),
		wire(events.KindProduceRequest, events.Wire{From: events.NoBroker, To: 1, Client: "tidemark-ui", Records: 3}),
		wire(events.KindClientFetch, events.Wire{From: 1, To: events.NoBroker, Client: "kcat", FetchOffset: 6, HW: 9, Records: 3}),
		wire(events.KindHeartbeat, events.Wire{From: 2, To: 0}),
		wire(events.KindAlterPartition, events.Wire{From: 1, To: 0}),
		wire(events.KindMetadata, events.Wire{From: 0, To: 2, Version: 12}),
		msg(wire(events.KindPipelineWrite, events.Wire{From: 1, To: 2, FetchOffset: 6, Records: 3}), "stage.msg.pipeline.write", 3, 6),
		msg(wire(events.KindPipelineAck, events.Wire{From: 2, To: 1, HW: 9}), "stage.msg.pipeline.ack", 9),
		msg(wire(events.KindRaft, events.Wire{From: 1, To: 2}), "stage.msg.raft.app", 3, 7, 2, 6),
	}
}

// identifiers are the lab's names in everyKind's events: the topic, a
// record's value, client ids.
var identifiers = []string{"demo", "tidemark-ui", "m1"}

// halfWidthColon is an ASCII colon or semicolon after Chinese text or
// its closing bracket: Chinese takes full-width punctuation.
var halfWidthColon = regexp.MustCompile(`[\p{Han}）][:;,]`)

// TestEveryEventKindInChinese formats one event of every kind (every
// shape of fault, clock change and ISR cause) as the event list, the
// stage and the server's pages do, in both Chinese scripts, and fails on
// a Latin word outside i18ntest.AllowedLatin, config names, error codes
// and the lab's identifiers, on half-width punctuation, and on a missing
// catalogue key (which shows as the key).
func TestEveryEventKindInChinese(t *testing.T) {
	seen := map[events.Kind]bool{}
	for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		c := Catalog(i18n.Catalog(l))
		for _, e := range everyKind() {
			seen[e.Kind] = true
			texts := map[string]string{
				"kind":     c.T("panel.kind." + string(e.Kind)),
				"describe": Describe(e, c),
				"page":     i18n.Message(l, e.Message, e.MessageKey, e.MessageArgs),
			}
			if e.Kind.IsMessage() {
				texts["label"] = MessageLabel(e, c)
			}
			for where, s := range texts {
				if e.Kind.Unlisted() && (where == "kind" || where == "describe" && !e.Kind.IsMessage()) {
					continue // never listed: record values fill in lanes
				}
				for _, w := range i18ntest.LatinWords(s, identifiers...) {
					t.Errorf("%s %s (%s) %s: %q in %q", l, e.Kind, e.MessageKey, where, w, s)
				}
				if halfWidthColon.MatchString(s) || strings.Contains(s, "%!") {
					t.Errorf("%s %s (%s) %s: half-width punctuation or a bad verb in %q", l, e.Kind, e.MessageKey, where, s)
				}
			}
		}
	}
	for _, k := range allKinds {
		if !seen[k] {
			t.Errorf("no event of kind %s is checked", k)
		}
	}
}

// allKinds are every events.Kind: a kind added without an event in
// everyKind fails the test.
var allKinds = []events.Kind{events.KindAppend, events.KindFetch, events.KindHW, events.KindLEO, events.KindISR,
	events.KindElection, events.KindEpoch, events.KindAck, events.KindProduceError, events.KindTruncation,
	events.KindRecords, events.KindFault, events.KindConfig, events.KindClock, events.KindBroker, events.KindTopic,
	events.KindFetchRequest, events.KindFetchResponse, events.KindProduceRequest, events.KindClientFetch,
	events.KindHeartbeat, events.KindAlterPartition, events.KindMetadata, events.KindPipelineWrite,
	events.KindPipelineAck, events.KindRaft}

// TestEveryEventTextInChinese renders every event text and word of the
// catalogues (event.*, and the stage's message labels) in both Chinese
// scripts with sample arguments and applies the same checks: the walks of
// TestEveryEventKindInChinese reach most of them, this reaches all.
func TestEveryEventTextInChinese(t *testing.T) {
	verb := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
	for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		for _, k := range i18n.Keys(l) {
			if !strings.HasPrefix(k, "event.") && !strings.HasPrefix(k, "stage.msg.") && !strings.HasPrefix(k, "panel.ev.") && !strings.HasPrefix(k, "panel.kind.") {
				continue
			}
			text := i18n.Catalog(l)[k]
			n := len(verb.FindAllString(text, -1))
			args := make([]any, n)
			for i := range args {
				args[i] = fmt.Sprint(i + 1)
			}
			s := verb.ReplaceAllStringFunc(text, func(string) string { return "7" })
			for _, w := range i18ntest.LatinWords(s) {
				t.Errorf("%s %s: %q in %q", l, k, w, text)
			}
			if halfWidthColon.MatchString(s) {
				t.Errorf("%s %s: half-width punctuation in %q", l, k, text)
			}
		}
	}
}

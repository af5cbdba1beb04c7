package observe

import (
	"testing"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
)

// TestDiffMessagesInEveryLanguage: what an observed cluster's changes say
// has a key, English equal to the Message, and no English sentence in
// Chinese.
func TestDiffMessagesInEveryLanguage(t *testing.T) {
	part := func(leader, epoch int32, isr []int32, leo, hw int64) events.Partition {
		return events.Partition{Partition: 0, Leader: leader, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: isr,
			ReplicaLogs: []events.Replica{{Broker: 1, LEO: leo, HW: hw}, {Broker: 2, LEO: leo, HW: hw}}}
	}
	prev := &events.Snapshot{Brokers: []events.Broker{{ID: 1, State: events.BrokerUp, Listener: "127.0.0.1:9092"}},
		Topics: []events.Topic{
			{Name: "a", Configs: map[string]string{"retention.ms": "1", "cleanup.policy": "delete"}, Partitions: []events.Partition{part(1, 0, []int32{1, 2}, 1, 1)}},
			{Name: "b", Partitions: []events.Partition{part(1, 0, []int32{1}, 0, 0)}},
			{Name: "gone"},
		}}
	next := &events.Snapshot{Brokers: []events.Broker{{ID: 1, State: events.BrokerFenced, Listener: "127.0.0.1:9092"}},
		Topics: []events.Topic{
			{Name: "a", Configs: map[string]string{"retention.ms": "2"}, Partitions: []events.Partition{part(2, 1, []int32{2}, 3, 2)}},
			{Name: "b", Partitions: []events.Partition{part(1, 0, []int32{1, 2}, 0, 0)}},
			{Name: "new", Partitions: []events.Partition{part(1, 0, []int32{1}, 0, 0)}},
		}}
	evs := diff(prev, next)
	if len(evs) < 8 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	for _, e := range evs {
		if e.MessageKey == "" || i18n.Message(i18n.English, "", e.MessageKey, e.MessageArgs) != e.Message {
			t.Errorf("%s: key %q, Message %q", e.Kind, e.MessageKey, e.Message)
		}
		for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			for _, p := range i18ntest.ChineseProblems(i18n.Message(l, e.Message, e.MessageKey, e.MessageArgs)) {
				t.Errorf("%s %s: %s", l, e.Kind, p)
			}
		}
	}
}

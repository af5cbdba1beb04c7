package i18n

import (
	"testing"

	"tidemark/events"
)

// TestISRCause: every cause the rules or the controller decide reads as
// its own sentence, with its figures, in every language.
func TestISRCause(t *testing.T) {
	cases := []struct {
		changes []events.ISRChange
		en      string
		hans    string
	}{
		{[]events.ISRChange{{Cause: events.ISRLagged, Broker: 3, LagMs: 10050, MaxLagMs: 10000}},
			"broker 3 dropped: it had not caught up with the leader for 10050 ms, more than replica.lag.time.max.ms=10000",
			"broker 3 被移出：它已有 10050 毫秒未追上 leader，超过 replica.lag.time.max.ms=10000"},
		{[]events.ISRChange{{Cause: events.ISRLagged, Broker: 2, LagMs: 10200, MaxLagMs: 10000}, {Cause: events.ISRLagged, Broker: 3, LagMs: 10050, MaxLagMs: 10000}},
			"brokers [2 3] dropped: they had not caught up with the leader for 10050 ms or more, more than replica.lag.time.max.ms=10000",
			"broker [2 3] 被移出：它们至少已有 10050 毫秒未追上 leader，超过 replica.lag.time.max.ms=10000"},
		{[]events.ISRChange{{Cause: events.ISRCaughtUp, Broker: 3, Joined: true, Offset: 42}},
			"broker 3 caught up and rejoined at offset 42", "broker 3 已追上，在 offset 42 处重新加入"},
		{[]events.ISRChange{{Cause: events.ISRSessionExpired, Broker: 2}},
			"broker 2 left: its session expired (no heartbeat within broker.session.timeout.ms) and the controller fenced it",
			"broker 2 离开：它的会话已过期（broker.session.timeout.ms 内没有心跳），控制器隔离了它"},
		{[]events.ISRChange{{Cause: events.ISRRestarted, Broker: 1}},
			"broker 1 left: it restarted as a new incarnation with a new broker epoch (KIP-903) and must catch up again",
			"broker 1 离开：它以新的 broker epoch 重启，成为新的实例（KIP-903），须重新追上"},
		{nil, "no cause stated", "未说明原因"},
	}
	for _, c := range cases {
		w := ISRCause(c.changes)
		en, args := Text("event.isr.alter", 1, "demo-0", w, ISRToELR(c.changes), []int32{1}, "", 5)
		if want := "leader 1 changed the ISR of demo-0: " + c.en + "; ISR [1], partition epoch 5"; en != want {
			t.Errorf("English\n%q, want\n%q", en, want)
		}
		if got, want := Message(SimplifiedChinese, en, "event.isr.alter", args), "leader 1 修改了 demo-0 的 ISR："+c.hans+"；ISR [1]，分区 epoch 5"; got != want {
			t.Errorf("zh-Hans\n%q, want\n%q", got, want)
		}
	}
	toELR := []events.ISRChange{{Cause: events.ISRFenced, Broker: 2, ToELR: true}}
	if en, _ := Text("event.isr.removed", "demo-0", ISRCause(toELR), ISRToELR(toELR), []int32{1}, "", 5); en != "demo-0: broker 2 left: the controller fenced it; 2 joined the ELR (KIP-966): the ISR is below min.insync.replicas, so it holds every committed record and may still be elected; ISR [1], partition epoch 5" {
		t.Errorf("to the ELR: %q", en)
	}
}

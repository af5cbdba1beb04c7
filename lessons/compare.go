package lessons

import (
	"fmt"
	"strconv"

	"tidemark/server/chaos"
	"tidemark/server/controller"
)

// The comparison in a lesson: "do compare SEED ACTIONS" plays the chaos
// engine's comparison run (server/chaos: one seeded fault schedule on a
// fresh cluster of its own, one topic per replication protocol, each RF 3,
// acks=all, min.insync.replicas=2) and says its table, one line per
// protocol; the compare-* queries read its figures for checks and choices.
// The lesson's own cluster is not touched. Quorum's elections draw random
// timeouts, so only figures that hold for every play belong in checks.

// addCompareVocab adds the comparison's action and queries to the
// vocabulary (called from vocab.go's init, once its maps exist).
func addCompareVocab() {
	actions["compare"] = actionSpec{"int int", nil, func(e *Env, a []string, _ map[string]string) error {
		seed, _ := strconv.ParseUint(a[0], 10, 64)
		n, _ := strconv.Atoi(a[1])
		if n < 1 || n > chaos.MaxActions {
			return fmt.Errorf("compare %s %s: 1 to %d actions", a[0], a[1], chaos.MaxActions)
		}
		cmp, err := chaos.Compare(e.ctx, seed, chaos.Generate(seed, n), nil, chaos.Options{})
		if err != nil {
			return err
		}
		e.compared = cmp
		for _, pr := range cmp.Protocols {
			e.Say(compareLine(pr))
		}
		return nil
	}}
	figure := func(f func(pr chaos.ProtocolResult, a []string) int64) querySpec {
		return querySpec{"word int*", func(e *Env, a []string) (Value, error) {
			if e.compared == nil {
				return Value{}, fmt.Errorf("no comparison yet: do compare first")
			}
			for _, pr := range e.compared.Protocols {
				if string(pr.Protocol) == a[0] {
					return num(f(pr, a[1:])), nil
				}
			}
			return Value{}, fmt.Errorf("the comparison has no protocol %q", a[0])
		}}
	}
	queries["compare-attempted"] = figure(func(pr chaos.ProtocolResult, _ []string) int64 { return int64(pr.Attempted) })
	queries["compare-accepted"] = figure(func(pr chaos.ProtocolResult, _ []string) int64 { return int64(pr.Accepted) })
	queries["compare-lost"] = figure(func(pr chaos.ProtocolResult, _ []string) int64 { return int64(pr.Lost) })
	// compare-replicas PROTOCOL F: the replicas the protocol needs for F
	// failures (computed from the protocol, chaos.ReplicasNeeded).
	queries["compare-replicas"] = figure(func(pr chaos.ProtocolResult, a []string) int64 {
		f := 1
		if len(a) > 0 {
			f, _ = strconv.Atoi(a[0])
		}
		n, _ := chaos.ReplicasNeeded(controller.ReplicationProtocol(pr.Protocol), f)
		return int64(n)
	})
}

// compareLine is one protocol's row of a comparison as a sentence.
func compareLine(pr chaos.ProtocolResult) Text {
	if pr.SkippedCode != "" {
		return T("%s: skipped, the controller refused the topic (%s).", "%s：已跳过，控制器拒绝创建该 topic（%s）。",
			"%s：已略過，控制器拒絕建立該 topic（%s）。").F(pr.Protocol, pr.SkippedCode)
	}
	n1, formula := chaos.ReplicasNeeded(pr.Protocol, 1)
	return T("%s: %d of %d acks=all writes accepted (%.0f%%), %d acknowledged writes lost, latency p50 %.0f ms and p99 %.0f ms of lab time, %s replicas for f failures (%d for f=1), %.1f replication messages per committed record.",
		"%s：%d / %d 个 acks=all 写入被接受（%.0f%%），丢失 %d 个已确认写入，延迟 p50 %.0f 毫秒、p99 %.0f 毫秒（实验时间），容忍 f 个故障需要 %s 个副本（f=1 时 %d 个），每条已提交记录 %.1f 条复制消息。",
		"%s：%d / %d 個 acks=all 寫入被接受（%.0f%%），遺失 %d 個已確認寫入，延遲 p50 %.0f 毫秒、p99 %.0f 毫秒（實驗時間），容忍 f 個故障需要 %s 個副本（f=1 時 %d 個），每筆已提交記錄 %.1f 則複製訊息。").F(
		pr.Protocol, pr.Accepted, pr.Attempted, 100*pr.Availability, pr.Lost, pr.LatencyMs.P50, pr.LatencyMs.P99, formula, n1, pr.MessagesPerRecord)
}

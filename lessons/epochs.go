package lessons

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
	"tidemark/storage"
)

// Lessons 11–14: KIP-101's two scenarios under both truncation rules,
// duplicates and the idempotent producer, and f+1 against 2f+1.

var rules = []string{"hw", "le"} // topics with truncation.rule high-watermark and leader-epoch

func createRuleTopics(e *Env) error {
	if err := e.CreateTopic("hw", 1, 2, map[string]string{"truncation.rule": "high-watermark"}); err != nil {
		return err
	}
	return e.CreateTopic("le", 1, 2, map[string]string{"truncation.rule": "leader-epoch"})
}

// produceBoth sends value with acks=all to both rule topics and returns
// the pending produces.
func produceBoth(e *Env, value string) error {
	for _, t := range rules {
		p, err := e.ProduceAsync(t, value)
		if err != nil {
			return err
		}
		e.Vars[t] = p
	}
	return nil
}

func waitBoth(e *Env, value string, want int64) {
	for _, t := range rules {
		off, err := pending(e, t).Wait()
		e.Check(T("%s acknowledged on %s at offset %d", "%s 在 %s 上于 offset %d 确认", "%s 在 %s 上於 offset %d 確認").F(value, t, want), err == nil && off == want, "offset %d, %v", off, err)
	}
}

func init() {
	register(&Lesson{
		ID: "11-kip101-hw-truncation", Brokers: 2, Fencing: zookeeperRule(),
		Title: T("Truncating to the HW loses an acknowledged write", "截断到 HW 会丢失已确认的写入", "截斷到 HW 會遺失已確認的寫入"),
		Summary: T("KIP-101 scenario 1. A follower learns the HW one fetch late; if it restarts and truncates to its own HW, then becomes leader before fetching again, an acknowledged record is gone. Leader epochs let it ask the leader where to truncate instead. Topic hw uses the old rule, topic le leader epochs, side by side.",
			"KIP-101 场景 1。follower 晚一轮才知道 HW；如果它重启后截断到自己的 HW，又在再次 fetch 前成为 leader，已确认的记录就没了。leader epoch 让它改为询问 leader 应截断到哪里。topic hw 使用旧规则，topic le 使用 leader epoch，并排对比。",
			"KIP-101 場景 1。follower 晚一輪才知道 HW；如果它重啟後截斷到自己的 HW，又在再次 fetch 前成為 leader，已確認的記錄就沒了。leader epoch 讓它改為詢問 leader 應截斷到哪裡。topic hw 使用舊規則，topic le 使用 leader epoch，並排對比。"),
		Concepts: []string{"HW", "truncation", "leader epoch", "KIP-101", "OffsetForLeaderEpoch"},
		Setup:    createRuleTopics,
		Steps: []Step{
			{
				Title: T("m1 and m2, acknowledged", "m1 和 m2 都已确认", "m1 和 m2 都已確認"),
				Explain: T("m1 and m2 are written with acks=all to both topics. Broker 2 fetches just enough for the acknowledgements; the HW checkpoint was written when its HW was 1.",
					"以 acks=all 向两个 topic 写入 m1 和 m2。broker 2 的 fetch 刚好足以完成确认；HW checkpoint 写入时它的 HW 是 1。",
					"以 acks=all 向兩個 topic 寫入 m1 和 m2。broker 2 的 fetch 剛好足以完成確認；HW checkpoint 寫入時它的 HW 是 1。"),
				Run: func(e *Env) error {
					if err := produceBoth(e, "m1"); err != nil {
						return err
					}
					if err := e.Fetch(2, 2); err != nil {
						return err
					}
					waitBoth(e, "m1", 0)
					if err := e.Fetch(2); err != nil {
						return err
					}
					e.Checkpoint(1, 2)
					if err := produceBoth(e, "m2"); err != nil {
						return err
					}
					if err := e.Fetch(2, 2); err != nil {
						return err
					}
					waitBoth(e, "m2", 1)
					e.sayLanes("hw")
					st, _ := e.Status(2, "hw")
					e.Point(Pointer{Kind: "hw", Broker: 2, Topic: "hw", Offset: st.HighWatermark, Note: "replication-offset-checkpoint"})
					e.Check(T("Broker 2 has m1 and m2 but HW 1", "broker 2 有 m1 和 m2，但 HW 为 1", "broker 2 有 m1 和 m2，但 HW 為 1"), st.HighWatermark == 1 && wantValues(e, 2, "hw", "m1", "m2"), "HW %d", st.HighWatermark)
					return nil
				},
			},
			{
				Title:   T("Broker 2 restarts", "broker 2 重启", "broker 2 重啟"),
				Explain: T("Broker 2 restarts quickly, before the controller notices, and keeps its ISR place. It reads HW 1 from its checkpoint.", "broker 2 快速重启，controller 还没察觉，它保留了 ISR 位置。它从 checkpoint 读到 HW 1。", "broker 2 快速重啟，controller 還沒察覺，它保留了 ISR 位置。它從 checkpoint 讀到 HW 1。"),
				Predict: &Prediction{
					Question: T("What does broker 2 keep in topic hw (truncation to the HW)?", "在 topic hw（截断到 HW）中 broker 2 保留了什么？", "在 topic hw（截斷到 HW）中 broker 2 保留了什麼？"),
					Choices: []Choice{
						choice("m1", T("Only m1: it truncates to its HW 1", "只有 m1：它截断到自己的 HW 1", "只有 m1：它截斷到自己的 HW 1"), func(e *Env) bool { return wantValues(e, 2, "hw", "m1") }),
						choice("both", T("m1 and m2", "m1 和 m2", "m1 和 m2"), func(e *Env) bool { return wantValues(e, 2, "hw", "m1", "m2") }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Crash(2); err != nil {
						return err
					}
					if err := e.Restart(2); err != nil {
						return err
					}
					e.sayLanes("hw")
					e.sayLanes("le")
					for _, r := range e.Truncated(2, "hw") {
						e.Point(Pointer{Kind: "truncated", Broker: 2, Topic: "hw", Offset: r.Offset})
					}
					e.Check(T("hw: broker 2 truncated m2", "hw：broker 2 截断了 m2", "hw：broker 2 截斷了 m2"), e.TruncatedValue(2, "hw", "m2") && wantValues(e, 2, "hw", "m1"), "%v", e.Values(2, "hw"))
					e.Check(T("le: broker 2 kept m2", "le：broker 2 保留了 m2", "le：broker 2 保留了 m2"), wantValues(e, 2, "le", "m1", "m2"), "%v", e.Values(2, "le"))
					return nil
				},
			},
			{
				Title:   T("The leader dies", "leader 宕机", "leader 當機"),
				Explain: T("Broker 1 crashes before broker 2 fetches again. Broker 2 is in the ISR, so it is elected cleanly.", "broker 1 在 broker 2 再次 fetch 之前崩溃。broker 2 在 ISR 中，因此被正常选为 leader。", "broker 1 在 broker 2 再次 fetch 之前崩潰。broker 2 在 ISR 中，因此被正常選為 leader。"),
				Predict: &Prediction{
					Question: T("Where is the acknowledged m2 now?", "已确认的 m2 现在在哪里？", "已確認的 m2 現在在哪裡？"),
					Choices: []Choice{
						choice("split", T("Gone from hw's new leader, present on le's", "hw 的新 leader 上没有，le 的新 leader 上有", "hw 的新 leader 上沒有，le 的新 leader 上有"), func(e *Env) bool {
							return !slices.Contains(e.Values(2, "hw"), "m2") && e.Has(2, "le", 1, "m2")
						}),
						choice("both", T("On both new leaders", "两个新 leader 上都有", "兩個新 leader 上都有"), func(e *Env) bool { return e.Has(2, "hw", 1, "m2") && e.Has(2, "le", 1, "m2") }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Crash(1); err != nil {
						return err
					}
					if err := e.Step(failover); err != nil {
						return err
					}
					e.sayLanes("hw")
					e.sayLanes("le")
					e.PointLog(2, "le")
					e.Check(T("Broker 2 leads both topics", "broker 2 领导两个 topic", "broker 2 領導兩個 topic"), e.Meta("hw").Leader == 2 && e.Meta("le").Leader == 2, "%d %d", e.Meta("hw").Leader, e.Meta("le").Leader)
					return nil
				},
			},
			{
				Title:   T("Broker 1 returns", "broker 1 回来", "broker 1 回來"),
				Explain: T("Broker 1 restarts and follows broker 2.", "broker 1 重启并跟随 broker 2。", "broker 1 重啟並跟隨 broker 2。"),
				Run: func(e *Env) error {
					if err := e.Restart(1); err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					e.sayLanes("hw")
					e.sayLanes("le")
					for _, r := range e.Truncated(1, "hw") {
						e.Point(Pointer{Kind: "truncated", Broker: 1, Topic: "hw", Offset: r.Offset})
					}
					gone := !slices.Contains(e.Values(1, "hw"), "m2") && !slices.Contains(e.Values(2, "hw"), "m2")
					e.Check(T("high-watermark: the acknowledged m2 is gone from every replica", "high-watermark：已确认的 m2 从所有副本中消失", "high-watermark：已確認的 m2 從所有副本中消失"), gone, "%v %v", e.Values(1, "hw"), e.Values(2, "hw"))
					e.Check(T("leader-epoch: m2 is present on every replica", "leader-epoch：m2 在所有副本上都存在", "leader-epoch：m2 在所有副本上都存在"), e.Has(1, "le", 1, "m2") && e.Has(2, "le", 1, "m2"), "%v %v", e.Values(1, "le"), e.Values(2, "le"))
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "12-kip101-divergence", Brokers: 2, Fencing: zookeeperRule(),
		Title: T("Two failures, two different logs", "两次故障，两份不同的 log", "兩次故障，兩份不同的 log"),
		Summary: T("KIP-101 scenario 2. Both replicas lose power; the follower had m2 only in its page cache, comes back first, leads and writes m3 at offset 1. Truncating to the HW leaves two replicas with different records at the same offset; leader epochs make them identical again.",
			"KIP-101 场景 2。两个副本同时断电；follower 的 m2 只在 page cache 中，它先恢复、成为 leader 并在 offset 1 写入 m3。截断到 HW 会让两个副本在同一 offset 上有不同记录；leader epoch 让它们重新一致。",
			"KIP-101 場景 2。兩個副本同時斷電；follower 的 m2 只在 page cache 中，它先恢復、成為 leader 並在 offset 1 寫入 m3。截斷到 HW 會讓兩個副本在同一 offset 上有不同記錄；leader epoch 讓它們重新一致。"),
		Concepts: []string{"power loss", "fsync", "leader epoch", "KIP-101", "leader-epoch-checkpoint"},
		Setup:    createRuleTopics,
		Steps: []Step{
			{
				Title:   T("m2 on disk on broker 1 only", "m2 只在 broker 1 落盘", "m2 只在 broker 1 落盤"),
				Explain: T("m1 and m2 are acknowledged with acks=all on both topics. Broker 1 fsyncs m2; broker 2 has it only in its page cache.", "m1 和 m2 在两个 topic 上以 acks=all 得到确认。broker 1 对 m2 做了 fsync；broker 2 的 m2 只在 page cache 中。", "m1 和 m2 在兩個 topic 上以 acks=all 得到確認。broker 1 對 m2 做了 fsync；broker 2 的 m2 只在 page cache 中。"),
				Run: func(e *Env) error {
					if err := produceBoth(e, "m1"); err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					waitBoth(e, "m1", 0)
					if err := e.Flush(1, 2); err != nil {
						return err
					}
					e.Checkpoint(1, 2)
					if err := produceBoth(e, "m2"); err != nil {
						return err
					}
					if err := e.Fetch(2, 2); err != nil {
						return err
					}
					waitBoth(e, "m2", 1)
					if err := e.Flush(1); err != nil {
						return err
					}
					e.Checkpoint(1)
					e.sayLanes("hw")
					return nil
				},
			},
			{
				Title:   T("Both lose power", "两者同时断电", "兩者同時斷電"),
				Explain: T("Both brokers lose power. Broker 2, the last ISR member, comes back first, leads, and takes m3.", "两个 broker 同时断电。最后的 ISR 成员 broker 2 先恢复，成为 leader，并接受 m3。", "兩個 broker 同時斷電。最後的 ISR 成員 broker 2 先恢復，成為 leader，並接受 m3。"),
				Predict: &Prediction{
					Question: T("What is at offset 1 on broker 2 now?", "broker 2 上 offset 1 现在是什么？", "broker 2 上 offset 1 現在是什麼？"),
					Choices: []Choice{
						choice("m3", T("m3: m2 never reached broker 2's disk", "m3：m2 从未落到 broker 2 的磁盘", "m3：m2 從未落到 broker 2 的磁碟"), func(e *Env) bool { return e.Has(2, "hw", 1, "m3") }),
						choice("m2", T("m2: it was acknowledged", "m2：它已被确认", "m2：它已被確認"), func(e *Env) bool { return e.Has(2, "hw", 1, "m2") }),
					},
				},
				Run: func(e *Env) error {
					if err := e.PowerLoss(1, 2); err != nil {
						return err
					}
					if err := e.Step(failover); err != nil {
						return err
					}
					if err := e.Restart(2); err != nil {
						return err
					}
					for _, t := range rules {
						if _, err := e.Produce(t, "m3", -1); err != nil {
							return err
						}
					}
					e.sayLanes("hw")
					e.PointLog(2, "hw")
					e.Check(T("Broker 2 leads with m1 and m3", "broker 2 作为 leader，拥有 m1 和 m3", "broker 2 作為 leader，擁有 m1 和 m3"), e.Meta("hw").Leader == 2 && wantValues(e, 2, "hw", "m1", "m3") && wantValues(e, 2, "le", "m1", "m3"), "%v", e.Values(2, "hw"))
					return nil
				},
			},
			{
				Title:   T("Broker 1 returns", "broker 1 回来", "broker 1 回來"),
				Explain: T("Broker 1 restarts with m2 at offset 1 on disk and HW 2, and follows broker 2.", "broker 1 重启，磁盘上 offset 1 是 m2，HW 为 2，并跟随 broker 2。", "broker 1 重啟，磁碟上 offset 1 是 m2，HW 為 2，並跟隨 broker 2。"),
				Predict: &Prediction{
					Question: T("Do the two replicas end with the same log?", "两个副本最后的 log 相同吗？", "兩個副本最後的 log 相同嗎？"),
					Choices: []Choice{
						choice("split", T("Not under high-watermark (m2 against m3 at offset 1); yes under leader-epoch", "high-watermark 下不同（offset 1 上 m2 对 m3）；leader-epoch 下相同", "high-watermark 下不同（offset 1 上 m2 對 m3）；leader-epoch 下相同"), func(e *Env) bool {
							return !slices.Equal(e.Values(1, "hw"), e.Values(2, "hw")) && slices.Equal(e.Values(1, "le"), e.Values(2, "le"))
						}),
						choice("same", T("Yes under both rules", "两种规则下都相同", "兩種規則下都相同"), func(e *Env) bool {
							return slices.Equal(e.Values(1, "hw"), e.Values(2, "hw")) && slices.Equal(e.Values(1, "le"), e.Values(2, "le"))
						}),
					},
				},
				Run: func(e *Env) error {
					if err := e.Restart(1); err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					e.sayLanes("hw")
					e.sayLanes("le")
					e.Point(Pointer{Kind: "record", Broker: 1, Topic: "hw", Offset: 1, Value: "m2"})
					e.Point(Pointer{Kind: "record", Broker: 2, Topic: "hw", Offset: 1, Value: "m3"})
					for _, r := range e.Truncated(1, "le") {
						e.Point(Pointer{Kind: "truncated", Broker: 1, Topic: "le", Offset: r.Offset, Note: fmt.Sprintf("leader epoch %d", r.LeaderEpoch)})
					}
					e.Check(T("high-watermark: offset 1 is m2 on broker 1 and m3 on broker 2, both below the HW", "high-watermark：offset 1 在 broker 1 上是 m2，在 broker 2 上是 m3，且都在 HW 之下", "high-watermark：offset 1 在 broker 1 上是 m2，在 broker 2 上是 m3，且都在 HW 之下"),
						wantValues(e, 1, "hw", "m1", "m2") && wantValues(e, 2, "hw", "m1", "m3"), "%v %v", e.Values(1, "hw"), e.Values(2, "hw"))
					e.Check(T("leader-epoch: broker 1 truncated m2 and both logs are m1 m3", "leader-epoch：broker 1 截断了 m2，两份 log 都是 m1 m3", "leader-epoch：broker 1 截斷了 m2，兩份 log 都是 m1 m3"),
						e.TruncatedValue(1, "le", "m2") && wantValues(e, 1, "le", "m1", "m3") && wantValues(e, 2, "le", "m1", "m3"), "%v %v", e.Values(1, "le"), e.Values(2, "le"))
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "13-idempotence", Brokers: 2,
		Title: T("Retries duplicate; the idempotent producer does not", "重试会产生重复；幂等 producer 不会", "重試會產生重複；冪等 producer 不會"),
		Summary: T("A producer told that a write failed cannot know whether it was appended. Retrying gives at least once; not retrying, at most once. The idempotent producer numbers its batches so the leader recognises a retry: exactly once per partition.",
			"被告知写入失败的 producer 无法知道数据是否已被追加。重试得到至少一次；不重试得到至多一次。幂等 producer 为 batch 编号，leader 能识别重试：每个 partition 恰好一次。",
			"被告知寫入失敗的 producer 無法知道資料是否已被追加。重試得到至少一次；不重試得到至多一次。冪等 producer 為 batch 編號，leader 能識別重試：每個 partition 恰好一次。"),
		Concepts: []string{"at most once", "at least once", "exactly once", "idempotent producer", "NOT_ENOUGH_REPLICAS_AFTER_APPEND"},
		Setup: func(e *Env) error {
			return e.CreateTopic(labTopic, 1, 2, map[string]string{"min.insync.replicas": "2"})
		},
		Steps: []Step{
			{
				Title:   T("A write reported as failed", "被报告为失败的写入", "被回報為失敗的寫入"),
				Explain: T("m1 is sent with acks=all; broker 2 does not fetch, leaves the ISR, and the ISR falls below min.insync.replicas=2. Then broker 2 catches up.", "以 acks=all 发送 m1；broker 2 不 fetch，离开 ISR，ISR 低于 min.insync.replicas=2。随后 broker 2 追上。", "以 acks=all 發送 m1；broker 2 不 fetch，離開 ISR，ISR 低於 min.insync.replicas=2。隨後 broker 2 追上。"),
				Run: func(e *Env) error {
					p, err := e.ProduceAsync(labTopic, "m1")
					if err != nil {
						return err
					}
					if err := e.Step(lagPast); err != nil {
						return err
					}
					_, perr := p.Wait()
					e.Say(T("The producer is told: %s. But the leader had already appended m1 at offset 0.", "producer 收到：%s。但 leader 早已在 offset 0 追加了 m1。", "producer 收到：%s。但 leader 早已在 offset 0 追加了 m1。").F(errText(perr)))
					if err := e.Fetch(2, 2); err != nil {
						return err
					}
					vs, _ := e.Consume(labTopic)
					e.Say(T("Broker 2 caught up; a consumer now reads %v.", "broker 2 追上后，consumer 读到 %v。", "broker 2 追上後，consumer 讀到 %v。").F(vs))
					e.Point(Pointer{Kind: "record", Broker: 1, Topic: labTopic, Offset: 0, Value: "m1"})
					e.Check(T("m1 failed with NOT_ENOUGH_REPLICAS_AFTER_APPEND yet is committed", "m1 以 NOT_ENOUGH_REPLICAS_AFTER_APPEND 失败，却已提交", "m1 以 NOT_ENOUGH_REPLICAS_AFTER_APPEND 失敗，卻已提交"), errors.Is(perr, kerr.NotEnoughReplicasAfterAppend) && slices.Equal(vs, []string{"m1"}), "%v, read %v", perr, vs)
					return nil
				},
			},
			{
				Title:   T("A plain retry", "普通重试", "普通重試"),
				Explain: T("The producer retries m1 with acks=all.", "producer 以 acks=all 重试 m1。", "producer 以 acks=all 重試 m1。"),
				Predict: &Prediction{
					Question: T("How many m1 records will a consumer read?", "consumer 会读到几条 m1？", "consumer 會讀到幾筆 m1？"),
					Choices: []Choice{
						choice("one", T("One", "一条", "一筆"), func(e *Env) bool { return e.Vars["copies"] == 1 }),
						choice("two", T("Two: at least once means duplicates", "两条：至少一次意味着会重复", "兩筆：至少一次意味著會重複"), func(e *Env) bool { return e.Vars["copies"] == 2 }),
					},
				},
				Run: func(e *Env) error {
					p, err := e.ProduceAsync(labTopic, "m1")
					if err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					off, perr := p.Wait()
					vs, _ := e.Consume(labTopic)
					n := 0
					for _, v := range vs {
						if v == "m1" {
							n++
						}
					}
					e.Vars["copies"] = n
					e.PointLog(1, labTopic)
					e.Check(T("The retry was appended again: m1 is in the log twice", "重试再次被追加：m1 在 log 中出现两次", "重試再次被追加：m1 在 log 中出現兩次"), perr == nil && off == 1 && n == 2, "offset %d, %v, read %v", off, perr, vs)
					return nil
				},
			},
			{
				Title: T("The idempotent producer", "幂等 producer", "冪等 producer"),
				Explain: T("An idempotent producer gets a producer id (InitProducerId) and sends p1 as sequence 0. The same failure happens: broker 2 stops fetching, the write is reported failed, broker 2 catches up. The producer retries the very same batch.",
					"幂等 producer 先通过 InitProducerId 获得 producer id，再以序号 0 发送 p1。同样的故障发生：broker 2 停止 fetch，写入被报告失败，broker 2 又追上。producer 重试完全相同的 batch。",
					"冪等 producer 先透過 InitProducerId 取得 producer id，再以序號 0 發送 p1。同樣的故障發生：broker 2 停止 fetch，寫入被回報失敗，broker 2 又追上。producer 重試完全相同的 batch。"),
				Predict: &Prediction{
					Question: T("How many p1 records end up in the log?", "log 中最终有几条 p1？", "log 中最終有幾筆 p1？"),
					Choices: []Choice{
						choice("one", T("One: the leader recognises the producer id and sequence", "一条：leader 认出了 producer id 和序号", "一筆：leader 認出了 producer id 和序號"), func(e *Env) bool { return e.Vars["pcopies"] == 1 }),
						choice("two", T("Two, as with the plain retry", "两条，和普通重试一样", "兩筆，和普通重試一樣"), func(e *Env) bool { return e.Vars["pcopies"] == 2 }),
					},
				},
				Run: func(e *Env) error {
					pid, err := initProducerID(e)
					if err != nil {
						return err
					}
					p, err := e.produceBytes(labTopic, "p1", idempotentBatch(pid, 0, 0, "p1", e.c.Clock().Now().UnixMilli()))
					if err != nil {
						return err
					}
					if err := e.Step(lagPast); err != nil {
						return err
					}
					first, ferr := p.Wait()
					if err := e.Fetch(2, 2); err != nil {
						return err
					}
					p, err = e.produceBytes(labTopic, "p1", idempotentBatch(pid, 0, 0, "p1", e.c.Clock().Now().UnixMilli()))
					if err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					again, aerr := p.Wait()
					n := 0
					for _, v := range e.Values(1, labTopic) {
						if v == "p1" {
							n++
						}
					}
					e.Vars["pcopies"] = n
					e.Say(T("Producer id %d. First attempt: %s (appended at offset %d). Retry: %s, offset %d — the original offset, nothing appended.", "producer id %d。第一次：%s（已追加在 offset %d）。重试：%s，offset %d——原来的 offset，没有再追加。", "producer id %d。第一次：%s（已追加在 offset %d）。重試：%s，offset %d——原來的 offset，沒有再追加。").F(pid, errText(ferr), first, errText(aerr), again))
					e.PointLog(1, labTopic)
					e.Check(T("The retry got the original offset and p1 is in the log once", "重试得到原来的 offset，p1 在 log 中只有一条", "重試得到原來的 offset，p1 在 log 中只有一筆"), aerr == nil && again == 2 && n == 1, "offset %d, %v, %d copies", again, aerr, n)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "14-f-plus-one", Brokers: 3,
		Title: T("f+1 replicas for f failures", "f+1 个副本容忍 f 次故障", "f+1 個副本容忍 f 次故障"),
		Summary: T("A majority quorum needs 2f+1 replicas to survive f failures. Because the ISR holds exactly the replicas that have every committed record, Kafka survives f failures with f+1 replicas. Three replicas go through one failure, then two.",
			"多数派 quorum 需要 2f+1 个副本才能容忍 f 次故障。由于 ISR 恰好由拥有全部已提交记录的副本组成，Kafka 用 f+1 个副本就能容忍 f 次故障。下面让三个副本先经历一次故障，再经历两次。",
			"多數派 quorum 需要 2f+1 個副本才能容忍 f 次故障。由於 ISR 恰好由擁有全部已提交記錄的副本組成，Kafka 用 f+1 個副本就能容忍 f 次故障。下面讓三個副本先經歷一次故障，再經歷兩次。"),
		Concepts: []string{"ISR", "quorum", "f+1", "2f+1"},
		Setup:    func(e *Env) error { return e.CreateTopic(labTopic, 1, 3, nil) },
		Steps: []Step{
			{
				Title:   T("Three in-sync replicas", "三个同步副本", "三個同步副本"),
				Explain: T("m1 is written with acks=all and reaches all three replicas.", "以 acks=all 写入 m1，三个副本都收到了。", "以 acks=all 寫入 m1，三個副本都收到了。"),
				Run: func(e *Env) error {
					off, err := e.ProduceSettled(labTopic, "m1")
					e.sayLanes(labTopic)
					e.Check(T("m1 acknowledged by the ISR [1 2 3]", "m1 被 ISR [1 2 3] 确认", "m1 被 ISR [1 2 3] 確認"), err == nil && off == 0 && slices.Equal(e.Meta(labTopic).ISR, []int32{1, 2, 3}), "offset %d, %v", off, err)
					return nil
				},
			},
			{
				Title:   T("f = 1", "f = 1", "f = 1"),
				Explain: T("Broker 1 fails. A majority quorum of 3 still has 2 of 3 and goes on too.", "broker 1 故障。3 个副本的多数派 quorum 还剩 2 个，也能继续工作。", "broker 1 故障。3 個副本的多數派 quorum 還剩 2 個，也能繼續工作。"),
				Predict: &Prediction{
					Question: T("Does the partition keep m1 and commit m2 with acks=all?", "partition 能保留 m1 并以 acks=all 提交 m2 吗？", "partition 能保留 m1 並以 acks=all 提交 m2 嗎？"),
					Choices: []Choice{
						choice("yes", T("Yes", "能", "能"), func(e *Env) bool { return e.Vars["f1"] == true }),
						choice("no", T("No", "不能", "不能"), func(e *Env) bool { return e.Vars["f1"] != true }),
					},
				},
				Run: func(e *Env) error { return failOne(e, 1, "m2", "f1", 1) },
			},
			{
				Title: T("f = 2", "f = 2", "f = 2"),
				Explain: T("Broker 2 fails too. A majority quorum of 3 replicas would now have 1 of 3 and stop: it would need 2f+1 = 5 replicas. The ISR is {3}, and broker 3 has every committed record.",
					"broker 2 也故障了。3 个副本的多数派 quorum 现在只剩 1 个，会停止服务：它需要 2f+1 = 5 个副本。ISR 是 {3}，而 broker 3 拥有全部已提交记录。",
					"broker 2 也故障了。3 個副本的多數派 quorum 現在只剩 1 個，會停止服務：它需要 2f+1 = 5 個副本。ISR 是 {3}，而 broker 3 擁有全部已提交記錄。"),
				Predict: &Prediction{
					Question: T("What does the partition do with f+1 = 3 replicas and 2 failures?", "在 f+1 = 3 个副本、2 次故障的情况下，partition 会怎样？", "在 f+1 = 3 個副本、2 次故障的情況下，partition 會怎樣？"),
					Choices: []Choice{
						choice("survives", T("Broker 3 leads with m1 and m2 and commits m3", "broker 3 成为 leader，拥有 m1 和 m2，并提交 m3", "broker 3 成為 leader，擁有 m1 和 m2，並提交 m3"), func(e *Env) bool { return e.Vars["f2"] == true }),
						choice("stops", T("It stops, like a majority quorum", "像多数派 quorum 一样停止", "像多數派 quorum 一樣停止"), func(e *Env) bool { return e.Vars["f2"] != true }),
					},
				},
				Run: func(e *Env) error { return failOne(e, 2, "m3", "f2", 2) },
			},
		},
	})
}

// failOne crashes broker id, lets the controller fail over, and commits
// value with acks=all on the new leader; key records whether every
// acknowledged record survived and the write was committed.
func failOne(e *Env, id int32, value, key string, offset int64) error {
	if err := e.Crash(id); err != nil {
		return err
	}
	if err := e.Step(failover); err != nil {
		return err
	}
	m := e.Meta(labTopic)
	alive := 3 - int(offset)
	p, err := e.ProduceAsync(labTopic, value)
	if err != nil {
		return err
	}
	if err := e.Settle(); err != nil {
		return err
	}
	off, perr := p.Wait()
	want := []string{"m1", "m2", "m3"}[:offset+1]
	ok := perr == nil && off == offset && wantValues(e, m.Leader, labTopic, want...)
	e.Vars[key] = ok
	e.sayLanes(labTopic)
	e.Say(T("Failures f = %d, live replicas %d; a majority quorum of 3 needs 2 live (%s). The ISR %v went on: %s at offset %d.",
		"故障数 f = %d，存活副本 %d；3 个副本的多数派 quorum 需要 2 个存活（%s）。ISR %v 继续工作：%s 在 offset %d。",
		"故障數 f = %d，存活副本 %d；3 個副本的多數派 quorum 需要 2 個存活（%s）。ISR %v 繼續工作：%s 在 offset %d。").F(offset, alive, quorumVerdict(alive), m.ISR, value, off))
	e.PointLog(m.Leader, labTopic)
	e.Check(T("After %d failures every acknowledged record is on the leader and %s is committed", "%d 次故障后，所有已确认记录都在 leader 上，%s 已提交", "%d 次故障後，所有已確認記錄都在 leader 上，%s 已提交").F(offset, value), ok, "leader %d %v, %v", m.Leader, e.Values(m.Leader, labTopic), perr)
	e.Check(T("A majority quorum of 3 would be %s", "3 个副本的多数派 quorum 会%s", "3 個副本的多數派 quorum 會%s").F(quorumVerdict(alive)), (alive >= 2) == (offset < 2), "%d live", alive)
	return nil
}

func quorumVerdict(alive int) Text {
	if alive >= 2 {
		return T("available", "可用", "可用")
	}
	return T("unavailable", "不可用", "不可用")
}

// initProducerID asks a broker for a producer id as an idempotent
// producer's first request does.
func initProducerID(e *Env) (int64, error) {
	b := e.c.Broker(e.Meta(labTopic).Leader)
	if b == nil {
		return 0, errors.New("no running leader")
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "lesson-producer")
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	raw, err := cl.Request(ctx, kmsg.NewPtrInitProducerIDRequest())
	if err != nil {
		return 0, err
	}
	resp := raw.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, err
	}
	return resp.ProducerID, nil
}

// idempotentBatch is a one-record RecordBatch from producer pid at epoch
// and base sequence seq: the producer fields sit at fixed positions of the
// v2 batch header (producer id at 43, epoch at 51, base sequence at 53) and
// the CRC-32C at 17 covers everything from the attributes at 21 on.
func idempotentBatch(pid int64, epoch int16, seq int32, value string, ts int64) []byte {
	b := storage.NewBatch([]storage.Record{{Value: []byte(value), Timestamp: ts}})
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

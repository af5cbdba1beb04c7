package lessons

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Lessons 6–10: leaders and followers, the HW, the ISR, acks,
// min.insync.replicas and unclean leader election. The step sequences are
// those of server/cluster's scenario tests.

// failover is one step long enough for the controller to fence a silent
// broker (session timeout 2s) and short of replica.lag.time.max.ms (3s).
const failover = 2100 * time.Millisecond

// lagPast is one step past replica.lag.time.max.ms (3000 ms).
const lagPast = 3001 * time.Millisecond

const labTopic = "lab"

func ints(v []int32) string { return fmt.Sprint(v) }

func (e *Env) sayLanes(topic string) {
	m := e.Meta(topic)
	e.Say(T("Controller: leader %d, leader epoch %d, ISR %v.", "controller：leader %d，leader epoch %d，ISR %v。", "controller：leader %d，leader epoch %d，ISR %v。").F(m.Leader, m.LeaderEpoch, m.ISR))
	for _, id := range e.c.BrokerIDs() {
		st, ok := e.Status(id, topic)
		if !ok {
			e.Say(T("Broker %d is down.", "broker %d 已停止。", "broker %d 已停止。").F(id))
			continue
		}
		e.Say(T("Broker %d (%s, %s): LEO %d, HW %d, records %s.", "broker %d（%s，%s）：LEO %d，HW %d，记录 %s。", "broker %d（%s，%s）：LEO %d，HW %d，記錄 %s。").F(
			id, topic, st.Role, st.LogEndOffset, st.HighWatermark, "["+strings.Join(e.Values(id, topic), " ")+"]"))
	}
}

func wantValues(e *Env, id int32, topic string, values ...string) bool {
	return slices.Equal(e.Values(id, topic), values)
}

func pending(e *Env, key string) *Pending { p, _ := e.Vars[key].(*Pending); return p }

func init() {
	register(&Lesson{
		ID: "06-hw", Brokers: 3,
		Title: T("Leader, followers, LEO and HW", "leader、follower、LEO 与 HW", "leader、follower、LEO 與 HW"),
		Summary: T("Producers write to the leader; followers pull from it with Fetch. Each replica has a LEO (the next offset it will write). The HW is the offset every ISR member has reached, and a consumer reads only below it.",
			"producer 只写 leader；follower 用 Fetch 从 leader 拉取。每个副本都有 LEO（下一个要写的 offset）。HW 是所有 ISR 成员都已达到的位置，consumer 只能读到 HW 之前的数据。",
			"producer 只寫 leader；follower 用 Fetch 從 leader 拉取。每個副本都有 LEO（下一個要寫的 offset）。HW 是所有 ISR 成員都已達到的位置，consumer 只能讀到 HW 之前的資料。"),
		Concepts: []string{"leader", "follower", "Fetch", "LEO", "HW"},
		Setup:    func(e *Env) error { return e.CreateTopic(labTopic, 1, 3, nil) },
		Steps: []Step{
			{
				Title: T("A write reaches the leader", "写入到达 leader", "寫入到達 leader"),
				Explain: T("A producer sends m1 with acks=1 to broker 1, the leader. The followers, brokers 2 and 3, have not fetched yet.",
					"producer 以 acks=1 把 m1 发给 leader broker 1。follower broker 2 和 3 还没有 fetch。",
					"producer 以 acks=1 把 m1 發給 leader broker 1。follower broker 2 和 3 還沒有 fetch。"),
				Run: func(e *Env) error {
					if _, err := e.Produce(labTopic, "m1", 1); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					e.PointLog(1, labTopic)
					st, _ := e.Status(1, labTopic)
					f, _ := e.Status(2, labTopic)
					e.Check(T("The leader's LEO is 1 and its HW still 0", "leader 的 LEO 为 1，HW 仍为 0", "leader 的 LEO 為 1，HW 仍為 0"), st.LogEndOffset == 1 && st.HighWatermark == 0, "LEO %d HW %d", st.LogEndOffset, st.HighWatermark)
					e.Check(T("Followers have nothing yet", "follower 还没有数据", "follower 還沒有資料"), f.LogEndOffset == 0, "broker 2 LEO %d", f.LogEndOffset)
					return nil
				},
			},
			{
				Title:   T("A consumer reads", "consumer 读取", "consumer 讀取"),
				Explain: T("A consumer fetches partition 0 from offset 0.", "consumer 从 offset 0 fetch partition 0。", "consumer 從 offset 0 fetch partition 0。"),
				Predict: &Prediction{
					Question: T("What does the consumer get?", "consumer 得到什么？", "consumer 得到什麼？"),
					Choices: []Choice{
						choice("m1", T("m1: it is in the leader's log", "m1：它在 leader 的 log 中", "m1：它在 leader 的 log 中"), func(e *Env) bool { return e.Vars["read"] == "m1" }),
						choice("nothing", T("Nothing: m1 is above the HW", "什么都没有：m1 在 HW 之上", "什麼都沒有：m1 在 HW 之上"), func(e *Env) bool { return e.Vars["read"] == "" }),
					},
				},
				Run: func(e *Env) error {
					vs, err := e.Consume(labTopic)
					if err != nil {
						return err
					}
					e.Vars["read"] = strings.Join(vs, " ")
					e.Say(T("The consumer read %d records; the HW is 0, so m1 at offset 0 is not visible yet.", "consumer 读到 %d 条记录；HW 为 0，所以 offset 0 的 m1 还不可见。", "consumer 讀到 %d 筆記錄；HW 為 0，所以 offset 0 的 m1 還不可見。").F(len(vs)))
					e.Point(Pointer{Kind: "hw", Broker: 1, Topic: labTopic, Offset: 0})
					e.Check(T("Nothing above the HW is served", "HW 之上的数据不会返回", "HW 之上的資料不會回傳"), len(vs) == 0, "%v", vs)
					return nil
				},
			},
			{
				Title:   T("One fetch round", "一轮 fetch", "一輪 fetch"),
				Explain: T("Brokers 2 and 3 each send one Fetch from offset 0 and append m1.", "broker 2 和 3 各从 offset 0 发送一次 Fetch，并追加 m1。", "broker 2 和 3 各從 offset 0 發送一次 Fetch，並追加 m1。"),
				Predict: &Prediction{
					Question: T("What is the leader's HW after this round?", "这一轮之后 leader 的 HW 是多少？", "這一輪之後 leader 的 HW 是多少？"),
					Choices: []Choice{
						choice("1", T("1: every ISR member has m1", "1：所有 ISR 成员都有 m1", "1：所有 ISR 成員都有 m1"), func(e *Env) bool { st, _ := e.Status(1, labTopic); return st.HighWatermark == 1 }),
						choice("0", T("0: the leader only learns a follower has m1 when it asks for offset 1", "0：leader 只有在 follower 请求 offset 1 时才知道它有 m1", "0：leader 只有在 follower 請求 offset 1 時才知道它有 m1"), func(e *Env) bool { st, _ := e.Status(1, labTopic); return st.HighWatermark == 0 }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Fetch(2, 3); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					e.PointLog(2, labTopic)
					f, _ := e.Status(3, labTopic)
					e.Check(T("Both followers reached LEO 1", "两个 follower 的 LEO 都到了 1", "兩個 follower 的 LEO 都到了 1"), f.LogEndOffset == 1 && wantValues(e, 2, labTopic, "m1"), "broker 3 LEO %d", f.LogEndOffset)
					return nil
				},
			},
			{
				Title:   T("The next round moves the HW", "下一轮推进 HW", "下一輪推進 HW"),
				Explain: T("The followers fetch again, now from offset 1. That tells the leader their LEO.", "follower 再次 fetch，这次从 offset 1 开始，leader 由此得知它们的 LEO。", "follower 再次 fetch，這次從 offset 1 開始，leader 由此得知它們的 LEO。"),
				Run: func(e *Env) error {
					if err := e.Fetch(2, 3); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					e.Say(T("A follower's HW is the smaller of its LEO and the HW the leader sent in its last Fetch answer, so followers learn the HW one round late.",
						"follower 的 HW 取其 LEO 与 leader 上次 Fetch 响应中 HW 的较小值，所以 follower 晚一轮才知道 HW。",
						"follower 的 HW 取其 LEO 與 leader 上次 Fetch 回應中 HW 的較小值，所以 follower 晚一輪才知道 HW。"))
					vs, err := e.Consume(labTopic)
					if err != nil {
						return err
					}
					st, _ := e.Status(1, labTopic)
					e.Point(Pointer{Kind: "hw", Broker: 1, Topic: labTopic, Offset: st.HighWatermark})
					e.Check(T("The leader's HW is 1 and the consumer reads m1", "leader 的 HW 为 1，consumer 读到 m1", "leader 的 HW 為 1，consumer 讀到 m1"), st.HighWatermark == 1 && slices.Equal(vs, []string{"m1"}), "HW %d, read %v", st.HighWatermark, vs)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "07-isr", Brokers: 3,
		Title: T("The ISR: leaving and rejoining", "ISR：移出与重新加入", "ISR：移出與重新加入"),
		Summary: T("The ISR is the set of replicas that keep up. A follower that has not caught up for replica.lag.time.max.ms leaves it (into the OSR); once it catches up it rejoins. AR = ISR + OSR.",
			"ISR 是跟得上的副本集合。follower 若在 replica.lag.time.max.ms 内没有追上，就会被移出（进入 OSR）；追上后重新加入。AR = ISR + OSR。",
			"ISR 是跟得上的副本集合。follower 若在 replica.lag.time.max.ms 內沒有追上，就會被移出（進入 OSR）；追上後重新加入。AR = ISR + OSR。"),
		Concepts: []string{"ISR", "OSR", "AR", "replica.lag.time.max.ms"},
		Setup:    func(e *Env) error { return e.CreateTopic(labTopic, 1, 3, nil) },
		Steps: []Step{
			{
				Title: T("A silent follower", "沉默的 follower", "沉默的 follower"),
				Explain: T("m1 is sent with acks=all. Broker 2 fetches every second; broker 3 does not fetch at all. Three seconds pass.",
					"以 acks=all 发送 m1。broker 2 每秒 fetch 一次；broker 3 完全不 fetch。过去三秒。",
					"以 acks=all 發送 m1。broker 2 每秒 fetch 一次；broker 3 完全不 fetch。過去三秒。"),
				Run: func(e *Env) error {
					p, err := e.ProduceAsync(labTopic, "m1")
					if err != nil {
						return err
					}
					e.Vars["p"] = p
					for _, f := range [][]int32{{2, 2}, {2}, {}} {
						if err := e.Step(time.Second); err != nil {
							return err
						}
						if err := e.Fetch(f...); err != nil {
							return err
						}
					}
					e.sayLanes(labTopic)
					m := e.Meta(labTopic)
					e.Check(T("After 3000 ms broker 3 is still in the ISR", "3000 ms 后 broker 3 仍在 ISR 中", "3000 ms 後 broker 3 仍在 ISR 中"), slices.Equal(m.ISR, []int32{1, 2, 3}), "ISR %v", m.ISR)
					e.Check(T("The acks=all produce of m1 is still waiting", "m1 的 acks=all 请求仍在等待", "m1 的 acks=all 請求仍在等待"), !p.Done(), "done %v", p.Done())
					return nil
				},
			},
			{
				Title:   T("One more millisecond", "再过一毫秒", "再過一毫秒"),
				Explain: T("replica.lag.time.max.ms is 3000. The clock moves 1 ms further.", "replica.lag.time.max.ms 为 3000。时钟再前进 1 ms。", "replica.lag.time.max.ms 為 3000。時鐘再前進 1 ms。"),
				Predict: &Prediction{
					Question: T("What happens?", "会发生什么？", "會發生什麼？"),
					Choices: []Choice{
						choice("shrink", T("Broker 3 leaves the ISR and the produce of m1 is acknowledged", "broker 3 被移出 ISR，m1 的写入得到确认", "broker 3 被移出 ISR，m1 的寫入得到確認"), func(e *Env) bool {
							return slices.Equal(e.Meta(labTopic).ISR, []int32{1, 2}) && e.Vars["m1"] == nil
						}),
						choice("wait", T("Nothing: the produce waits until broker 3 fetches", "什么也没发生：写入一直等到 broker 3 fetch", "什麼也沒發生：寫入一直等到 broker 3 fetch"), func(e *Env) bool {
							return slices.Contains(e.Meta(labTopic).ISR, 3)
						}),
					},
				},
				Run: func(e *Env) error {
					if err := e.Step(time.Millisecond); err != nil {
						return err
					}
					p := pending(e, "p")
					off, err := p.Wait()
					e.Vars["m1"] = err
					m := e.Meta(labTopic)
					e.sayLanes(labTopic)
					e.Say(T("ISR %v, OSR [3], AR %v: m1 was acknowledged at offset %d once the ISR no longer waited for broker 3.", "ISR %v，OSR [3]，AR %v：ISR 不再等待 broker 3 后，m1 在 offset %d 得到确认。", "ISR %v，OSR [3]，AR %v：ISR 不再等待 broker 3 後，m1 在 offset %d 得到確認。").F(m.ISR, m.Replicas, off))
					e.Point(Pointer{Kind: "replica", Broker: 3, Topic: labTopic, Note: "OSR"})
					e.Check(T("Broker 3 left the ISR", "broker 3 已离开 ISR", "broker 3 已離開 ISR"), slices.Equal(m.ISR, []int32{1, 2}), "ISR %v", m.ISR)
					e.Check(T("m1 was acknowledged at offset 0", "m1 在 offset 0 得到确认", "m1 在 offset 0 得到確認"), err == nil && off == 0, "offset %d, %v", off, err)
					return nil
				},
			},
			{
				Title:   T("Catching up", "追上进度", "追上進度"),
				Explain: T("Broker 3 fetches again, twice.", "broker 3 再次 fetch，两次。", "broker 3 再次 fetch，兩次。"),
				Predict: &Prediction{
					Question: T("Does broker 3 get back into the ISR?", "broker 3 会回到 ISR 吗？", "broker 3 會回到 ISR 嗎？"),
					Choices: []Choice{
						choice("yes", T("Yes, once its LEO reaches the leader's", "会，一旦它的 LEO 追上 leader", "會，一旦它的 LEO 追上 leader"), func(e *Env) bool { return slices.Contains(e.Meta(labTopic).ISR, 3) }),
						choice("no", T("No, only an operator can add it back", "不会，只有运维人员能把它加回", "不會，只有維運人員能把它加回"), func(e *Env) bool { return !slices.Contains(e.Meta(labTopic).ISR, 3) }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Fetch(3, 3); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					m := e.Meta(labTopic)
					e.Check(T("Broker 3 rejoined the ISR", "broker 3 重新加入 ISR", "broker 3 重新加入 ISR"), slices.Equal(m.ISR, []int32{1, 2, 3}), "ISR %v", m.ISR)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "08-acks", Brokers: 3,
		Title: T("acks=0, 1 and all", "acks=0、1 与 all", "acks=0、1 與 all"),
		Summary: T("acks=0 does not wait at all, acks=1 waits for the leader's append, acks=all for every ISR member. When the leader dies, only acks=all writes are sure to be on the new leader.",
			"acks=0 完全不等待，acks=1 等 leader 写入，acks=all 等所有 ISR 成员。leader 宕机时，只有 acks=all 的写入一定在新 leader 上。",
			"acks=0 完全不等待，acks=1 等 leader 寫入，acks=all 等所有 ISR 成員。leader 當機時，只有 acks=all 的寫入一定在新 leader 上。"),
		Concepts: []string{"acks", "at most once", "leader failover"},
		Setup: func(e *Env) error {
			return e.CreateTopic(labTopic, 1, 3, map[string]string{"min.insync.replicas": "2"})
		},
		Steps: []Step{
			{
				Title:   T("acks=all", "acks=all", "acks=all"),
				Explain: T("all-1 is sent with acks=all; the followers fetch until the leader answers.", "以 acks=all 发送 all-1；follower 持续 fetch，直到 leader 应答。", "以 acks=all 發送 all-1；follower 持續 fetch，直到 leader 回應。"),
				Run: func(e *Env) error {
					off, err := e.ProduceSettled(labTopic, "all-1")
					e.Say(T("all-1 acknowledged at offset %d after every ISR member had it.", "所有 ISR 成员都拥有 all-1 后，它在 offset %d 得到确认。", "所有 ISR 成員都擁有 all-1 後，它在 offset %d 得到確認。").F(off))
					e.Check(T("all-1 acknowledged", "all-1 已确认", "all-1 已確認"), err == nil && off == 0, "offset %d, %v", off, err)
					return nil
				},
			},
			{
				Title:   T("acks=1 and acks=0", "acks=1 与 acks=0", "acks=1 與 acks=0"),
				Explain: T("one-1 is sent with acks=1, then zero-1 with acks=0. The followers do not fetch in between.", "以 acks=1 发送 one-1，再以 acks=0 发送 zero-1。期间 follower 没有 fetch。", "以 acks=1 發送 one-1，再以 acks=0 發送 zero-1。期間 follower 沒有 fetch。"),
				Run: func(e *Env) error {
					off, err := e.Produce(labTopic, "one-1", 1)
					if err != nil {
						return err
					}
					if _, err := e.Produce(labTopic, "zero-1", 0); err != nil {
						return err
					}
					e.Say(T("one-1 was acknowledged at offset %d as soon as the leader appended it; zero-1 got no answer at all.", "leader 一写入 one-1 就在 offset %d 确认了；zero-1 则没有任何应答。", "leader 一寫入 one-1 就在 offset %d 確認了；zero-1 則沒有任何回應。").F(off))
					e.sayLanes(labTopic)
					e.PointLog(1, labTopic)
					e.Check(T("Only the leader has one-1 and zero-1", "只有 leader 有 one-1 和 zero-1", "只有 leader 有 one-1 和 zero-1"), wantValues(e, 1, labTopic, "all-1", "one-1", "zero-1") && wantValues(e, 2, labTopic, "all-1"), "%v", e.Values(1, labTopic))
					return nil
				},
			},
			{
				Title:   T("The leader dies", "leader 宕机", "leader 當機"),
				Explain: T("Broker 1 crashes before its followers fetch again; the controller elects a new leader from the ISR.", "broker 1 在 follower 再次 fetch 之前崩溃；controller 从 ISR 中选出新 leader。", "broker 1 在 follower 再次 fetch 之前崩潰；controller 從 ISR 中選出新 leader。"),
				Predict: &Prediction{
					Question: T("Which records does the new leader have?", "新 leader 上有哪些记录？", "新 leader 上有哪些記錄？"),
					Choices: []Choice{
						choice("all", T("all-1, one-1 and zero-1", "all-1、one-1 和 zero-1", "all-1、one-1 和 zero-1"), func(e *Env) bool {
							return wantValues(e, e.Meta(labTopic).Leader, labTopic, "all-1", "one-1", "zero-1")
						}),
						choice("acked", T("all-1 and one-1: both were acknowledged", "all-1 和 one-1：两者都得到了确认", "all-1 和 one-1：兩者都得到了確認"), func(e *Env) bool {
							return wantValues(e, e.Meta(labTopic).Leader, labTopic, "all-1", "one-1")
						}),
						choice("all-only", T("Only all-1", "只有 all-1", "只有 all-1"), func(e *Env) bool {
							return wantValues(e, e.Meta(labTopic).Leader, labTopic, "all-1")
						}),
					},
				},
				Run: func(e *Env) error {
					if err := e.Crash(1); err != nil {
						return err
					}
					if err := e.Step(failover); err != nil {
						return err
					}
					m := e.Meta(labTopic)
					e.sayLanes(labTopic)
					e.PointLog(m.Leader, labTopic)
					e.Say(T("one-1 was acknowledged with acks=1 and is not on the new leader: an acknowledged write is lost. zero-1 was never confirmed (at most once).",
						"one-1 以 acks=1 得到确认，却不在新 leader 上：已确认的写入丢失了。zero-1 从未被确认（至多一次）。",
						"one-1 以 acks=1 得到確認，卻不在新 leader 上：已確認的寫入遺失了。zero-1 從未被確認（至多一次）。"))
					e.Check(T("The acks=all record survived", "acks=all 的记录保留了下来", "acks=all 的記錄保留了下來"), m.Leader > 1 && e.Has(m.Leader, labTopic, 0, "all-1"), "leader %d: %v", m.Leader, e.Values(m.Leader, labTopic))
					e.Check(T("The acks=1 record is not on the new leader", "acks=1 的记录不在新 leader 上", "acks=1 的記錄不在新 leader 上"), !slices.Contains(e.Values(m.Leader, labTopic), "one-1"), "%v", e.Values(m.Leader, labTopic))
					return nil
				},
			},
			{
				Title:   T("The old leader returns", "旧 leader 回来", "舊 leader 回來"),
				Explain: T("Broker 1 restarts as a follower and fetches from the new leader.", "broker 1 以 follower 身份重启，并从新 leader fetch。", "broker 1 以 follower 身分重啟，並從新 leader fetch。"),
				Run: func(e *Env) error {
					if err := e.Restart(1); err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					for _, r := range e.Truncated(1, labTopic) {
						e.Point(Pointer{Kind: "truncated", Broker: 1, Topic: labTopic, Offset: r.Offset, Note: fmt.Sprintf("leader epoch %d", r.LeaderEpoch)})
					}
					e.Check(T("Broker 1 truncated one-1 and zero-1", "broker 1 截断了 one-1 和 zero-1", "broker 1 截斷了 one-1 和 zero-1"), e.TruncatedValue(1, labTopic, "one-1") && e.TruncatedValue(1, labTopic, "zero-1") && wantValues(e, 1, labTopic, "all-1"), "%v", e.Values(1, labTopic))
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "09-min-isr", Brokers: 2, Fencing: zookeeperRule(),
		Title: T("min.insync.replicas", "min.insync.replicas", "min.insync.replicas"),
		Summary: T("acks=all waits for the ISR, and the ISR can shrink to the leader alone: then acks=all is no better than acks=1. min.insync.replicas=2 refuses such writes instead.",
			"acks=all 等待的是 ISR，而 ISR 可能缩小到只剩 leader：此时 acks=all 并不比 acks=1 更安全。min.insync.replicas=2 会直接拒绝这样的写入。",
			"acks=all 等待的是 ISR，而 ISR 可能縮小到只剩 leader：此時 acks=all 並不比 acks=1 更安全。min.insync.replicas=2 會直接拒絕這樣的寫入。"),
		Concepts: []string{"acks", "ISR", "min.insync.replicas", "NOT_ENOUGH_REPLICAS"},
		Setup: func(e *Env) error {
			return e.CreateTopic(labTopic, 1, 2, map[string]string{"min.insync.replicas": "1"})
		},
		Steps: []Step{
			{
				Title:   T("Both replicas have m1", "两个副本都有 m1", "兩個副本都有 m1"),
				Explain: T("m1 is sent with acks=all, replicated to broker 2, and fsynced on broker 1.", "以 acks=all 发送 m1，复制到 broker 2，并在 broker 1 上 fsync。", "以 acks=all 發送 m1，複製到 broker 2，並在 broker 1 上 fsync。"),
				Run: func(e *Env) error {
					off, err := e.ProduceSettled(labTopic, "m1")
					if err := e.Flush(1); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					e.Check(T("m1 acknowledged", "m1 已确认", "m1 已確認"), err == nil && off == 0, "offset %d, %v", off, err)
					return nil
				},
			},
			{
				Title:   T("The ISR shrinks to the leader", "ISR 缩小到只剩 leader", "ISR 縮小到只剩 leader"),
				Explain: T("Broker 2 stops fetching. m2 is sent with acks=all and replica.lag.time.max.ms passes.", "broker 2 停止 fetch。以 acks=all 发送 m2，然后 replica.lag.time.max.ms 过去。", "broker 2 停止 fetch。以 acks=all 發送 m2，然後 replica.lag.time.max.ms 過去。"),
				Predict: &Prediction{
					Question: T("What happens to m2?", "m2 会怎样？", "m2 會怎樣？"),
					Choices: []Choice{
						choice("acked", T("It is acknowledged: the ISR is broker 1 alone, and broker 1 has it", "得到确认：ISR 只剩 broker 1，而 broker 1 有它", "得到確認：ISR 只剩 broker 1，而 broker 1 有它"), func(e *Env) bool { return e.Vars["m2"] == nil }),
						choice("refused", T("It fails: broker 2 never got it", "失败：broker 2 从未收到它", "失敗：broker 2 從未收到它"), func(e *Env) bool { return e.Vars["m2"] != nil }),
					},
				},
				Run: func(e *Env) error {
					p, err := e.ProduceAsync(labTopic, "m2")
					if err != nil {
						return err
					}
					if err := e.Step(lagPast); err != nil {
						return err
					}
					off, err := p.Wait()
					e.Vars["m2"] = err
					e.sayLanes(labTopic)
					e.Check(T("The ISR is broker 1 alone and m2 was acknowledged", "ISR 只剩 broker 1，m2 得到确认", "ISR 只剩 broker 1，m2 得到確認"), slices.Equal(e.Meta(labTopic).ISR, []int32{1}) && err == nil && off == 1, "ISR %v, offset %d, %v", e.Meta(labTopic).ISR, off, err)
					return nil
				},
			},
			{
				Title:   T("The leader loses power", "leader 断电", "leader 斷電"),
				Explain: T("Broker 1 loses power before m2 reached its disk, and comes back. It is the only ISR member, so it leads again.", "broker 1 在 m2 落盘之前断电，然后恢复。它是唯一的 ISR 成员，所以再次成为 leader。", "broker 1 在 m2 落盤之前斷電，然後恢復。它是唯一的 ISR 成員，所以再次成為 leader。"),
				Predict: &Prediction{
					Question: T("Is the acknowledged m2 still in the partition?", "已确认的 m2 还在 partition 中吗？", "已確認的 m2 還在 partition 中嗎？"),
					Choices: []Choice{
						choice("kept", T("Yes: acks=all", "在：用的是 acks=all", "在：用的是 acks=all"), func(e *Env) bool { return e.Has(e.Meta(labTopic).Leader, labTopic, 1, "m2") }),
						choice("lost", T("No: no other replica had it", "不在：没有其他副本有它", "不在：沒有其他副本有它"), func(e *Env) bool { return !e.Has(e.Meta(labTopic).Leader, labTopic, 1, "m2") }),
					},
				},
				Run: func(e *Env) error {
					if err := e.PowerLoss(1); err != nil {
						return err
					}
					if err := e.Step(failover); err != nil {
						return err
					}
					if err := e.Restart(1); err != nil {
						return err
					}
					e.sayLanes(labTopic)
					e.PointLog(1, labTopic)
					e.Check(T("The acknowledged m2 is gone; m1 is kept", "已确认的 m2 丢失，m1 保留", "已確認的 m2 遺失，m1 保留"), e.Meta(labTopic).Leader == 1 && wantValues(e, 1, labTopic, "m1"), "%v", e.Values(1, labTopic))
					return nil
				},
			},
			{
				Title: T("min.insync.replicas=2", "min.insync.replicas=2", "min.insync.replicas=2"),
				Explain: T("Broker 2 catches up and rejoins; we set min.insync.replicas=2. Then broker 2 stops fetching again, m3 is written with acks=1 and the ISR shrinks to broker 1. Now m4 is sent with acks=all.",
					"broker 2 追上并重新加入；把 min.insync.replicas 设为 2。随后 broker 2 再次停止 fetch，以 acks=1 写入 m3，ISR 缩小到 broker 1。现在以 acks=all 发送 m4。",
					"broker 2 追上並重新加入；把 min.insync.replicas 設為 2。隨後 broker 2 再次停止 fetch，以 acks=1 寫入 m3，ISR 縮小到 broker 1。現在以 acks=all 發送 m4。"),
				Predict: &Prediction{
					Question: T("What does the producer of m4 get?", "m4 的 producer 得到什么？", "m4 的 producer 得到什麼？"),
					Choices: []Choice{
						choice("refused", T("NOT_ENOUGH_REPLICAS: the write is refused", "NOT_ENOUGH_REPLICAS：写入被拒绝", "NOT_ENOUGH_REPLICAS：寫入被拒絕"), func(e *Env) bool { err, _ := e.Vars["m4"].(error); return errors.Is(err, kerr.NotEnoughReplicas) }),
						choice("acked", T("An acknowledgement, as before", "和之前一样得到确认", "和之前一樣得到確認"), func(e *Env) bool { return e.Vars["m4"] == nil }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Settle(); err != nil {
						return err
					}
					if err := e.Alter(labTopic, "min.insync.replicas", "2"); err != nil {
						return err
					}
					if _, err := e.Produce(labTopic, "m3", 1); err != nil {
						return err
					}
					if err := e.Step(lagPast); err != nil {
						return err
					}
					_, err := e.Produce(labTopic, "m4", -1)
					e.Vars["m4"] = err
					e.sayLanes(labTopic)
					e.Say(T("m4: %v. Nothing was appended, so nothing acknowledged can be lost; the partition is unavailable for acks=all writes until broker 2 is back in the ISR.", "m4：%v。什么都没有追加，所以不会丢失任何已确认的数据；在 broker 2 回到 ISR 之前，该 partition 不接受 acks=all 写入。", "m4：%v。什麼都沒有追加，所以不會遺失任何已確認的資料；在 broker 2 回到 ISR 之前，該 partition 不接受 acks=all 寫入。").F(err))
					e.Point(Pointer{Kind: "error", Broker: 1, Topic: labTopic, Note: fmt.Sprint(err)})
					e.Check(T("m4 refused with NOT_ENOUGH_REPLICAS and not appended", "m4 被拒绝（NOT_ENOUGH_REPLICAS）且未追加", "m4 被拒絕（NOT_ENOUGH_REPLICAS）且未追加"), errors.Is(err, kerr.NotEnoughReplicas) && !slices.Contains(e.Values(1, labTopic), "m4"), "%v", err)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "10-unclean", Brokers: 2, Fencing: zookeeperRule(),
		Title: T("Unclean leader election: CP or AP", "unclean leader 选举：CP 还是 AP", "unclean leader 選舉：CP 還是 AP"),
		Summary: T("When every ISR member is down, Kafka either waits for one to return (consistent, unavailable) or lets an out-of-sync replica lead (available, losing acknowledged writes). Two topics with the two settings go through the same faults side by side.",
			"当所有 ISR 成员都宕机时，Kafka 要么等待其中一个回来（一致但不可用），要么让不同步的副本当 leader（可用但丢失已确认的写入）。两个分别采用两种设置的 topic 并排经历同样的故障。",
			"當所有 ISR 成員都當機時，Kafka 要麼等待其中一個回來（一致但不可用），要麼讓不同步的副本當 leader（可用但遺失已確認的寫入）。兩個分別採用兩種設定的 topic 並排經歷同樣的故障。"),
		Concepts: []string{"unclean.leader.election.enable", "min.insync.replicas", "CP", "AP"},
		Setup: func(e *Env) error {
			if err := e.CreateTopic("cp", 1, 2, map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}); err != nil {
				return err
			}
			return e.CreateTopic("ap", 1, 2, map[string]string{"min.insync.replicas": "1", "unclean.leader.election.enable": "true"})
		},
		Steps: []Step{
			{
				Title: T("m1 on both topics", "两个 topic 都写入 m1", "兩個 topic 都寫入 m1"),
				Explain: T("Topic cp: min.insync.replicas=2, unclean election off. Topic ap: min.insync.replicas=1, unclean election on. m1 goes to both with acks=all.",
					"topic cp：min.insync.replicas=2，关闭 unclean 选举。topic ap：min.insync.replicas=1，开启 unclean 选举。以 acks=all 向两者写入 m1。",
					"topic cp：min.insync.replicas=2，關閉 unclean 選舉。topic ap：min.insync.replicas=1，開啟 unclean 選舉。以 acks=all 向兩者寫入 m1。"),
				Run: func(e *Env) error {
					for _, t := range []string{"cp", "ap"} {
						p, err := e.ProduceAsync(t, "m1")
						if err != nil {
							return err
						}
						e.Vars[t] = p
					}
					if err := e.Settle(); err != nil {
						return err
					}
					for _, t := range []string{"cp", "ap"} {
						off, err := pending(e, t).Wait()
						e.Check(T("m1 acknowledged on %s", "%s 上的 m1 已确认", "%s 上的 m1 已確認").F(t), err == nil && off == 0, "offset %d, %v", off, err)
					}
					return nil
				},
			},
			{
				Title:   T("Broker 2 falls behind", "broker 2 落后", "broker 2 落後"),
				Explain: T("Broker 2 stops fetching; m2 is sent to both topics with acks=all and replica.lag.time.max.ms passes.", "broker 2 停止 fetch；以 acks=all 向两个 topic 发送 m2，然后 replica.lag.time.max.ms 过去。", "broker 2 停止 fetch；以 acks=all 向兩個 topic 發送 m2，然後 replica.lag.time.max.ms 過去。"),
				Predict: &Prediction{
					Question: T("Which topic acknowledges m2?", "哪个 topic 确认了 m2？", "哪個 topic 確認了 m2？"),
					Choices: []Choice{
						choice("ap", T("Only ap", "只有 ap", "只有 ap"), func(e *Env) bool { return e.Vars["ap:m2"] == nil && e.Vars["cp:m2"] != nil }),
						choice("both", T("Both", "两者都确认", "兩者都確認"), func(e *Env) bool { return e.Vars["ap:m2"] == nil && e.Vars["cp:m2"] == nil }),
						choice("neither", T("Neither", "都不确认", "都不確認"), func(e *Env) bool { return e.Vars["ap:m2"] != nil && e.Vars["cp:m2"] != nil }),
					},
				},
				Run: func(e *Env) error {
					for _, t := range []string{"cp", "ap"} {
						p, err := e.ProduceAsync(t, "m2")
						if err != nil {
							return err
						}
						e.Vars[t] = p
					}
					if err := e.Step(lagPast); err != nil {
						return err
					}
					for _, t := range []string{"cp", "ap"} {
						_, err := pending(e, t).Wait()
						e.Vars[t+":m2"] = err
						e.Say(T("%s: ISR %v, m2: %v", "%s：ISR %v，m2：%v", "%s：ISR %v，m2：%v").F(t, e.Meta(t).ISR, errText(err)))
					}
					err, _ := e.Vars["cp:m2"].(error)
					e.Check(T("cp refuses m2 with NOT_ENOUGH_REPLICAS_AFTER_APPEND; ap acknowledges it", "cp 以 NOT_ENOUGH_REPLICAS_AFTER_APPEND 拒绝 m2；ap 确认了它", "cp 以 NOT_ENOUGH_REPLICAS_AFTER_APPEND 拒絕 m2；ap 確認了它"),
						errors.Is(err, kerr.NotEnoughReplicasAfterAppend) && e.Vars["ap:m2"] == nil, "cp %v, ap %v", err, e.Vars["ap:m2"])
					return nil
				},
			},
			{
				Title:   T("The leader dies", "leader 宕机", "leader 當機"),
				Explain: T("Broker 1, the only ISR member of both topics, crashes. Broker 2 is alive but out of sync.", "两个 topic 唯一的 ISR 成员 broker 1 崩溃。broker 2 还活着，但不同步。", "兩個 topic 唯一的 ISR 成員 broker 1 崩潰。broker 2 還活著，但不同步。"),
				Predict: &Prediction{
					Question: T("Which topic still has a leader?", "哪个 topic 还有 leader？", "哪個 topic 還有 leader？"),
					Choices: []Choice{
						choice("ap", T("Only ap: broker 2 leads it uncleanly", "只有 ap：broker 2 以 unclean 方式成为 leader", "只有 ap：broker 2 以 unclean 方式成為 leader"), func(e *Env) bool { return e.Meta("ap").Leader == 2 && e.Meta("cp").Leader < 0 }),
						choice("both", T("Both: broker 2 is alive", "两个都有：broker 2 还活着", "兩個都有：broker 2 還活著"), func(e *Env) bool { return e.Meta("ap").Leader == 2 && e.Meta("cp").Leader == 2 }),
						choice("neither", T("Neither", "都没有", "都沒有"), func(e *Env) bool { return e.Meta("ap").Leader < 0 && e.Meta("cp").Leader < 0 }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Crash(1); err != nil {
						return err
					}
					if err := e.Step(failover); err != nil {
						return err
					}
					_, cpErr := e.Consume("cp")
					_, apErr := e.Produce("ap", "m3", 1)
					e.Say(T("cp is offline (%v): consistent but unavailable. ap took m3 on broker 2 (%v): available, but broker 2 never had m2.", "cp 离线（%v）：一致但不可用。ap 在 broker 2 上接受了 m3（%v）：可用，但 broker 2 从来没有 m2。", "cp 離線（%v）：一致但不可用。ap 在 broker 2 上接受了 m3（%v）：可用，但 broker 2 從來沒有 m2。").F(errText(cpErr), errText(apErr)))
					e.PointLog(2, "ap")
					e.Check(T("cp has no leader; ap is led by broker 2 and takes writes", "cp 没有 leader；ap 由 broker 2 领导并接受写入", "cp 沒有 leader；ap 由 broker 2 領導並接受寫入"),
						errors.Is(cpErr, kerr.LeaderNotAvailable) && apErr == nil && e.Meta("ap").Leader == 2, "cp %v, ap %v", cpErr, apErr)
					return nil
				},
			},
			{
				Title:   T("Broker 1 returns", "broker 1 回来", "broker 1 回來"),
				Explain: T("Broker 1 restarts. On cp it is the last ISR member and leads again; on ap it follows broker 2.", "broker 1 重启。在 cp 上它是最后的 ISR 成员，再次成为 leader；在 ap 上它跟随 broker 2。", "broker 1 重啟。在 cp 上它是最後的 ISR 成員，再次成為 leader；在 ap 上它跟隨 broker 2。"),
				Predict: &Prediction{
					Question: T("What happened to the acknowledged records?", "已确认的记录怎样了？", "已確認的記錄怎樣了？"),
					Choices: []Choice{
						choice("ap-lost", T("ap lost the acknowledged m2; cp lost nothing it acknowledged", "ap 丢失了已确认的 m2；cp 没有丢失任何已确认的记录", "ap 遺失了已確認的 m2；cp 沒有遺失任何已確認的記錄"), func(e *Env) bool {
							return !slices.Contains(e.Values(1, "ap"), "m2") && e.Has(1, "cp", 0, "m1")
						}),
						choice("kept", T("Both kept every acknowledged record", "两者都保留了所有已确认的记录", "兩者都保留了所有已確認的記錄"), func(e *Env) bool { return slices.Contains(e.Values(1, "ap"), "m2") }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Restart(1); err != nil {
						return err
					}
					if err := e.Settle(); err != nil {
						return err
					}
					e.sayLanes("cp")
					e.sayLanes("ap")
					for _, r := range e.Truncated(1, "ap") {
						e.Point(Pointer{Kind: "truncated", Broker: 1, Topic: "ap", Offset: r.Offset, Note: fmt.Sprintf("leader epoch %d", r.LeaderEpoch)})
					}
					e.Check(T("ap: broker 1 truncated the acknowledged m2", "ap：broker 1 截断了已确认的 m2", "ap：broker 1 截斷了已確認的 m2"), e.TruncatedValue(1, "ap", "m2") && wantValues(e, 1, "ap", "m1", "m3"), "%v", e.Values(1, "ap"))
					e.Check(T("cp: every acknowledged record is still there", "cp：所有已确认的记录都还在", "cp：所有已確認的記錄都還在"), e.Meta("cp").Leader == 1 && e.Has(1, "cp", 0, "m1"), "%v", e.Values(1, "cp"))
					return nil
				},
			},
		},
	})
}

func errText(err error) string {
	if err == nil {
		return "OK"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	return err.Error()
}

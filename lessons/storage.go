package lessons

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"tidemark/server/cluster"
	"tidemark/storage"
)

// Lessons 1–5: topics, partitions and what a partition is on disk.

func choice(id string, t Text, holds func(e *Env) bool) Choice {
	return Choice{ID: id, Text: t, Holds: holds}
}

// fill makes a value of about n bytes so that segments roll quickly.
func fill(name string, n int) string {
	return name + ":" + strings.Repeat(".", max(0, n-len(name)-1))
}

func produceN(e *Env, topic, prefix string, from, n, size int) error {
	for i := from; i < from+n; i++ {
		if _, err := e.Produce(topic, fill(fmt.Sprintf("%s%02d", prefix, i), size), 1); err != nil {
			return err
		}
	}
	return nil
}

func segments(e *Env, id int32, topic string) []storage.SegmentInfo {
	l := e.Log(id, topic)
	if l == nil {
		return nil
	}
	s, _ := l.Segments()
	return s
}

var twentyDigits = regexp.MustCompile(`^\d{20}\.(log|index|timeindex)$`)

const ordersTopic = "orders"

// sendOrder is the order lesson 1 sends its keyed records in.
var sendOrder = [][2]string{{"alice", "a1"}, {"carol", "c1"}, {"dave", "d1"}, {"alice", "a2"}, {"carol", "c2"}, {"alice", "a3"}, {"dave", "d2"}}

func sendKeyed(e *Env, from, to int) error {
	for _, kv := range sendOrder[from:to] {
		res, err := e.ProduceKey(ordersTopic, kv[0], kv[1])
		if err != nil {
			return err
		}
		e.Vars["p:"+kv[1]] = res.Partition
		e.Say(T("Key %s → partition %d (leader broker %d), offset %d: %s.",
			"key %s → partition %d（leader 为 broker %d），offset %d：%s。",
			"key %s → partition %d（leader 為 broker %d），offset %d：%s。").F(kv[0], res.Partition, res.Leader, res.BaseOffset, kv[1]))
		e.Point(Pointer{Kind: "record", Broker: res.Leader, Topic: ordersTopic, Partition: res.Partition, Offset: res.BaseOffset, Value: kv[1], Note: "key " + kv[0]})
		e.Check(T("%s went where murmur2(key) mod 3 says", "%s 落在 murmur2(key) mod 3 指定的 partition", "%s 落在 murmur2(key) mod 3 指定的 partition").F(kv[1]),
			res.Partition == cluster.PartitionForKey([]byte(kv[0]), 3), "partition %d", res.Partition)
	}
	return nil
}

func init() {
	register(&Lesson{
		ID: "01-partitions", Brokers: 3,
		Title: T("Topics, partitions and ordering", "Topic、partition 与顺序", "Topic、partition 與順序"),
		Summary: T("A topic is split into partitions spread over the brokers. The key of a record picks its partition, and order holds only inside one partition.",
			"一个 topic 被切成多个 partition，分布在不同 broker 上。记录的 key 决定它进入哪个 partition，顺序只在单个 partition 内成立。",
			"一個 topic 被切成多個 partition，分佈在不同 broker 上。記錄的 key 決定它進入哪個 partition，順序只在單個 partition 內成立。"),
		Concepts: []string{"topic", "partition", "offset", "key", "murmur2"},
		Setup: func(e *Env) error {
			return e.CreateTopic(ordersTopic, 3, 1, nil)
		},
		Steps: []Step{
			{
				Title: T("Keys pick partitions", "key 决定 partition", "key 決定 partition"),
				Explain: T("Topic orders has 3 partitions, one on each broker. We send three records with the keys alice, carol and dave. The producer hashes the key (murmur2) and takes it modulo the partition count.",
					"topic orders 有 3 个 partition，每个 broker 上一个。我们发送 key 为 alice、carol、dave 的三条记录。producer 对 key 做 murmur2 哈希，再对 partition 数取模。",
					"topic orders 有 3 個 partition，每個 broker 上一個。我們發送 key 為 alice、carol、dave 的三筆記錄。producer 對 key 做 murmur2 雜湊，再對 partition 數取模。"),
				Run: func(e *Env) error { return sendKeyed(e, 0, 3) },
			},
			{
				Title:   T("The same key again", "再次使用同一个 key", "再次使用同一個 key"),
				Explain: T("alice sends a second record, a2.", "alice 发送第二条记录 a2。", "alice 發送第二筆記錄 a2。"),
				Predict: &Prediction{
					Question: T("Where does a2 land?", "a2 会落在哪里？", "a2 會落在哪裡？"),
					Choices: []Choice{
						choice("same", T("In the same partition as a1", "与 a1 相同的 partition", "與 a1 相同的 partition"),
							func(e *Env) bool { return e.Vars["p:a2"] == e.Vars["p:a1"] }),
						choice("other", T("In another partition, to spread the load", "另一个 partition，以分摊负载", "另一個 partition，以分攤負載"),
							func(e *Env) bool { return e.Vars["p:a2"] != e.Vars["p:a1"] }),
					},
				},
				Run: func(e *Env) error { return sendKeyed(e, 3, 4) },
			},
			{
				Title: T("More records", "更多记录", "更多記錄"),
				Explain: T("carol, alice and dave send c2, a3 and d2. Within a partition each record gets the next offset.",
					"carol、alice、dave 发送 c2、a3、d2。在一个 partition 内，每条记录得到下一个 offset。",
					"carol、alice、dave 發送 c2、a3、d2。在一個 partition 內，每筆記錄得到下一個 offset。"),
				Run: func(e *Env) error { return sendKeyed(e, 4, 7) },
			},
			{
				Title: T("Reading the topic back", "读回整个 topic", "讀回整個 topic"),
				Explain: T("The send order was a1 c1 d1 a2 c2 a3 d2. A consumer now reads partition 0, then 1, then 2.",
					"发送顺序是 a1 c1 d1 a2 c2 a3 d2。consumer 依次读取 partition 0、1、2。",
					"發送順序是 a1 c1 d1 a2 c2 a3 d2。consumer 依次讀取 partition 0、1、2。"),
				Predict: &Prediction{
					Question: T("What order does the consumer see?", "consumer 看到的是什么顺序？", "consumer 看到的是什麼順序？"),
					Choices: []Choice{
						choice("global", T("The send order: a1 c1 d1 a2 c2 a3 d2", "发送顺序：a1 c1 d1 a2 c2 a3 d2", "發送順序：a1 c1 d1 a2 c2 a3 d2"),
							func(e *Env) bool { return e.Vars["read"] == "a1 c1 d1 a2 c2 a3 d2" }),
						choice("partition", T("Each key's records in order, but not the global send order", "同一 key 的记录有序，但不是全局发送顺序", "同一 key 的記錄有序，但不是全域發送順序"),
							func(e *Env) bool { return e.Vars["read"] != "a1 c1 d1 a2 c2 a3 d2" && e.Vars["perKey"] == true }),
					},
				},
				Run: func(e *Env) error {
					var all []string
					for p := int32(0); p < 3; p++ {
						recs, _, err := e.c.Consume(ordersTopic, p, 0, 100)
						if err != nil {
							return err
						}
						var vs []string
						for _, r := range recs {
							vs = append(vs, string(r.Value))
							e.Point(Pointer{Kind: "record", Broker: p + 1, Topic: ordersTopic, Partition: p, Offset: r.Offset, Value: string(r.Value)})
						}
						e.Say(T("Partition %d: %s", "partition %d：%s", "partition %d：%s").F(p, strings.Join(vs, " ")))
						all = append(all, vs...)
					}
					read := strings.Join(all, " ")
					e.Vars["read"] = read
					perKey := true
					for _, k := range []string{"a", "c", "d"} {
						var got []string
						for _, v := range all {
							if strings.HasPrefix(v, k) {
								got = append(got, v)
							}
						}
						perKey = perKey && slices.IsSorted(got)
					}
					e.Vars["perKey"] = perKey
					e.Check(T("Each key's records come back in send order", "每个 key 的记录按发送顺序读回", "每個 key 的記錄按發送順序讀回"), perKey, "%s", read)
					e.Check(T("The global order is not kept across partitions", "跨 partition 时全局顺序不保留", "跨 partition 時全域順序不保留"), read != "a1 c1 d1 a2 c2 a3 d2", "%s", read)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "02-segments", Brokers: 1,
		Title: T("Inside a partition: segments", "partition 内部：segment", "partition 內部：segment"),
		Summary: T("A partition is a directory of segments: each has a .log, an .index and a .timeindex named after its first offset in 20 digits. A new segment starts when the active one would pass segment.bytes.",
			"partition 是一个由 segment 组成的目录：每个 segment 有 .log、.index、.timeindex 三个文件，以其第一个 offset 的 20 位数字命名。活动 segment 将超过 segment.bytes 时会滚动出新的 segment。",
			"partition 是一個由 segment 組成的目錄：每個 segment 有 .log、.index、.timeindex 三個檔案，以其第一個 offset 的 20 位數字命名。活動 segment 將超過 segment.bytes 時會滾動出新的 segment。"),
		Concepts: []string{"segment", ".log", ".index", ".timeindex", "segment.bytes"},
		Setup: func(e *Env) error {
			return e.CreateTopic("logs", 1, 1, map[string]string{"segment.bytes": "1024"})
		},
		Steps: []Step{
			{
				Title: T("The first segment", "第一个 segment", "第一個 segment"),
				Explain: T("We write one record of about 100 bytes to topic logs (segment.bytes=1024) and list the partition's directory.",
					"向 topic logs（segment.bytes=1024）写入一条约 100 字节的记录，然后列出 partition 目录。",
					"向 topic logs（segment.bytes=1024）寫入一筆約 100 位元組的記錄，然後列出 partition 目錄。"),
				Run: func(e *Env) error {
					if err := produceN(e, "logs", "r", 0, 1, 100); err != nil {
						return err
					}
					segs := segments(e, 1, "logs")
					dir := filepath.Base(e.Log(1, "logs").Dir())
					for _, s := range segs {
						for _, f := range s.Files {
							e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: dir + "/" + f, Offset: s.BaseOffset})
						}
						e.Say(T("%s/ holds %s, %s and %s; the name is the offset of the segment's first record.",
							"%s/ 中有 %s、%s 和 %s；文件名就是该 segment 第一条记录的 offset。",
							"%s/ 中有 %s、%s 和 %s；檔名就是該 segment 第一筆記錄的 offset。").F(dir, s.Files[0], s.Files[1], s.Files[2]))
					}
					e.Check(T("One segment named 00000000000000000000", "只有一个名为 00000000000000000000 的 segment", "只有一個名為 00000000000000000000 的 segment"),
						len(segs) == 1 && segs[0].Files[0] == "00000000000000000000.log", "%d segments", len(segs))
					return nil
				},
			},
			{
				Title: T("Rolling on segment.bytes", "按 segment.bytes 滚动", "按 segment.bytes 滾動"),
				Explain: T("Each record with its batch header takes about 170 bytes on disk. We write 12 more.",
					"每条记录连同 batch header 在磁盘上约占 170 字节。我们再写 12 条。",
					"每筆記錄連同 batch header 在磁碟上約佔 170 位元組。我們再寫 12 筆。"),
				Predict: &Prediction{
					Question: T("How many segments will the partition have?", "partition 会有几个 segment？", "partition 會有幾個 segment？"),
					Choices: []Choice{
						choice("one", T("Still one: a segment grows until the disk is full", "仍然一个：segment 会一直增长", "仍然一個：segment 會一直增長"),
							func(e *Env) bool { return len(segments(e, 1, "logs")) == 1 }),
						choice("several", T("Several: a new one starts before the active one passes 1024 bytes", "多个：活动 segment 超过 1024 字节之前会开始新的", "多個：活動 segment 超過 1024 位元組之前會開始新的"),
							func(e *Env) bool { return len(segments(e, 1, "logs")) > 1 }),
					},
				},
				Run: func(e *Env) error {
					if err := produceN(e, "logs", "r", 1, 12, 100); err != nil {
						return err
					}
					segs := segments(e, 1, "logs")
					names, sizes, okNames, okBase := []string{}, true, true, true
					for _, s := range segs {
						names = append(names, s.Files[0])
						sizes = sizes && s.LogBytes <= 1024
						for _, f := range s.Files {
							okNames = okNames && twentyDigits.MatchString(f)
						}
						okBase = okBase && s.Files[0] == fmt.Sprintf("%020d.log", s.BaseOffset)
						e.Say(T("%s: offsets %d to %d, %d bytes", "%s：offset %d 到 %d，%d 字节", "%s：offset %d 到 %d，%d 位元組").F(s.Files[0], s.BaseOffset, s.NextOffset-1, s.LogBytes))
						e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: s.Files[0], Offset: s.BaseOffset})
					}
					e.Check(T("Every segment stays within segment.bytes", "每个 segment 都不超过 segment.bytes", "每個 segment 都不超過 segment.bytes"), sizes, "%v", names)
					e.Check(T("Every file name is the 20-digit first offset", "每个文件名都是 20 位的第一个 offset", "每個檔名都是 20 位的第一個 offset"), okNames && okBase, "%v", names)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "03-lookup", Brokers: 1,
		Title: T("Finding offset N, and finding by time", "查找 offset N 与按时间查找", "查找 offset N 與按時間查找"),
		Summary: T("To read offset N the broker binary-searches the segment names, then the segment's sparse .index, then scans a few batch headers. A timestamp goes through the .timeindex the same way.",
			"读取 offset N 时，broker 先对 segment 文件名做二分查找，再查该 segment 的稀疏 .index，最后扫描少量 batch header。按时间戳查找则同样经过 .timeindex。",
			"讀取 offset N 時，broker 先對 segment 檔名做二分搜尋，再查該 segment 的稀疏 .index，最後掃描少量 batch header。按時間戳查找則同樣經過 .timeindex。"),
		Concepts: []string{"binary search", "sparse index", ".index", ".timeindex", "ListOffsets"},
		Setup: func(e *Env) error {
			return e.CreateTopic("logs", 1, 1, map[string]string{"segment.bytes": "1024", "index.interval.bytes": "300"})
		},
		Steps: []Step{
			{
				Title: T("Three minutes of writes", "三分钟的写入", "三分鐘的寫入"),
				Explain: T("We write 10 records, let a minute pass, 10 more, another minute, and 10 more: 30 records in several segments. index.interval.bytes=300 adds an .index entry only every 300 bytes or so.",
					"写 10 条记录，过一分钟，再写 10 条，再过一分钟，再写 10 条：共 30 条，分布在多个 segment 中。index.interval.bytes=300 表示大约每 300 字节才加一条 .index 记录。",
					"寫 10 筆記錄，過一分鐘，再寫 10 筆，再過一分鐘，再寫 10 筆：共 30 筆，分佈在多個 segment 中。index.interval.bytes=300 表示大約每 300 位元組才加一筆 .index 項目。"),
				Run: func(e *Env) error {
					for g := 0; g < 3; g++ {
						if g > 0 {
							if err := e.Step(time.Minute); err != nil {
								return err
							}
						}
						if g == 1 {
							e.Vars["t1"] = e.c.Clock().Now().UnixMilli()
						}
						if err := produceN(e, "logs", "r", g*10, 10, 100); err != nil {
							return err
						}
					}
					segs := segments(e, 1, "logs")
					for _, s := range segs {
						e.Say(T("%s: offsets %d to %d, %d .index entries", "%s：offset %d 到 %d，%d 条 .index 记录", "%s：offset %d 到 %d，%d 筆 .index 項目").F(s.Files[0], s.BaseOffset, s.NextOffset-1, len(s.Index)))
					}
					e.Check(T("30 records in more than two segments", "30 条记录分布在两个以上的 segment", "30 筆記錄分佈在兩個以上的 segment"), e.Log(1, "logs").LogEndOffset() == 30 && len(segs) > 2, "%d segments", len(segs))
					return nil
				},
			},
			{
				Title: T("Finding offset 17", "查找 offset 17", "查找 offset 17"),
				Explain: T("A consumer fetches from offset 17. We follow the broker's lookup on the real files.",
					"consumer 从 offset 17 开始 fetch。我们在真实文件上跟踪 broker 的查找过程。",
					"consumer 從 offset 17 開始 fetch。我們在真實檔案上追蹤 broker 的查找過程。"),
				Predict: &Prediction{
					Question: T("How does the broker find offset 17?", "broker 如何找到 offset 17？", "broker 如何找到 offset 17？"),
					Choices: []Choice{
						choice("every", T("The .index has an entry for every offset, so it jumps straight there", ".index 为每个 offset 都有一条记录，直接跳过去", ".index 為每個 offset 都有一筆項目，直接跳過去"),
							func(e *Env) bool { return e.Vars["dense"] == true }),
						choice("sparse", T("Binary search over segment names, then the sparse .index, then a short scan", "先对 segment 名二分查找，再查稀疏 .index，最后短距离扫描", "先對 segment 名二分搜尋，再查稀疏 .index，最後短距離掃描"),
							func(e *Env) bool { return e.Vars["dense"] == false && e.Vars["binary"] == true }),
						choice("scan", T("It reads the segments one by one from the first", "从第一个 segment 开始逐个读取", "從第一個 segment 開始逐個讀取"),
							func(e *Env) bool { return e.Vars["binary"] == false }),
					},
				},
				Run: func(e *Env) error {
					l := e.Log(1, "logs")
					tr, err := l.Lookup(17)
					if err != nil {
						return err
					}
					segs := segments(e, 1, "logs")
					var probes []int64
					for _, p := range tr.SegmentProbes {
						probes = append(probes, p.Key)
					}
					e.Vars["binary"] = len(tr.SegmentProbes) < len(segs)
					dense := false
					for _, s := range segs {
						if s.BaseOffset == tr.SegmentBaseOffset {
							dense = int64(len(s.Index)) >= s.NextOffset-s.BaseOffset
						}
					}
					e.Vars["dense"] = dense
					e.Say(T("Segment search compared the base offsets %v and chose %s.", "segment 查找比较了基准 offset %v，选中 %s。", "segment 查找比較了基準 offset %v，選中 %s。").F(probes, tr.SegmentFile))
					e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: tr.SegmentFile, Offset: tr.SegmentBaseOffset})
					if tr.IndexEntry != nil {
						e.Say(T("The .index search took %d steps and found the entry (relative offset %d, position %d).", ".index 查找用了 %d 步，找到记录（相对 offset %d，位置 %d）。", ".index 查找用了 %d 步，找到項目（相對 offset %d，位置 %d）。").F(len(tr.IndexProbes), tr.IndexEntry.RelativeOffset, tr.IndexEntry.Position))
					} else {
						e.Say(T("No .index entry is at or below it: the scan starts at position 0.", "没有不大于它的 .index 记录：从位置 0 开始扫描。", "沒有不大於它的 .index 項目：從位置 0 開始掃描。"))
					}
					e.Say(T("The scan read %d batch headers from position %d and found offset 17 at position %d.", "扫描从位置 %d 开始读取了 %d 个 batch header，在位置 %d 找到 offset 17。", "掃描從位置 %d 開始讀取了 %d 個 batch header，在位置 %d 找到 offset 17。").F(len(tr.Scanned), tr.StartPosition, tr.Position))
					e.Point(Pointer{Kind: "record", Broker: 1, Topic: "logs", Offset: 17, Note: fmt.Sprintf("position %d", tr.Position)})
					e.Check(T("The chosen segment is the last one starting at or below 17", "选中的是最后一个起始 offset 不大于 17 的 segment", "選中的是最後一個起始 offset 不大於 17 的 segment"),
						tr.SegmentBaseOffset <= 17 && slices.IndexFunc(segs, func(s storage.SegmentInfo) bool { return s.BaseOffset > tr.SegmentBaseOffset && s.BaseOffset <= 17 }) < 0,
						"%s", tr.SegmentFile)
					e.Check(T("The batch found holds offset 17", "找到的 batch 包含 offset 17", "找到的 batch 包含 offset 17"), tr.Batch.BaseOffset <= 17 && 17 <= tr.Batch.LastOffset(), "batch %d", tr.Batch.BaseOffset)
					return nil
				},
			},
			{
				Title: T("Finding by timestamp", "按时间戳查找", "按時間戳查找"),
				Explain: T("A consumer asks (ListOffsets) for the first record written at or after the moment the second group began.",
					"consumer 通过 ListOffsets 询问：第二组开始写入那一刻或之后的第一条记录是哪条？",
					"consumer 透過 ListOffsets 詢問：第二組開始寫入那一刻或之後的第一筆記錄是哪筆？"),
				Predict: &Prediction{
					Question: T("Which offset comes back?", "返回哪个 offset？", "回傳哪個 offset？"),
					Choices: []Choice{
						choice("first", T("10, the first record of the second group", "10，第二组的第一条记录", "10，第二組的第一筆記錄"), func(e *Env) bool { return e.Vars["byTime"] == int64(10) }),
						choice("before", T("9, the last record before that moment", "9，那一刻之前的最后一条记录", "9，那一刻之前的最後一筆記錄"), func(e *Env) bool { return e.Vars["byTime"] == int64(9) }),
					},
				},
				Run: func(e *Env) error {
					t1 := e.Vars["t1"].(int64)
					off, ok, err := e.Log(1, "logs").OffsetForTimestamp(t1)
					if err != nil || !ok {
						return fmt.Errorf("offset for timestamp: %v %v", ok, err)
					}
					e.Vars["byTime"] = off
					for _, s := range segments(e, 1, "logs") {
						if s.BaseOffset <= off && off < s.NextOffset {
							name := strings.TrimSuffix(s.Files[0], ".log") + ".timeindex"
							e.Say(T("The first segment whose newest timestamp reaches the moment is %s; its .timeindex has %d entries.", "第一个最新时间戳达到该时刻的 segment 是 %s；其 .timeindex 有 %d 条记录。", "第一個最新時間戳達到該時刻的 segment 是 %s；其 .timeindex 有 %d 筆項目。").F(s.Files[0], len(s.TimeIndex)))
							e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: name, Offset: s.BaseOffset})
						}
					}
					e.Say(T("ListOffsets answers offset %d.", "ListOffsets 返回 offset %d。", "ListOffsets 回傳 offset %d。").F(off))
					e.Point(Pointer{Kind: "record", Broker: 1, Topic: "logs", Offset: off})
					e.Check(T("The answer is the first record at or after the time", "答案是该时刻或之后的第一条记录", "答案是該時刻或之後的第一筆記錄"), off == 10, "offset %d", off)
					return nil
				},
			},
		},
	})

	register(&Lesson{
		ID: "04-recovery", Brokers: 1, Fencing: zookeeperRule(),
		Title: T("Crash and power loss: recovery", "崩溃与断电：恢复", "崩潰與斷電：復原"),
		Summary: T("A broker writes to the page cache and fsyncs now and then; the recovery point is the offset below which everything is on disk. After an unclean stop it re-reads only the segments from the recovery point on, cuts a torn tail and rebuilds their indexes.",
			"broker 先写入 page cache，不时 fsync；recovery point 之前的数据都已落盘。非正常停止后，它只重新读取 recovery point 之后的 segment，切掉残缺的尾部，并重建其索引。",
			"broker 先寫入 page cache，不時 fsync；recovery point 之前的資料都已落盤。非正常停止後，它只重新讀取 recovery point 之後的 segment，切掉殘缺的尾部，並重建其索引。"),
		Concepts: []string{"recovery point", "page cache", "fsync", "recovery-point-offset-checkpoint"},
		Setup: func(e *Env) error {
			return e.CreateTopic("logs", 1, 1, map[string]string{"segment.bytes": "1024"})
		},
		Steps: []Step{
			{
				Title: T("Some on disk, some in the page cache", "部分在磁盘，部分在 page cache", "部分在磁碟，部分在 page cache"),
				Explain: T("We write 20 records and fsync them, then 4 more that stay in the page cache.",
					"写入 20 条记录并 fsync，再写 4 条只留在 page cache 中。",
					"寫入 20 筆記錄並 fsync，再寫 4 筆只留在 page cache 中。"),
				Run: func(e *Env) error {
					if err := produceN(e, "logs", "r", 0, 20, 100); err != nil {
						return err
					}
					if err := e.Flush(1); err != nil {
						return err
					}
					if err := produceN(e, "logs", "r", 20, 4, 100); err != nil {
						return err
					}
					l := e.Log(1, "logs")
					e.Say(T("Recovery point %d, LEO %d.", "recovery point 为 %d，LEO 为 %d。", "recovery point 為 %d，LEO 為 %d。").F(l.RecoveryPoint(), l.LogEndOffset()))
					for _, s := range segments(e, 1, "logs") {
						e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: s.Files[0], Offset: s.BaseOffset, Note: fmt.Sprintf("%d of %d bytes synced", s.SyncedLogBytes, s.LogBytes)})
					}
					e.Check(T("The recovery point is 20", "recovery point 为 20", "recovery point 為 20"), l.RecoveryPoint() == 20, "%d", l.RecoveryPoint())
					return nil
				},
			},
			{
				Title: T("A crash", "进程崩溃", "行程崩潰"),
				Explain: T("Broker 1's process is killed and restarted. The operating system is still up, so its page cache still holds what the broker wrote.",
					"broker 1 的进程被杀掉并重启。操作系统没有停，page cache 中仍有 broker 写入的数据。",
					"broker 1 的行程被終止並重啟。作業系統沒有停，page cache 中仍有 broker 寫入的資料。"),
				Predict: &Prediction{
					Question: T("How many records does broker 1 have after the restart?", "重启后 broker 1 有多少条记录？", "重啟後 broker 1 有多少筆記錄？"),
					Choices: []Choice{
						choice("24", T("All 24", "全部 24 条", "全部 24 筆"), func(e *Env) bool { return e.Vars["leo"] == int64(24) }),
						choice("20", T("20: only what was fsynced", "20：只有已 fsync 的", "20：只有已 fsync 的"), func(e *Env) bool { return e.Vars["leo"] == int64(20) }),
					},
				},
				Run: func(e *Env) error { return recoverAfter(e, false, 24) },
			},
			{
				Title: T("A power loss", "断电", "斷電"),
				Explain: T("We fsync everything, write 4 more records, and cut the power: the page cache is gone too.",
					"先 fsync 全部数据，再写 4 条记录，然后断电：page cache 也没了。",
					"先 fsync 全部資料，再寫 4 筆記錄，然後斷電：page cache 也沒了。"),
				Predict: &Prediction{
					Question: T("How many records does broker 1 have after the restart?", "重启后 broker 1 有多少条记录？", "重啟後 broker 1 有多少筆記錄？"),
					Choices: []Choice{
						choice("28", T("All 28", "全部 28 条", "全部 28 筆"), func(e *Env) bool { return e.Vars["leo"] == int64(28) }),
						choice("24", T("24: the 4 unsynced records are lost", "24：未 fsync 的 4 条丢失", "24：未 fsync 的 4 筆遺失"), func(e *Env) bool { return e.Vars["leo"] == int64(24) }),
					},
				},
				Run: func(e *Env) error {
					if err := e.Flush(1); err != nil {
						return err
					}
					if err := produceN(e, "logs", "r", 24, 4, 100); err != nil {
						return err
					}
					return recoverAfter(e, true, 24)
				},
			},
		},
	})

	register(&Lesson{
		ID: "05-retention", Brokers: 1,
		Title: T("Retention deletes whole segments", "保留策略删除整个 segment", "保留策略刪除整個 segment"),
		Summary: T("retention.ms and retention.bytes never cut a segment in two: a segment goes only when all of it is old enough, and the log start offset moves to the next segment's first offset.",
			"retention.ms 和 retention.bytes 从不把一个 segment 切成两半：只有整个 segment 都过期才会删除，log start offset 移到下一个 segment 的第一个 offset。",
			"retention.ms 和 retention.bytes 從不把一個 segment 切成兩半：只有整個 segment 都過期才會刪除，log start offset 移到下一個 segment 的第一個 offset。"),
		Concepts: []string{"retention.ms", "log start offset", "segment"},
		Setup: func(e *Env) error {
			return e.CreateTopic("logs", 1, 1, map[string]string{"segment.bytes": "1024"})
		},
		Steps: []Step{
			{
				Title:   T("Old records and new records", "旧记录与新记录", "舊記錄與新記錄"),
				Explain: T("We write 9 records, let 10 minutes pass, then write 6 more.", "写 9 条记录，过 10 分钟，再写 6 条。", "寫 9 筆記錄，過 10 分鐘，再寫 6 筆。"),
				Run: func(e *Env) error {
					if err := produceN(e, "logs", "old", 0, 9, 100); err != nil {
						return err
					}
					if err := e.Step(10 * time.Minute); err != nil {
						return err
					}
					if err := produceN(e, "logs", "new", 9, 6, 100); err != nil {
						return err
					}
					var bases []int64
					for _, s := range segments(e, 1, "logs") {
						bases = append(bases, s.BaseOffset)
						e.Say(T("%s: offsets %d to %d", "%s：offset %d 到 %d", "%s：offset %d 到 %d").F(s.Files[0], s.BaseOffset, s.NextOffset-1))
						e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: s.Files[0], Offset: s.BaseOffset})
					}
					e.Vars["bases"] = bases
					mixed := slices.ContainsFunc(segments(e, 1, "logs"), func(s storage.SegmentInfo) bool { return s.BaseOffset < 9 && s.NextOffset > 9 })
					e.Check(T("One segment holds both old and new records", "有一个 segment 同时包含旧记录和新记录", "有一個 segment 同時包含舊記錄和新記錄"), mixed, "%v", bases)
					return nil
				},
			},
			{
				Title:   T("retention.ms = 5 minutes", "retention.ms = 5 分钟", "retention.ms = 5 分鐘"),
				Explain: T("We set retention.ms to 300000 and let the broker's retention check run.", "把 retention.ms 设为 300000，让 broker 执行保留检查。", "把 retention.ms 設為 300000，讓 broker 執行保留檢查。"),
				Predict: &Prediction{
					Question: T("Where does the log start afterwards?", "之后 log 从哪里开始？", "之後 log 從哪裡開始？"),
					Choices: []Choice{
						choice("record", T("At offset 9, the first new record", "offset 9，第一条新记录", "offset 9，第一筆新記錄"), func(e *Env) bool { return e.Vars["lso"] == int64(9) }),
						choice("segment", T("At the start of the segment holding offset 9: segments go whole", "包含 offset 9 的 segment 的起点：segment 整个删除", "包含 offset 9 的 segment 的起點：segment 整個刪除"), func(e *Env) bool {
							lso, _ := e.Vars["lso"].(int64)
							return lso < 9 && slices.Contains(e.Vars["bases"].([]int64), lso)
						}),
					},
				},
				Run: func(e *Env) error {
					before := segments(e, 1, "logs")
					if err := e.Alter("logs", "retention.ms", "300000"); err != nil {
						return err
					}
					if err := e.Step(time.Second); err != nil {
						return err
					}
					l := e.Log(1, "logs")
					lso := l.LogStartOffset()
					e.Vars["lso"] = lso
					gone := true
					for _, s := range before {
						if s.NextOffset <= lso {
							_, err := os.Stat(filepath.Join(l.Dir(), s.Files[0]))
							gone = gone && os.IsNotExist(err)
							e.Say(T("%s deleted (offsets %d to %d, all older than 5 minutes).", "%s 已删除（offset %d 到 %d，都超过 5 分钟）。", "%s 已刪除（offset %d 到 %d，都超過 5 分鐘）。").F(s.Files[0], s.BaseOffset, s.NextOffset-1))
							e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: s.Files[0], Offset: s.BaseOffset, Note: "deleted"})
						}
					}
					e.Say(T("The log start offset is now %d.", "log start offset 现在是 %d。", "log start offset 現在是 %d。").F(lso))
					e.Check(T("Whole old segments are gone from disk", "过期的整个 segment 已从磁盘删除", "過期的整個 segment 已從磁碟刪除"), lso > 0 && gone, "log start %d", lso)
					e.Check(T("Old records in the mixed segment are kept", "混合 segment 中的旧记录被保留", "混合 segment 中的舊記錄被保留"), lso < 9, "log start %d", lso)
					return nil
				},
			},
		},
	})
}

// recoverAfter crashes or power-cuts broker 1, restarts it, and reports its
// recovery; want is the LEO the checks expect.
func recoverAfter(e *Env, power bool, want int64) error {
	rp := e.Log(1, "logs").RecoveryPoint()
	var err error
	if power {
		err = e.PowerLoss(1)
	} else {
		err = e.Crash(1)
	}
	if err != nil {
		return err
	}
	if err := e.Restart(1); err != nil {
		return err
	}
	l := e.Log(1, "logs")
	if l == nil {
		return fmt.Errorf("broker 1 has no log after the restart")
	}
	rec := l.Recovery()
	leo := l.LogEndOffset()
	e.Vars["leo"] = leo
	e.Say(T("Recovery started at the recovery point %d and re-read the segments %v; %d torn bytes were cut; LEO is %d.",
		"恢复从 recovery point %d 开始，重新读取了 segment %v；切掉 %d 个残缺字节；LEO 为 %d。",
		"復原從 recovery point %d 開始，重新讀取了 segment %v；切掉 %d 個殘缺位元組；LEO 為 %d。").F(rec.RecoveryPoint, rec.SegmentsRecovered, rec.BytesTruncated, leo))
	e.Say(T("The .index and .timeindex of every re-read segment were rebuilt from its batches.", "每个重新读取的 segment 的 .index 和 .timeindex 都根据 batch 重建。", "每個重新讀取的 segment 的 .index 和 .timeindex 都根據 batch 重建。"))
	segs := segments(e, 1, "logs")
	below := true
	for _, s := range segs {
		if slices.Contains(rec.SegmentsRecovered, s.BaseOffset) {
			e.Point(Pointer{Kind: "file", Broker: 1, Topic: "logs", File: s.Files[0], Offset: s.BaseOffset, Note: "re-read"})
			below = below && (s.NextOffset > rp || s.BaseOffset >= rp)
		}
	}
	e.Point(Pointer{Kind: "leo", Broker: 1, Topic: "logs", Offset: leo})
	e.Check(T("Only segments at or after the recovery point were re-read", "只重新读取了 recovery point 及之后的 segment", "只重新讀取了 recovery point 及之後的 segment"), below && len(rec.SegmentsRecovered) < len(segs), "%v of %d segments", rec.SegmentsRecovered, len(segs))
	e.Check(T("LEO after recovery is %d", "恢复后 LEO 为 %d", "復原後 LEO 為 %d").F(want), leo == want, "%d", leo)
	return nil
}

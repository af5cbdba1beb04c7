package views

import (
	"bytes"
	"context"
	"html"
	"strings"
	"testing"
	"unicode/utf8"

	"tidemark/apiv1"
	"tidemark/events"
	"tidemark/i18n"
)

func TestOverviewRendersSnapshot(t *testing.T) {
	s := events.Snapshot{Seq: 7, Controller: events.NoBroker,
		Brokers: []events.Broker{{ID: 1, State: events.BrokerFenced, Listener: "127.0.0.1:9092"}},
		Topics: []events.Topic{{Name: "t<x>", Partitions: []events.Partition{
			{Partition: 0, Leader: events.NoBroker, Replicas: []int32{1}},
			{Partition: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
		}}},
	}
	var buf bytes.Buffer
	if err := Overview(Page{Title: "Cluster"}, s, nil).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"Controller: <strong id=\"controller\">none</strong>", "fenced", "▲", "t&lt;x&gt;",
		"2 partitions · 1 under-replicated · 1 offline", "event #7", `id="panel"`, "Skip to content", `lang="en"`,
		`action="/ui/action"`, `name="acks"`, `id="tm-i18n"`, `href="/ui/lang?set=zh-Hans&amp;next=%2F"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(html, "t<x>") {
		t.Error("topic name not escaped")
	}
}

// TestStageTimeControls: without JavaScript the stage's time controls are
// forms, the rate in force is the pressed button and the status line says
// what the clock does, in the page's language.
func TestStageTimeControls(t *testing.T) {
	for _, c := range []struct {
		lang  i18n.Lang
		state string
	}{{i18n.English, "Clock paused · ¼×"}, {i18n.TraditionalChinese, "時鐘已暫停 · ¼×"}} {
		var buf bytes.Buffer
		s := events.Snapshot{Controller: 0, Paused: true, Rate: 0.25}
		if err := StagePanel(Page{Title: "Cluster", Lang: c.lang, Path: "/"}, s).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		h := buf.String()
		for _, want := range []string{
			`data-paused="true" data-rate="0.25">` + c.state + `<`, `id="stage-resume"`, `name="action" value="step-event"`,
			`name="rate" value="0.25"`, `data-rate="0.25" aria-pressed="true"`, `data-rate="4" aria-pressed="false"`,
		} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: the stage lacks %q", c.lang, want)
			}
		}
	}
}

func TestLayoutInChinese(t *testing.T) {
	var buf bytes.Buffer
	p := Page{Title: "X", Lang: i18n.SimplifiedChinese, Path: "/topics/demo/partitions/0", Flash: &Flash{OK: false, Text: "NOT_ENOUGH_REPLICAS: <b>"}}
	if err := Layout(p, false).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	h := buf.String()
	for _, want := range []string{`lang="zh-Hans"`, "跳到正文", "集群", `aria-current="true" data-lang="zh-Hans"`, "NOT_ENOUGH_REPLICAS: &lt;b&gt;"} {
		if !strings.Contains(h, want) {
			t.Errorf("layout lacks %q", want)
		}
	}
	if strings.Contains(h, "panel.js") {
		t.Error("panel loaded without withPanel")
	}
}

// TestPartitionLanes: records sit in columns by offset, those at or above
// the HW are marked uncommitted, truncated ones are struck out where they
// were, and the markers sit at each replica's own HW and LEO.
func TestPartitionLanes(t *testing.T) {
	v := apiv1.PartitionView{Topic: "demo", PartitionInfo: apiv1.PartitionInfo{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1}},
		HighWatermark: 2,
		ReplicaLogs: []apiv1.ReplicaView{
			{Broker: 1, Leader: true, InSync: true, LEO: 3, HW: 2, EpochCache: []events.EpochEntry{{Epoch: 0}, {Epoch: 2, StartOffset: 2}}, Records: []apiv1.RecordView{{Offset: 0, LeaderEpoch: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, LeaderEpoch: 2, Value: "c"}}},
			{Broker: 2, LEO: 2, HW: 1, Records: []apiv1.RecordView{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}},
				Truncated: []events.TruncatedRecord{{Offset: 2, LeaderEpoch: 1, Digest: "abcd0123"}}},
		}}
	var buf bytes.Buffer
	if err := Partition(Page{}, PartitionPage{View: v}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	h := buf.String()
	for _, want := range []string{
		`class="cell rec ep2 uncommitted at-hw" data-offset="2"`, // leader: offset 2 above HW 2, its HW marker there
		`class="cell rec ep0 committed" data-offset="1"`,
		`class="cell at-leo" data-offset="3"`,
		`<li class="cell ghost" data-offset="2"><del`,
		"OSR", "★", "epoch 2 @ 2", "No replica of this partition has truncated its log.",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("partition page lacks %q", want)
		}
	}
}

// TestTruncationMessageInPageLanguage: the partition page says why a
// replica truncated in the page's language, and the panel's catalog
// carries every event text and the Kafka error descriptions they quote.
func TestTruncationMessageInPageLanguage(t *testing.T) {
	v := apiv1.PartitionView{Topic: "demo", Truncations: []apiv1.TruncationView{{Seq: 7, Broker: 2, LEO: 1,
		Message: "diverging epoch (rule leader-epoch): leader 1 says epoch 0 ends at 1: we do not know that epoch", MessageKey: "event.truncation",
		MessageArgs: []string{"event.word.cause.diverging-epoch", "leader-epoch", "event.word.trunc.unknown-epoch:1:0:1"}}}}
	var buf bytes.Buffer
	if err := Partition(Page{Lang: i18n.TraditionalChinese}, PartitionPage{View: v}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if want := "epoch 分歧（規則 leader-epoch）：leader 1 說 epoch 0 結束於 1：我們不知道這個 epoch"; !strings.Contains(buf.String(), want) {
		t.Errorf("partition page lacks %q", want)
	}
	for _, l := range i18n.Languages() {
		pc := PanelCatalog(l)
		for _, k := range i18n.Keys(l) {
			if _, ok := pc[k]; !ok && (strings.HasPrefix(k, "event.") || strings.HasPrefix(k, "errors.")) {
				t.Errorf("%s: the panel's catalog lacks %s", l, k)
			}
		}
	}
}

// TestPartitionShowsReplicationProtocol: the partition view names the
// topic's replication.protocol in the page's language, isr when unset.
func TestPartitionShowsReplicationProtocol(t *testing.T) {
	v := apiv1.PartitionView{Topic: "q"}
	quorum := events.Snapshot{Topics: []events.Topic{{Name: "q", Configs: map[string]string{"replication.protocol": "quorum"}}}}
	for _, c := range []struct {
		lang i18n.Lang
		snap events.Snapshot
		want string
	}{
		{i18n.English, quorum, "quorum: Raft (commit at a majority)"},
		{i18n.SimplifiedChinese, quorum, "quorum：Raft（多数派拥有时提交）"},
		{i18n.English, events.Snapshot{}, "isr: Kafka&#39;s ISR"},
	} {
		var buf bytes.Buffer
		if err := Partition(Page{Lang: c.lang}, PartitionPage{View: v, Snap: c.snap}).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("%s: partition page lacks %q", c.lang, c.want)
		}
	}
}

// TestOverviewListsRecentEvents: the event list starts with the bus's
// recent history, newest first, as the panel draws it, in the page's
// language.
func TestOverviewListsRecentEvents(t *testing.T) {
	p := Page{Lang: i18n.SimplifiedChinese, Recent: []events.Event{
		{Seq: 3, Kind: events.KindElection, Topic: "demo", Leader: &events.Leadership{Leader: 1, LeaderEpoch: 0}},
		{Seq: 4, Kind: events.KindISR, Topic: "demo", ISR: []int32{1, 2}},
	}}
	var buf bytes.Buffer
	if err := Overview(p, events.Snapshot{}, nil).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	i, j := strings.Index(html, `data-seq="4"`), strings.Index(html, `data-seq="3"`)
	if i < 0 || j < 0 || i > j {
		t.Fatalf("event list lacks #4 then #3: %s", html[strings.Index(html, `id="panel-events"`):])
	}
	if want := i18n.T(i18n.SimplifiedChinese, "panel.kind.isr"); !strings.Contains(html, want) {
		t.Errorf("event list lacks %q", want)
	}
}

// TestLongValuesStayShort: a cell's label (tooltip and screen-reader text,
// twice per cell) shows at most maxLabelValue bytes of a record's value, so
// a page of 1 MB values is not megabytes a record; values are cut at a
// character boundary, never inside a UTF-8 sequence.
func TestLongValuesStayShort(t *testing.T) {
	big := strings.Repeat("v", 1<<20)
	v := apiv1.PartitionView{Topic: "demo", PartitionInfo: apiv1.PartitionInfo{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}},
		HighWatermark: 1, ReplicaLogs: []apiv1.ReplicaView{{Broker: 1, Leader: true, InSync: true, LEO: 1, HW: 1,
			Records: []apiv1.RecordView{{Offset: 0, Value: big}}}}}
	var buf bytes.Buffer
	if err := Partition(Page{}, PartitionPage{View: v}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 100_000 {
		t.Errorf("a partition page with one 1 MiB value is %d bytes", buf.Len())
	}
	for _, c := range []struct{ v, want string }{
		{"订单订单", "订单订…"}, // 12 bytes: the cut at 10 falls inside 单
		{"abc", "abc"},
		{"0123456789x", "0123456789…"},
	} {
		if got := ShortValue(c.v); got != c.want || !utf8.ValidString(got) {
			t.Errorf("ShortValue(%q) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestLabOnlyAndFolkloreLabelled: where the partition page shows
// replication.protocol and the OSR badge, and where the config form offers
// truncation.rule, the page labels them lab-only or folklore, with the
// one-line why, in the page's language.
func TestLabOnlyAndFolkloreLabelled(t *testing.T) {
	v := apiv1.PartitionView{Topic: "demo", PartitionInfo: apiv1.PartitionInfo{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
		ReplicaLogs: []apiv1.ReplicaView{{Broker: 1, Leader: true, InSync: true}, {Broker: 2}}}
	for _, l := range i18n.Languages() {
		var buf bytes.Buffer
		if err := Partition(Page{Lang: l}, PartitionPage{View: v}).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		h := buf.String()
		for _, want := range []string{
			`replication.protocol <span class="tag lab-only"`, i18n.T(l, "ui.lab-only"), i18n.T(l, "ui.lab-only.protocol"),
			`<span class="tag folklore">` + i18n.T(l, "ui.folklore") + `</span>`,
		} {
			if !strings.Contains(h, html.EscapeString(want)) && !strings.Contains(h, want) {
				t.Errorf("%s: partition page lacks %q", l, want)
			}
		}
		buf.Reset()
		if err := configForm(Page{Lang: l}, events.Snapshot{}, "demo").Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`truncation.rule <span class="tag lab-only">` + i18n.T(l, "ui.lab-only") + `</span>`, i18n.T(l, "ui.lab-only.truncation")} {
			if !strings.Contains(buf.String(), html.EscapeString(want)) && !strings.Contains(buf.String(), want) {
				t.Errorf("%s: config form lacks %q", l, want)
			}
		}
	}
}

package web

import (
	"testing"

	"tidemark/i18n"
)

// TestDoneTextNamesWhatHappened: a one-way cut's answer names its
// direction and the one still open; an acks=0 produce's answer names no
// offsets, though the lab's API knows them, because its producer never
// learns them.
func TestDoneTextNamesWhatHappened(t *testing.T) {
	form := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	oneWay := form("from", "2", "to", "3", "oneway", "true")
	both := form("from", "2", "to", "3")
	acks0 := form("acks", "0", "count", "3")
	acksAll := form("acks", "all", "count", "3")
	produced := []byte(`{"partition":0,"leader":1,"base_offset":6,"last_offset":8}`)
	for _, c := range []struct {
		lang   i18n.Lang
		action string
		get    func(string) string
		body   []byte
		want   string
	}{
		{i18n.English, "cut", oneWay, nil, "Link 2 → 3 cut: 2's messages no longer reach 3; 3 → 2 still works."},
		{i18n.SimplifiedChinese, "cut", oneWay, nil, "链路 2 → 3 已切断：2 的消息不再能到达 3；3 → 2 仍然畅通。"},
		{i18n.TraditionalChinese, "cut", oneWay, nil, "鏈路 2 → 3 已切斷：2 的訊息不再能到達 3；3 → 2 仍然暢通。"},
		{i18n.English, "cut", both, nil, "Link 2 ↔ 3 cut both ways: neither node's messages reach the other."},
		{i18n.English, "produce", acks0, produced, "3 record(s) sent to partition 0 with acks=0. An acks=0 producer gets no answer: it learns no offsets, and no error."},
		{i18n.SimplifiedChinese, "produce", acks0, produced, "已以 acks=0 发送 3 条记录到分区 0。acks=0 的生产者收不到应答：它不会得知 offset，也不会得知错误。"},
		{i18n.English, "produce", acksAll, produced, "3 record(s) produced to partition 0 at offsets 6–8 (acks=all)."},
	} {
		if got := doneText(c.lang, c.action, c.get, c.body); got != c.want {
			t.Errorf("%s %s:\n got %q\nwant %q", c.lang, c.action, got, c.want)
		}
	}
}

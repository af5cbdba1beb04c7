package export

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/server/chaos"
)

func TestEventsJSONL(t *testing.T) {
	evs := []events.Event{
		{Seq: 1, Kind: events.KindTopic, Broker: events.NoBroker, Topic: "demo"},
		{Seq: 2, Kind: events.KindAppend, Broker: 1, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 1, LEO: 2},
			Records: []events.Record{{Offset: 0, Value: "line\nbreak"}, {Offset: 1, Value: `"quoted"`}}},
		{Seq: 3, Kind: events.KindISR, Broker: 1, Topic: "demo", ISR: []int32{1, 2}},
	}
	var b bytes.Buffer
	if err := EventsJSONL(&b, evs); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&b)
	var got []events.Event
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d %q: %v", len(got)+1, sc.Text(), err)
		}
		got = append(got, e)
	}
	if len(got) != 3 || got[1].Records[0].Value != "line\nbreak" || got[1].Offsets.LEO != 2 || got[2].ISR[1] != 2 {
		t.Fatalf("read back %+v", got)
	}
}

// TestAckedCSV gives each outcome one write and reads the CSV back.
func TestAckedCSV(t *testing.T) {
	w := func(v string, acked bool, part int32, off int64) chaos.Write {
		return chaos.Write{Value: v, Producer: 1, Acks: "all", Partition: part, Acked: acked, Offset: off}
	}
	r := &chaos.Result{
		Writes: []chaos.Write{w("p1-1", true, 0, 0), w("p1-2", true, 0, 1), w("p1-3", true, 1, 0), w("p1-4", true, 1, 1),
			w("p1-5", true, 2, 0), w("p1-6", false, 2, -1), w("p1-7", true, 2, 1), w("p1-8", true, 0, 5)},
		Final: chaos.Final{Consumed: map[int32][]chaos.Rec{
			0: {{Offset: 0, Value: "p1-1"}, {Offset: 2, Value: "p1-3"}},
			1: {{Offset: 0, Value: "p1-3"}, {Offset: 3, Value: "p1-4"}},
		}},
		Report: chaos.Report{
			Lost:         []chaos.Loss{{Write: w("p1-2", true, 0, 1)}},
			UnsyncedLost: []chaos.Loss{{Write: w("p1-5", true, 2, 0)}},
			Unreadable:   []chaos.Write{w("p1-7", true, 2, 1)},
		},
	}
	var b bytes.Buffer
	if err := AckedCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(AckedCSVHeader, ",") || len(rows) != 1+len(r.Writes) {
		t.Fatalf("rows %q", rows)
	}
	want := map[string][]string{ // value: read_count, read_partition, read_offset, outcome
		"p1-1": {"1", "0", "0", OutcomeRead},
		"p1-2": {"0", "", "", OutcomeLost},
		"p1-3": {"2", "", "", OutcomeDuplicated},
		"p1-4": {"1", "1", "3", OutcomeWrongOffset},
		"p1-5": {"0", "", "", OutcomeUnsyncedLost},
		"p1-6": {"0", "", "", OutcomeNotRead},
		"p1-7": {"0", "", "", OutcomeUnreadable},
		"p1-8": {"0", "", "", OutcomeNotRead},
	}
	for _, row := range rows[1:] {
		wt := want[row[0]]
		if row[7] != wt[0] || row[10] != wt[3] || (wt[1] != "" && (row[8] != wt[1] || row[9] != wt[2])) {
			t.Errorf("%s: %q, want read %v", row[0], row, wt)
		}
	}
	if rows[6][5] != "false" || rows[6][6] != "" || rows[1][6] != "0" {
		t.Errorf("acked columns: %q / %q", rows[6], rows[1])
	}
}

// element is an SVG element as the tests look at it.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG parses doc as XML (it must be well-formed, with an svg root)
// and returns its elements in document order.
func parseSVG(t *testing.T, doc []byte) []element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var out []element
	var open []int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v\n%s", err, doc)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e := element{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(out) == 0 && (e.name != "svg" || tk.Name.Space != "http://www.w3.org/2000/svg") {
				t.Fatalf("root %v", tk.Name)
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tk)
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
	return out
}

func find(els []element, name, attr, value string) []element {
	var out []element
	for _, e := range els {
		if e.name == name && (attr == "" || e.attrs[attr] == value) {
			out = append(out, e)
		}
	}
	return out
}

func TestTopologySVG(t *testing.T) {
	snap := events.Snapshot{Controller: 0, Brokers: []events.Broker{
		{ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerCrashed}, {ID: 3, State: events.BrokerFenced}},
		Cuts: []events.Fault{{Kind: events.FaultCut, From: 1, To: 2, OneWay: true}, {Kind: events.FaultCut, From: 0, To: 3}}}
	var b bytes.Buffer
	if err := Topology(&b, snap, i18n.SimplifiedChinese); err != nil {
		t.Fatal(err)
	}
	els := parseSVG(t, b.Bytes())
	if n := len(find(els, "g", "", "")) - 2; n != 4 { // the links' and the nodes' groups, then one per node
		t.Fatalf("%d node groups, want 4 (node 0 and 3 brokers)", n)
	}
	if len(find(els, "line", "", "")) != 12 { // 6 pairs, each direction apart
		t.Fatalf("%d link lines, want 12", len(find(els, "line", "", "")))
	}
	dashed := func(from, to string) bool {
		for _, l := range find(els, "line", "data-from", from) {
			if l.attrs["data-to"] == to {
				return l.attrs["stroke-dasharray"] != ""
			}
		}
		t.Fatalf("no line %s→%s", from, to)
		return false
	}
	if !dashed("1", "2") || dashed("2", "1") || !dashed("0", "3") || !dashed("3", "0") || dashed("1", "3") {
		t.Fatal("cut directions drawn wrong")
	}
	var texts []string
	for _, e := range find(els, "text", "", "") {
		texts = append(texts, e.text)
	}
	all := strings.Join(texts, "|")
	// The states in the page's language, as the pages write them.
	if !strings.Contains(all, "节点 0") || !strings.Contains(all, "● 运行中") || !strings.Contains(all, "✕ 已崩溃") || !strings.Contains(all, "▲ 已隔离") {
		t.Fatalf("texts %q", all)
	}
}

func TestLanesSVG(t *testing.T) {
	p := events.Partition{Partition: 0, Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1},
		ReplicaLogs: []events.Replica{
			{Broker: 1, LEO: 3, HW: 2, Records: []events.Record{{Offset: 0, LeaderEpoch: 1, Value: "a<b&c"}, {Offset: 1, LeaderEpoch: 1, Value: "longer value"}, {Offset: 2, LeaderEpoch: 2, Value: "new"}}},
			{Broker: 2, LEO: 1, HW: 1, Records: []events.Record{{Offset: 0, LeaderEpoch: 1, Value: "a<b&c"}},
				Truncated: []events.TruncatedRecord{{Offset: 1, LeaderEpoch: 1, Value: "old", Reason: "leader-epoch rule"}}},
		}}
	var b bytes.Buffer
	if err := Lanes(&b, "demo", p, i18n.English); err != nil {
		t.Fatal(err)
	}
	els := parseSVG(t, b.Bytes())
	if n := len(find(els, "g", "class", "lane")); n != 2 {
		t.Fatalf("%d lanes", n)
	}
	recs := find(els, "g", "class", "record")
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	// Offset 2 of broker 1 is above its HW: uncommitted, white and dashed.
	rects := find(els, "rect", "", "")
	var uncommitted int
	for _, r := range rects {
		if r.attrs["stroke-dasharray"] != "" && r.attrs["fill"] == "#fff" {
			uncommitted++
		}
	}
	if uncommitted != 1 {
		t.Fatalf("%d uncommitted cells, want 1", uncommitted)
	}
	tr := find(els, "g", "class", "truncated")
	if len(tr) != 1 || !strings.Contains(b.String(), "leader-epoch rule") || !strings.Contains(b.String(), "a&lt;b&amp;c") {
		t.Fatalf("truncated %v\n%s", tr, b.String())
	}
	if lane := find(els, "g", "data-broker", "1"); len(lane) != 1 || lane[0].attrs["data-hw"] != "2" || lane[0].attrs["data-leo"] != "3" {
		t.Fatalf("lane of broker 1: %v", lane)
	}
	var texts []string
	for _, e := range find(els, "text", "", "") {
		texts = append(texts, e.text)
	}
	if all := strings.Join(texts, "|"); !strings.Contains(all, "HW 2") || !strings.Contains(all, "LEO 3") || !strings.Contains(all, "longe…") {
		t.Fatalf("texts %q", all)
	}
}

// TestLanesSVGBounded: a replica far behind does not stretch the picture.
func TestLanesSVGBounded(t *testing.T) {
	p := events.Partition{Leader: 1, ReplicaLogs: []events.Replica{{Broker: 1, LEO: 1_000_000, HW: 1_000_000}, {Broker: 2}}}
	var b bytes.Buffer
	if err := Lanes(&b, "demo", p, i18n.English); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 10_000 {
		t.Fatalf("%d bytes for two empty lanes", b.Len())
	}
	parseSVG(t, b.Bytes())
}

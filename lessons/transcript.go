package lessons

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"tidemark/invariant"
)

// Transcripts. A scenario's "show TOPIC" line prints the topic as it is at
// that point of the story — the running leader, its epoch and the ISR,
// each replica's records with its HW (and the leader's LSO once the story
// used transactions), and which writes were acknowledged —
// and the file keeps what it printed in a block right after the line:
//
//	show t
//	----
//	leader 1 · epoch 2 · isr [1 2 3]
//	b1 leader: 0:m1/e2 · hw 1
//	…
//	----
//
// The runner fails when the topic shows anything else. `go test ./lessons
// -run TestScenarios -rewrite` plays every file and writes what each show
// printed into its block (etcd raft's datadriven tests work so), so a
// story is told once and its expected output regenerated, not hand-kept.
// When the plays of one file (back-ends × fencing rules) differ, the block
// holds one section per play, each under its name: [cluster/kraft].

// Show is a show line and the block it keeps.
type Show struct {
	Topic string
	// Want is the block's text per play ("" for every play).
	Want map[string]string
	// Start and End are the block's first and last lines (its "----"
	// lines); 0 when the show has no block yet.
	Start, End int
}

// want is what play run must show; ok is false when the block has nothing
// for it.
func (s *Show) want(run ScenarioRun) (string, bool) {
	if w, ok := s.Want[run.String()]; ok {
		return w, true
	}
	w, ok := s.Want[""]
	return w, ok
}

// parseShowBlock splits a block's lines into its sections.
func parseShowBlock(lines []string) (map[string]string, error) {
	out := map[string]string{}
	label := ""
	var cur []string
	flush := func() {
		if label != "" || len(cur) > 0 {
			out[label] = strings.Join(cur, "\n")
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]") {
			flush()
			label, cur = l[1:len(l)-1], nil
			if _, dup := out[label]; dup {
				return nil, fmt.Errorf("section [%s] twice", label)
			}
			continue
		}
		if label == "" && len(out) > 0 {
			return nil, fmt.Errorf("text outside a [play] section")
		}
		cur = append(cur, l)
	}
	flush()
	return out, nil
}

// Transcript is the topic as a show line prints it.
func (d Durable) Transcript() string {
	var b strings.Builder
	leader := "none"
	if d.Leader >= 0 {
		leader = strconv.Itoa(int(d.Leader))
	}
	fmt.Fprintf(&b, "leader %s · epoch %d · isr %s", leader, d.LeaderEpoch, intsText(d.ISR))
	running := map[int32]bool{}
	for _, r := range d.Replicas {
		running[r.Broker] = true
		role := ""
		if r.Leader {
			role = " leader"
		}
		recs := make([]string, 0, len(r.Records))
		for _, x := range r.Records {
			v := x.Value
			if x.Tombstone { // as key-values writes it
				v = x.Key + "=" + tombstoneText
			}
			recs = append(recs, recText(x.Offset, v, x.Epoch))
		}
		if len(recs) == 0 {
			recs = append(recs, "(empty)")
		}
		fmt.Fprintf(&b, "\nb%d%s: %s · hw %d", r.Broker, role, strings.Join(recs, " "), r.HW)
		if r.Leader && d.HasLSO {
			fmt.Fprintf(&b, " · lso %d", d.LSO)
		}
	}
	for _, id := range d.Assigned {
		if !running[id] {
			fmt.Fprintf(&b, "\nb%d down", id)
		}
	}
	ws := slices.Clone(d.Writes)
	slices.SortFunc(ws, func(a, b invariant.Write) int { return strings.Compare(a.Value, b.Value) })
	var acked, not []string
	for _, w := range ws {
		if w.Acked {
			acked = append(acked, w.Value+"@"+strconv.FormatInt(w.Offset, 10))
		} else {
			not = append(not, w.Value)
		}
	}
	if len(acked)+len(not) > 0 {
		b.WriteString("\nacked: " + listOrNone(acked) + " · not acked: " + listOrNone(not))
	}
	return b.String()
}

func intsText(l []int32) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = strconv.Itoa(int(x))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, " ")
}

// showMismatch is a show whose topic printed other than its block says.
func showMismatch(want, got string) string {
	return "show printed\n" + indent(got) + "\nthe file's block says\n" + indent(want) +
		"\n(go test ./lessons -run TestScenarios -rewrite writes what it printed)"
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// Shown is what one play's show lines printed, by line.
type Shown map[int]string

// RewriteShows writes what each show line printed into the file: plays
// holds every play of s by its name, in s.Runs() order. A show whose plays
// all printed the same text gets one block; one they differ on, a section
// per play.
func RewriteShows(src []byte, s *Script, plays []ScenarioRun, shown map[string]Shown) []byte {
	lines := strings.Split(string(src), "\n")
	type edit struct {
		from, to int // lines replaced: [from, to) 0-based
		text     []string
	}
	var edits []edit
	for _, st := range s.Steps {
		for _, it := range st.Items {
			sh := it.Show
			if sh == nil {
				continue
			}
			pad := lines[it.Line-1][:len(lines[it.Line-1])-len(strings.TrimLeft(lines[it.Line-1], " \t"))]
			texts := make([]string, len(plays))
			same := true
			for i, p := range plays {
				texts[i] = shown[p.String()][it.Line]
				same = same && texts[i] == texts[0]
			}
			block := []string{pad + "----"}
			add := func(t string) {
				for _, l := range strings.Split(t, "\n") {
					block = append(block, pad+l)
				}
			}
			if same && len(plays) > 0 {
				add(texts[0])
			} else {
				for i, p := range plays {
					block = append(block, pad+"["+p.String()+"]")
					add(texts[i])
				}
			}
			block = append(block, pad+"----")
			e := edit{from: it.Line, to: it.Line, text: block}
			if sh.Start > 0 {
				e.from, e.to = sh.Start-1, sh.End
			}
			edits = append(edits, e)
		}
	}
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		lines = append(lines[:e.from], append(e.text, lines[e.to:]...)...)
	}
	return []byte(strings.Join(lines, "\n"))
}

package views

import (
	"regexp"
	"strconv"
	"strings"
)

// legalTopic is Kafka's rule for a topic's name: what may go between a
// selector's quotes as it is.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// PointerCSS is the stylesheet that points a lesson step's "look at" list
// at the stage while the step's answer is shown: each pointer's broker is
// ringed on the topology, its replica's lane marked, and an HW or LEO
// pointer's marker drawn heavy (an LSO pointer's too, and a cleaner
// pointer's sections outlined). A stylesheet rather than classes the
// panel would set: the panel redraws the stage many times a second, and
// selectors keep pointing at whatever it draws. A topic that is not a
// legal Kafka name (it could break out of a selector) points nowhere.
func PointerCSS(ptrs []LessonPointerView) string {
	var b strings.Builder
	seen := map[string]bool{}
	rule := func(sel, decl string) {
		if !seen[sel] {
			seen[sel] = true
			b.WriteString(sel + " { " + decl + " }\n")
		}
	}
	for _, p := range ptrs {
		if p.Broker <= 0 {
			continue
		}
		id := strconv.Itoa(int(p.Broker))
		rule(`#topo [data-testid="node-`+id+`"]`, "box-shadow: 0 0 0 4px var(--yellow), 0 0 0 6px var(--ink);")
		if p.Topic == "" || !legalTopic.MatchString(p.Topic) {
			continue
		}
		lane := `#lanes g[data-topic="` + p.Topic + `"][data-partition="` + strconv.Itoa(int(p.Partition)) + `"][data-broker="` + id + `"]`
		rule(lane+` .lane-label`, "fill: var(--vermillion-text); text-decoration: underline;")
		switch p.Kind {
		case "hw":
			rule(lane+` .marker.hw line`, "stroke: var(--vermillion); stroke-width: 5;")
		case "leo":
			rule(lane+` .marker.leo line`, "stroke: var(--vermillion); stroke-width: 5;")
		case "lso":
			rule(lane+` .marker.lso line`, "stroke: var(--vermillion); stroke-width: 5;")
		case "cleaner":
			// The replica's clean and dirty sections (wasm/panel/txnlanes.go).
			rule(lane+` .cleaner rect`, "stroke: var(--vermillion); stroke-width: 3;")
		}
	}
	return b.String()
}

package server

import (
	"strconv"
	"strings"
	"testing"
)

// TestBrowserServerLanesOpenOnNewest: without JavaScript, the partition
// page's server-rendered lanes (#server-lanes), wider than the screen, open
// on their newest records: every lane's HW and LEO markers and its head
// (broker, badges) in view.
func TestBrowserServerLanesOpenOnNewest(t *testing.T) {
	b := startBrowserLab(t, true)
	recs := make([]string, 40)
	for i := range recs {
		recs[i] = `{"value":"r` + strconv.Itoa(i) + `"}`
	}
	b.api("POST", "api/v1/topics/demo/records", `{"acks":"1","partition":0,"records":[`+strings.Join(recs, ",")+`]}`, nil)
	for range 3 { // the followers fetch, the leader's HW moves, the followers learn it
		b.api("POST", "api/v1/clock/step", `{"ms":1000}`, nil)
		for _, id := range []string{"1", "2", "3"} {
			b.api("POST", "api/v1/brokers/"+id+"/fetch", "", nil)
		}
	}
	b.viewport(800, 700, false)
	b.noScripts()
	b.open("/topics/demo/partitions/0", false)
	got := eval[[]string](b, `(() => {
  const box = document.querySelector("#server-lanes").getBoundingClientRect();
  const inView = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1; };
  return [...document.querySelectorAll("#server-lanes section.lane")].flatMap(l => {
    const out = [];
    for (const sel of [".mark.hw", ".mark.leo", ".lane-head strong"]) {
      const el = l.querySelector(sel);
      if (!el || !inView(el)) out.push("broker " + l.dataset.broker + ": " + sel + (el ? " out of view" : " missing"));
    }
    return out;
  });
})()`)
	if len(got) > 0 {
		t.Fatalf("#server-lanes, 40 records at 800 px: %s", strings.Join(got, "; "))
	}
	if n := eval[int](b, `document.querySelectorAll("#server-lanes section.lane").length`); n != 3 {
		t.Fatalf("%d lanes, want 3", n)
	}
	b.shotOf("#server-lanes", "server-lanes-newest-800px")
}

package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestBrowserStreamPaced: a stream of records makes the panel pace its
// renders (panel.PaceWait, whose rate TestPaceWait checks; the benchmark's
// renders/s shows it: ~20 against ~57), and the paced panel still catches
// up with every event and shows the records once the stream ends.
func TestBrowserStreamPaced(t *testing.T) {
	b := startBrowserLab(t, false)
	b.open("/", true)
	eval[any](b, `window.tidemarkRenders()`) // forget the page load's renders

	// 2,000 records from 8 clients at once, as fast as the server takes
	// them: far more than the 40 events in 250 ms that make a stream, and
	// than a frame of the display's each.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				body := `{"partition":` + strconv.Itoa((w+i)%3) + `,"acks":"1","records":[{"value":"a"},{"value":"b"},{"value":"c"},{"value":"d"},{"value":"e"}]}`
				resp, err := client.Post(b.url+"api/v1/topics/demo/records", "application/json", strings.NewReader(body))
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = errors.New(resp.Status)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}
	b.poll(`+document.getElementById("panel").dataset.seq >= `+strconv.FormatUint(b.cl.Bus().LastSeq(), 10), "the panel to catch up")

	// Bit 8 of a render's parts (partStream): rendered under a stream.
	renders := eval[[]renderEntry](b, `window.tidemarkRenders()`)
	paced := 0
	for _, r := range renders {
		paced += int(r.Parts) >> 8 & 1
	}
	if paced < 5 {
		t.Fatalf("%d of %d renders under a stream: the stream was not seen", paced, len(renders))
	}
	if n := eval[int](b, `document.querySelectorAll('#lanes .lane-recs[data-partition="0"] [data-offset]').length`); n == 0 {
		t.Error("no records in the lanes of demo-0 after the stream")
	}
}

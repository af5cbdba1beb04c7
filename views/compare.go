package views

import (
	"strconv"
	"strings"
)

// CompareListView is the comparison page: the start form and the recent
// comparisons.
type CompareListView struct {
	Actions    int
	MaxActions int
	// Protocols are the protocols a comparison runs by default.
	Protocols []string
	Runs      []CompareRunView
}

// CompareRunView is one comparison as its page shows it: progress, one
// column per protocol (live counts while it runs, every figure once done)
// and a chart of each protocol's samples.
type CompareRunView struct {
	ID          string
	Seed        uint64
	Actions     int
	Phase       string
	Action      int
	Total       int
	Done        bool
	Error       string
	Columns     []CompareColumn
	Charts      []CompareChart
	RunPlayback // played on the stage from /ws?compare=<id>
	// Conclusion is the comparison's outcome in one sentence ("" until done).
	Conclusion string
}

// CompareColumn is one protocol's figures. Finished is set once the
// comparison is done: the figures below it are then there.
type CompareColumn struct {
	Protocol string
	// SkippedCode is Kafka's error name for why the protocol did not run
	// ("" : it ran).
	SkippedCode string
	Attempted   int
	Accepted    int
	Lost        int
	Finished    bool
	// Availability is Accepted/Attempted in percent; -1 without writes.
	Availability float64
	UnsyncedLost int
	LatencyP50   float64 // lab ms
	LatencyP99   float64
	Formula      string
	ReplicasF1   int
	ReplicasF2   int
	Messages     int64
	Committed    int
	PerRecord    float64
}

// CompareChart is one protocol's samples: acknowledged writes, writes sent
// and lost after each action.
type CompareChart struct {
	Protocol string
	Points   []ComparePoint
}

// ComparePoint is one sample.
type ComparePoint struct{ Writes, Acked, Lost int }

// chart geometry (SVG user units).
const chartW, chartH = 240.0, 80.0

// availabilityPoints draws acknowledged/sent after each sample, 0–100 %.
func (c CompareChart) availabilityPoints() string {
	return polyline(len(c.Points), 1, func(i int) float64 {
		if c.Points[i].Writes == 0 {
			return 0
		}
		return float64(c.Points[i].Acked) / float64(c.Points[i].Writes)
	})
}

// countMax is the largest count the counts chart shows (at least 1).
func (c CompareChart) countMax() int {
	m := 1
	for _, p := range c.Points {
		m = max(m, p.Acked, p.Lost)
	}
	return m
}

func (c CompareChart) ackedPoints() string {
	return polyline(len(c.Points), float64(c.countMax()), func(i int) float64 { return float64(c.Points[i].Acked) })
}

func (c CompareChart) lostPoints() string {
	return polyline(len(c.Points), float64(c.countMax()), func(i int) float64 { return float64(c.Points[i].Lost) })
}

// polyline returns SVG points for n values y(i) in 0..top across the chart.
func polyline(n int, top float64, y func(int) float64) string {
	var b strings.Builder
	for i := range n {
		x := 0.0
		if n > 1 {
			x = chartW * float64(i) / float64(n-1)
		}
		v := chartH - chartH*y(i)/top
		b.WriteString(strconv.FormatFloat(x, 'f', 1, 64))
		b.WriteByte(',')
		b.WriteString(strconv.FormatFloat(v, 'f', 1, 64))
		b.WriteByte(' ')
	}
	return b.String()
}

// sampleX is the x of sample i (1-based) of n across the chart.
func sampleX(i, n int) string {
	return strconv.FormatFloat(chartW*float64(i-1)/float64(n-1), 'f', 1, 64)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// percent renders an availability, or "–" without writes.
func (c CompareColumn) percent() string {
	if c.Availability < 0 {
		return "–"
	}
	return f1(c.Availability) + " %"
}

// finished shows s once the comparison is done, an ellipsis before.
func (p Page) finished(c CompareColumn, s string) string {
	if !c.Finished {
		return "…"
	}
	return s
}

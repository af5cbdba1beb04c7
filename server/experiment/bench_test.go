package experiment

import (
	"context"
	"testing"

	"tidemark/lessons"
)

// BenchmarkStudies runs each built-in study at full size and reports its
// wall time per run (ms/run), against a baseline in the same process: one
// run of a 10 s acks=all workload at 60 records/s with no faults
// (ratio = a study's ms/run over the baseline's).
//
//	go test -run '^$' -bench Studies -benchtime 1x ./server/experiment
func BenchmarkStudies(b *testing.B) {
	baseline := func() float64 {
		x, err := lessons.ParseExperiment("baseline.experiment", []byte("experiment baseline\nduration 10s\nworkload w rate=60 acks=all producers=2\n"))
		if err != nil {
			b.Fatal(err)
		}
		res, err := Execute(context.Background(), x, Options{})
		if err != nil || res.Runs[0].Error != "" {
			b.Fatal(err, res.Runs[0].Error)
		}
		return float64(res.Runs[0].WallMs)
	}
	for _, name := range lessons.Studies() {
		b.Run(name, func(b *testing.B) {
			x, err := lessons.ParseStudy(name)
			if err != nil {
				b.Fatal(err)
			}
			var perRun, base float64
			for b.Loop() {
				base = baseline()
				res, err := Execute(context.Background(), x, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if !res.Passed() {
					b.Errorf("%s: a claim does not hold: %+v", name, res.Checks)
				}
				perRun = float64(res.Elapsed.Milliseconds()) / float64(len(res.Runs))
			}
			b.ReportMetric(perRun, "ms/run")
			b.ReportMetric(float64(x.Runs()), "runs")
			b.ReportMetric(perRun/base, "ratio")
		})
	}
}

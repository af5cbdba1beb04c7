package chaos

import (
	"testing"
	"time"
)

// quorumSchedules is how many seeded schedules each protocol's strict
// configuration runs.
const quorumSchedules = 8

// TestStrictPerProtocol: Strict on every other protocol (strict-quorum,
// strict-pipeline) loses no acknowledged write under the same seeded
// schedules, and acknowledges writes at all (the check is not vacuous).
func TestStrictPerProtocol(t *testing.T) {
	for _, p := range Protocols[1:] {
		cfg := StrictOn(p)
		t.Run(string(cfg), func(t *testing.T) {
			start := time.Now()
			total, findings := summary(runSchedules(t, cfg, quorumSchedules))
			t.Logf("%d schedules in %v: %+v\n%s", quorumSchedules, time.Since(start), total, findings)
			if total.Acked == 0 {
				t.Errorf("no write was acknowledged: the check says nothing")
			}
			if total.Lost != 0 {
				t.Errorf("%s lost %d acknowledged writes:\n%s", cfg, total.Lost, findings)
			}
		})
	}
}

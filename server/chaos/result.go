package chaos

import (
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// Result is a finished run: everything needed to play it again (Seed,
// Config, Actions) and what it found. Its JSON is the export format.
type Result struct {
	Seed    uint64   `json:"seed"`
	Config  Config   `json:"config"`
	Actions []Action `json:"actions"`
	// Outcomes is each action's outcome: "ok", a Kafka error name, or for
	// produces "appended", "answered", "in-flight" or "retry-backoff".
	Outcomes []string `json:"outcomes"`
	// SettleRounds is how many step-and-fetch rounds settling took.
	SettleRounds int        `json:"settle_rounds"`
	Writes       []Write    `json:"writes"`
	Elections    []Election `json:"elections"`
	Counts       Counts     `json:"counts"`
	Report       Report     `json:"report"`
	// Final is what was read back at the end.
	Final Final `json:"final"`
	// DelayEffects counts what link delays did in the run.
	DelayEffects DelayEffects `json:"delay_effects"`
	// ISRShrinks counts the ISR changes that left a replica out.
	ISRShrinks int `json:"isr_shrinks"`
	// Recording is the run's events for the stage to play back (not
	// exported: the seed and actions replay the run itself).
	Recording *Recording `json:"-"`
}

// Recording is a run's events for the stage to play back: the cluster as
// the schedule started and every event after, oldest first, through
// settling and the read-back; at most MaxRecorded of them (Truncated:
// the rest were left out, so the playback stops short of the end).
type Recording struct {
	Start     events.Snapshot
	Events    []events.Event
	Truncated bool
}

// MaxRecorded bounds a Recording: the events the stage's timeline keeps
// (panel.MaxHistory), a megabyte or two.
const MaxRecorded = 5000

// add records evs, up to MaxRecorded in all.
func (rec *Recording) add(evs []events.Event) {
	if room := MaxRecorded - len(rec.Events); len(evs) > room {
		evs, rec.Truncated = evs[:max(room, 0)], true
	}
	rec.Events = append(rec.Events, evs...)
}

// DelayEffects counts the faults link delays caused in a run
// (runner.countDelayEffects): ISR shrinks a leader proposed of a follower
// with a message still on its way between them, and session fencings of a
// running broker whose link with the controller was delayed and not cut.
// (On isr topics delays caused neither before stepped fetches and
// controller calls waited for them.)
type DelayEffects struct {
	ISRShrinks int `json:"isr_shrinks"`
	Fencings   int `json:"fencings"`
}

// Add adds o's counts to e.
func (e *DelayEffects) Add(o DelayEffects) {
	e.ISRShrinks += o.ISRShrinks
	e.Fencings += o.Fencings
}

// Export returns the run as indented JSON.
func (r *Result) Export() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// Import reads an exported run; only its seed, configuration and actions
// matter for a replay, and they are checked.
func Import(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: not an exported chaos run: %v", kerr.InvalidRequest, err)
	}
	if _, err := ParseConfig(string(r.Config)); err != nil {
		return nil, err
	}
	if len(r.Actions) == 0 || len(r.Actions) > MaxActions {
		return nil, errActions(len(r.Actions))
	}
	for _, a := range r.Actions {
		if err := a.validate(); err != nil {
			return nil, err
		}
	}
	return &r, nil
}

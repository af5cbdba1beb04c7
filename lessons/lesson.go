// Package lessons holds Tidemark's guided walkthroughs and runs them. A
// lesson is a script of steps executed on a real lab cluster through the
// same operations the API offers (produce with acks, crash, power loss,
// restart, cut a link, step a fetch, step time, change a config). Each step
// explains itself; key steps first ask the learner to predict the outcome,
// and which choice was right is decided by checking the real outcome (the
// logs, the ISR, the errors), not by a fixed answer. Every run keeps the
// event sequence number at each step boundary, so Back rebuilds the lanes
// as they were by replaying the run's events from its start.
//
// Every text is written in English, Simplified Chinese and Traditional
// Chinese; Kafka's terms (ISR, HW, LEO, acks, leader epoch) keep their names.
package lessons

import (
	"encoding/json"
	"fmt"
	"time"

	"tidemark/i18n"
	"tidemark/server/controller"
)

// Text is one text in every language Tidemark speaks. It may hold fmt verbs
// when a Step fills in real values (the same verbs in every language).
type Text struct {
	En   string // English
	Hans string // 简体中文
	Hant string // 繁體中文
}

// In returns the text in lang; English for an unknown language.
func (t Text) In(lang i18n.Lang) string {
	switch lang {
	case i18n.SimplifiedChinese:
		return t.Hans
	case i18n.TraditionalChinese:
		return t.Hant
	}
	return t.En
}

// F returns t with args formatted into every language; an argument that
// is itself a Text is formatted in the same language.
func (t Text) F(args ...any) Text {
	in := func(l i18n.Lang) []any {
		out := make([]any, len(args))
		for i, a := range args {
			if x, ok := a.(Text); ok {
				a = x.In(l)
			}
			out[i] = a
		}
		return out
	}
	return Text{fmt.Sprintf(t.En, in(i18n.English)...), fmt.Sprintf(t.Hans, in(i18n.SimplifiedChinese)...), fmt.Sprintf(t.Hant, in(i18n.TraditionalChinese)...)}
}

// MarshalJSON writes a Text as {"en":…,"zh-Hans":…,"zh-Hant":…}.
func (t Text) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[i18n.Lang]string{i18n.English: t.En, i18n.SimplifiedChinese: t.Hans, i18n.TraditionalChinese: t.Hant})
}

// T builds a Text from its three languages, in the order English,
// Simplified Chinese, Traditional Chinese.
func T(en, hans, hant string) Text { return Text{en, hans, hant} }

// Lesson is one walkthrough.
type Lesson struct {
	// ID is the URL name, "01-partitions" style; the number orders lessons.
	ID string
	// Number is the lesson's place on the learning path (the id's digits).
	Number int
	// Part is the path's section: storage, replication, failures,
	// delivery, comparisons or features (what Kafka builds on the log:
	// transactions, timestamps, compaction).
	Part string
	// BuildsOn lists the earlier lessons this one needs.
	BuildsOn []string
	// File is where the lesson was read from.
	File    string
	Title   Text
	Summary Text
	// Concepts names what the lesson teaches, as the write-ups name it.
	Concepts []string
	// Brokers is the size of the lesson's fresh cluster.
	Brokers int
	// Fencing is the controller's fencing rule; nil is the lab's default
	// (kraft-elr: Kafka 4.1, KRaft with ELR). The KIP-101 stories pin
	// zookeeper-pre-2.2, the ZooKeeper-era rule they happened under, and
	// say so; the lesson page shows the rule in force (lesson.rules).
	Fencing *controller.FencingRule
	// Setup creates the lesson's topics before the first step; its events
	// are part of the starting lanes.
	Setup func(e *Env) error
	Steps []Step
}

// Step is one step of a lesson.
type Step struct {
	Title   Text
	Explain Text
	// Predict, if set, is asked before the step runs.
	Predict *Prediction
	// Run performs the step on the cluster and reports what happened with
	// e.Say, e.Point and e.Check. An error means the lesson itself broke
	// (the run is marked failed), not that a lesson's check failed.
	Run func(e *Env) error
}

// Prediction is a multiple-choice question about a step's outcome.
type Prediction struct {
	Question Text
	Choices  []Choice
}

// Choice is one answer. Holds decides, after the step ran, whether the
// answer describes what really happened; exactly one choice should hold.
// Why explains why the answer is right or wrong, shown once it ran.
type Choice struct {
	ID    string
	Text  Text
	Why   Text
	Holds func(e *Env) bool
}

// Pointer points the learner at one thing a step concerned: a record, a
// marker (LEO, HW, leader epoch), a replica or a file.
type Pointer struct {
	Kind      string `json:"kind"` // record, truncated, hw, leo, epoch, replica, file, error
	Broker    int32  `json:"broker"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	File      string `json:"file,omitempty"`
	Value     string `json:"value,omitempty"`
	Note      string `json:"note,omitempty"`
}

// Check is one assertion about the real outcome and its verdict.
type Check struct {
	Name Text `json:"name"`
	Pass bool `json:"pass"`
	Got  Text `json:"got"`
}

// Outcome is what a step reported after it ran.
type Outcome struct {
	Says     []Text    `json:"says"`
	Pointers []Pointer `json:"pointers"`
	Checks   []Check   `json:"checks"`
}

// Speed is how fast a run animates a step's sub-actions: the pause between
// two of them, so the live panel shows each change in turn.
type Speed string

// The speeds.
const (
	SpeedInstant Speed = "instant"
	SpeedFast    Speed = "fast"
	SpeedNormal  Speed = "normal"
	SpeedSlow    Speed = "slow"
)

// Speeds lists every speed, fastest first.
func Speeds() []Speed { return []Speed{SpeedInstant, SpeedFast, SpeedNormal, SpeedSlow} }

// Pause returns the pause between sub-actions; ok is false for an unknown speed.
func (s Speed) Pause() (d time.Duration, ok bool) {
	switch s {
	case SpeedInstant:
		return 0, true
	case SpeedFast:
		return 80 * time.Millisecond, true
	case SpeedNormal:
		return 300 * time.Millisecond, true
	case SpeedSlow:
		return 900 * time.Millisecond, true
	}
	return 0, false
}

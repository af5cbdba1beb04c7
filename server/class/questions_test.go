package class

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tidemark/lessons"
)

// TestQuestionsPerStep: three learners answer a lesson's two questions;
// the sums per choice, the right first time, the changed answers (a
// second run answered otherwise) and the median time to answer come out
// per step; a free seat counts nowhere; every answer is an Attempt.
func TestQuestionsPerStep(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	at := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	wait := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	r, _, err := OpenRoster(filepath.Join(t.TempDir(), "roster"), "c", 4, at, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, name := range []string{"Ada", "Bob", "Cy"} {
		if _, _, err := r.Join(r.Seats()[i].Code, name); err != nil {
			t.Fatal(err)
		}
	}
	choice := func(id string) lessons.Choice {
		return lessons.Choice{ID: id, Text: lessons.T(id+" en", id+" 简", id+" 繁")}
	}
	lesson := &lessons.Lesson{ID: "01-x", Title: lessons.T("X", "X", "X"), Steps: []lessons.Step{
		{Predict: &lessons.Prediction{Question: lessons.T("q1", "问1", "問1"), Choices: []lessons.Choice{choice("a"), choice("b"), choice("c")}}},
		{}, // no prediction
		{Predict: &lessons.Prediction{Question: lessons.T("q2", "问2", "問2"), Choices: []lessons.Choice{choice("a"), choice("b")}}},
	}}
	// record is one lesson-run request's state: executed steps, answers.
	record := func(seat int, run string, executed int, answers ...string) {
		t.Helper()
		p := LessonProgress{Lesson: "01-x", Run: run, Executed: executed, Total: 3}
		for i, a := range answers {
			if a != "" {
				step := []int{0, 2}[i]
				p.Predictions = append(p.Predictions, Prediction{Step: step, Chosen: a, Right: a == "a", Correct: []string{"a"}})
			}
		}
		if err := r.RecordLesson(seat, p); err != nil {
			t.Fatal(err)
		}
	}
	record(1, "r1", 0) // Ada starts; step 0 waits
	record(2, "r2", 0)
	record(3, "r3", 0)
	wait(10 * time.Second)
	record(1, "r1", 1, "a") // 10 s
	wait(10 * time.Second)
	record(2, "r2", 1, "b") // 20 s
	wait(20 * time.Second)
	record(3, "r3", 1, "c") // 40 s
	record(3, "r3", 1, "c") // the same state again: nothing new
	// Bob runs the lesson again and answers a this time.
	record(2, "r4", 0)
	wait(5 * time.Second)
	record(2, "r4", 1, "a")
	record(2, "r4", 3, "a", "b")

	ls, xs := Questions(r.Seats(), []*lessons.Lesson{lesson})
	if len(ls) != 1 || len(ls[0].Questions) != 2 {
		t.Fatalf("stats: %+v", ls)
	}
	q := ls[0].Questions[0]
	counts := map[string]int{}
	for _, c := range q.Choices {
		counts[c.ID] = c.Count
		if c.Right != (c.ID == "a") {
			t.Errorf("choice %s right = %v", c.ID, c.Right)
		}
	}
	if q.Answered != 3 || counts["a"] != 2 || counts["b"] != 0 || counts["c"] != 1 || q.RightFirst != 1 || q.Changed != 1 ||
		q.MedianTook != 20*time.Second || q.Choices[0].Text.En != "a en" {
		t.Fatalf("step 1: %+v", q)
	}
	if q := ls[0].Questions[1]; q.Step != 2 || q.Answered != 1 || q.Choices[1].Count != 1 || q.RightFirst != 0 {
		t.Fatalf("step 3: %+v", q)
	}
	if len(xs) != len(Exercises) || xs[0].NotStarted != 3 {
		t.Fatalf("exercises: %+v", xs)
	}
	var n int
	for _, s := range r.Seats() {
		n += len(s.Attempts)
	}
	if n != 5 { // Ada 1, Bob 3 (b; a in his second run, and its step 3), Cy 1
		t.Fatalf("%d attempts, want 5", n)
	}
}

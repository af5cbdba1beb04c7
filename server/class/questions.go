package class

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"tidemark/lessons"
)

// The class at a glance, per question: for every prediction step of every
// lesson, how the seats answered; for every exercise, how far they are.
// Only seats somebody joined count.

// QuestionStats is one prediction step across the class.
type QuestionStats struct {
	Lesson   string
	Step     int // 0-based
	Question lessons.Text
	Choices  []ChoiceStats
	// Answered counts the seats with an answer; RightFirst those whose
	// first answer held; Changed those whose answer changed in a later run.
	Answered   int
	RightFirst int
	Changed    int
	// MedianTook is the median time to the first answer (0: none known).
	MedianTook time.Duration
}

// ChoiceStats is one choice of a question: how many seats' latest answer
// it is, and whether it held when the step ran (for any seat).
type ChoiceStats struct {
	ID    string
	Text  lessons.Text
	Count int
	Right bool
}

// LessonStats is a lesson's prediction steps across the class.
type LessonStats struct {
	Lesson    string
	Title     lessons.Text
	Questions []QuestionStats
}

// ExerciseStats is one exercise across the class: seats that passed it,
// that checked without passing, that did neither; and the most common
// wrong answer (the latest failed check of each seat still trying),
// how many gave it.
type ExerciseStats struct {
	Exercise   string
	Passed     int
	Trying     int
	NotStarted int
	// CommonWrong is the most common last failed check; nil when none.
	CommonWrong      *FailedCheck
	CommonWrongCount int
}

// Questions sums seats' answers per question of the lessons ls and per
// exercise.
func Questions(seats []Seat, ls []*lessons.Lesson) ([]LessonStats, []ExerciseStats) {
	var joined []Seat
	for _, s := range seats {
		if s.Name != "" {
			joined = append(joined, s)
		}
	}
	var out []LessonStats
	for _, l := range ls {
		st := LessonStats{Lesson: l.ID, Title: l.Title}
		for i, step := range l.Steps {
			if step.Predict == nil {
				continue
			}
			q := QuestionStats{Lesson: l.ID, Step: i, Question: step.Predict.Question}
			idx := map[string]int{}
			for _, c := range step.Predict.Choices {
				idx[c.ID] = len(q.Choices)
				q.Choices = append(q.Choices, ChoiceStats{ID: c.ID, Text: c.Text})
			}
			var took []time.Duration
			for _, s := range joined {
				p, ok := prediction(s, l.ID, i)
				if !ok {
					continue
				}
				q.Answered++
				if k, ok := idx[p.Chosen]; ok {
					q.Choices[k].Count++
				}
				for _, c := range p.Correct {
					if k, ok := idx[c]; ok {
						q.Choices[k].Right = true
					}
				}
				if p.RightFirst {
					q.RightFirst++
				}
				if p.Changes > 0 {
					q.Changed++
				}
				if p.Took > 0 {
					took = append(took, p.Took)
				}
			}
			q.MedianTook = median(took)
			st.Questions = append(st.Questions, q)
		}
		if len(st.Questions) > 0 {
			out = append(out, st)
		}
	}
	var xs []ExerciseStats
	for _, id := range Exercises {
		x := ExerciseStats{Exercise: id}
		wrong := map[string]int{}
		first := map[string]*FailedCheck{}
		for _, s := range joined {
			t := s.Tries[id]
			switch {
			case !s.Passed[id].IsZero():
				x.Passed++
			case t.Checks > 0:
				x.Trying++
				if f := t.LastFailed; f != nil {
					k := wrongKey(f)
					wrong[k]++
					if first[k] == nil {
						first[k] = f
					}
				}
			default:
				x.NotStarted++
			}
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range wrong {
				if !yield(k) {
					return
				}
			}
		}) {
			if wrong[k] > x.CommonWrongCount {
				x.CommonWrong, x.CommonWrongCount = first[k], wrong[k]
			}
		}
		xs = append(xs, x)
	}
	return out, xs
}

// wrongKey is what makes two failed checks the same wrong answer: the
// answer given, else the reason. A predicted HW counts by its reason: each
// seat has its own numbers, and the reason names the mistake.
func wrongKey(f *FailedCheck) string {
	if a := f.Answer; a != nil && a.HW == nil {
		k := "answer\x00" + a.Segment + "\x00" + string(a.Cause)
		for _, n := range []*int64{a.Position, a.Timestamp, a.Offset} {
			k += "\x00"
			if n != nil {
				k += strconv.FormatInt(*n, 10)
			}
		}
		return k
	}
	k := "reason\x00" + f.Key
	for _, a := range f.Args {
		k += "\x00" + a
	}
	return k
}

// prediction returns seat s's answer to step of lesson.
func prediction(s Seat, lesson string, step int) (Prediction, bool) {
	for _, p := range s.Lessons[lesson].Predictions {
		if p.Step == step && p.Chosen != "" {
			return p, true
		}
	}
	return Prediction{}, false
}

// median returns the median of ds (the mean of the middle two for an even
// count); 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.SortFunc(ds, cmp.Compare)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

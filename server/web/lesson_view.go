package web

import (
	"strconv"
	"strings"

	"tidemark/i18n"
	"tidemark/lessons"
	"tidemark/views"
)

// The lesson page's view model, built here from a run's state so that
// views renders words and numbers and imports nothing of the runtime.

// newLessonRunView turns a run's state into its page view in lang.
func newLessonRunView(lang i18n.Lang, st lessons.RunState) views.LessonRunView {
	v := views.LessonRunView{RunID: st.ID, Title: st.Title.In(lang), Cursor: st.Cursor, Total: st.Total, Done: st.Done,
		Live: st.Live, Speed: string(st.Speed), Speeds: speedNames(), Error: st.Error, Lanes: st.Lanes, Executed: st.Executed}
	step := func(s lessons.StepState) *views.LessonStepView {
		sv := &views.LessonStepView{Number: s.Index + 1, Title: s.Title.In(lang), Explain: s.Explain.In(lang), Ran: s.Ran, Error: s.Error}
		if p := s.Prediction; p != nil {
			sv.Question, sv.Chosen, sv.Right = p.Question.In(lang), p.Chosen, p.Right
			for _, c := range p.Choices {
				cv := views.LessonChoiceView{ID: c.ID, Text: c.Text.In(lang)}
				if c.Why != nil {
					cv.Why = c.Why.In(lang)
				}
				for _, h := range p.Correct {
					if h == c.ID {
						sv.Held = append(sv.Held, c.Text.In(lang))
						cv.Held = true
					}
				}
				sv.Choices = append(sv.Choices, cv)
			}
		}
		if o := s.Outcome; o != nil {
			for _, x := range o.Says {
				sv.Says = append(sv.Says, x.In(lang))
			}
			for _, p := range o.Pointers {
				sv.Pointers = append(sv.Pointers, views.LessonPointerView{Kind: p.Kind, Text: pointerText(lang, p), Broker: p.Broker, Topic: p.Topic, Partition: p.Partition})
			}
			for _, c := range o.Checks {
				sv.Checks = append(sv.Checks, views.LessonCheckView{Name: c.Name.In(lang), Pass: c.Pass, Got: c.Got.In(lang)})
			}
		}
		return sv
	}
	if st.Cursor > 0 && st.Cursor <= len(st.Steps) {
		v.Last = step(st.Steps[st.Cursor-1])
	}
	if st.Cursor < len(st.Steps) {
		v.Current = step(st.Steps[st.Cursor])
	}
	return v
}

func pointerText(lang i18n.Lang, p lessons.Pointer) string {
	var parts []string
	if p.Broker > 0 {
		parts = append(parts, i18n.T(lang, "lesson.broker", p.Broker))
	}
	if p.Topic != "" {
		parts = append(parts, p.Topic+"-"+strconv.Itoa(int(p.Partition)))
	}
	switch p.Kind {
	case "record", "truncated", "hw", "leo":
		parts = append(parts, "offset "+strconv.FormatInt(p.Offset, 10))
	}
	if p.File != "" {
		parts = append(parts, p.File)
	}
	if p.Value != "" {
		parts = append(parts, views.ShortValue(p.Value))
	}
	if p.Note != "" {
		parts = append(parts, "("+p.Note+")")
	}
	return strings.Join(parts, " · ")
}

// speedNames are the speeds a learner may choose, as the page names them.
func speedNames() []string {
	var out []string
	for _, sp := range lessons.Speeds() {
		out = append(out, string(sp))
	}
	return out
}

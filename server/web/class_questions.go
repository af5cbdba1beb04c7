package web

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/lessons"
	"tidemark/server/class"
	"tidemark/views"
)

// The class at a glance, per question (GET /api/v1/class/questions and
// the page /class/questions): how the class answered each prediction step
// of every lesson and how far it is in each exercise. Texts are in the
// request's language; no learner is named, so the page can be projected.

// QuestionsResponse is GET /api/v1/class/questions.
type QuestionsResponse struct {
	Lessons   []LessonQuestions   `json:"lessons"`
	Exercises []ExerciseQuestions `json:"exercises"`
}

// LessonQuestions is one lesson's prediction steps.
type LessonQuestions struct {
	Lesson string          `json:"lesson"`
	Title  string          `json:"title"`
	Steps  []StepQuestions `json:"steps"`
}

// StepQuestions is one prediction step across the class: its question,
// each choice with how many chose it (their latest answer), how many
// answered, were right first time, changed their answer in a later run,
// and the median seconds to the first answer (0: not known).
type StepQuestions struct {
	Step          int             `json:"step"` // 1-based, as the lesson shows it
	Question      string          `json:"question"`
	Answered      int             `json:"answered"`
	RightFirst    int             `json:"right_first"`
	Changed       int             `json:"changed"`
	MedianSeconds float64         `json:"median_seconds"`
	Choices       []ChoiceAnswers `json:"choices"`
}

// ChoiceAnswers is one choice: its text, how many chose it, and whether it
// held when the step ran (false until a seat has run the step).
type ChoiceAnswers struct {
	ID    string `json:"id"`
	Text  string `json:"text"`
	Count int    `json:"count"`
	Right bool   `json:"right"`
}

// ExerciseQuestions is one exercise across the class: seats that passed,
// that are trying (checked, not passed), that have not started, and the
// most common wrong answer among those trying (their last failed check),
// with how many gave it.
type ExerciseQuestions struct {
	Exercise         string `json:"exercise"`
	Title            string `json:"title"`
	Passed           int    `json:"passed"`
	Trying           int    `json:"trying"`
	NotStarted       int    `json:"not_started"`
	CommonWrong      string `json:"common_wrong,omitempty"`
	CommonWrongCount int    `json:"common_wrong_count"`
}

// failedText is a failed check as the dashboard says it: the answer, when
// the exercise asks for one, else why it failed.
func failedText(lang i18n.Lang, f *class.FailedCheck) string {
	x := exerciseRow(lang, class.ExerciseResult{Tries: class.Tries{LastFailed: f}})
	if x.LastAnswer != "" && (f.Answer == nil || f.Answer.HW == nil) { // a predicted HW: its reason (wrongKey)
		return x.LastAnswer
	}
	return x.LastReason
}

// questionsLessons are the lessons ?lesson= asks for: every lesson
// without it, else that one (404 NOT_FOUND when there is none).
func questionsLessons(c echo.Context) (string, []*lessons.Lesson, error) {
	id := c.QueryParam("lesson")
	if id == "" {
		return "", lessons.All(), nil
	}
	l := lessons.ByID(id)
	if l == nil {
		return "", nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: "no lesson " + strconv.Quote(clip.Bytes(id, 40)) + "; GET /api/v1/lessons lists them"}
	}
	return id, []*lessons.Lesson{l}, nil
}

func (s *Server) questions(lang i18n.Lang, ls []*lessons.Lesson) QuestionsResponse {
	for _, st := range s.opts.Class.Seats() {
		s.opts.Class.Grade(st.ID)
	}
	stats, xs := class.Questions(s.opts.Class.Seats(), ls)
	out := QuestionsResponse{Lessons: []LessonQuestions{}, Exercises: []ExerciseQuestions{}}
	for _, l := range stats {
		lq := LessonQuestions{Lesson: l.Lesson, Title: l.Title.In(lang), Steps: []StepQuestions{}}
		for _, q := range l.Questions {
			sq := StepQuestions{Step: q.Step + 1, Question: q.Question.In(lang), Answered: q.Answered, RightFirst: q.RightFirst,
				Changed: q.Changed, MedianSeconds: q.MedianTook.Seconds(), Choices: []ChoiceAnswers{}}
			for _, c := range q.Choices {
				sq.Choices = append(sq.Choices, ChoiceAnswers{ID: c.ID, Text: c.Text.In(lang), Count: c.Count, Right: c.Right})
			}
			lq.Steps = append(lq.Steps, sq)
		}
		out.Lessons = append(out.Lessons, lq)
	}
	for _, x := range xs {
		xq := ExerciseQuestions{Exercise: x.Exercise, Title: i18n.T(lang, "exercise."+x.Exercise+".title"), Passed: x.Passed,
			Trying: x.Trying, NotStarted: x.NotStarted, CommonWrongCount: x.CommonWrongCount}
		if x.CommonWrong != nil {
			xq.CommonWrong = failedText(lang, x.CommonWrong)
		}
		out.Exercises = append(out.Exercises, xq)
	}
	return out
}

func (s *Server) getQuestions(c echo.Context) error {
	_, ls, err := questionsLessons(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.questions(Lang(c), ls))
}

// questionsView is the page's view of q: bars as a share of the seats
// that answered (a choice) or of the class (an exercise).
func questionsView(name, lesson string, q QuestionsResponse) views.QuestionsView {
	v := views.QuestionsView{Name: name, Lesson: lesson}
	for _, l := range q.Lessons {
		lv := views.LessonQuestionsView{Lesson: l.Lesson, Title: l.Title}
		for _, st := range l.Steps {
			sv := views.StepQuestionsView{Step: st.Step, Question: st.Question, Answered: st.Answered, RightFirst: st.RightFirst,
				Changed: st.Changed}
			if st.MedianSeconds > 0 {
				sv.Median = strconv.FormatFloat(st.MedianSeconds, 'f', 0, 64)
			}
			for _, c := range st.Choices {
				sv.Choices = append(sv.Choices, views.ChoiceBar{ID: c.ID, Text: c.Text, Count: c.Count, Right: c.Right,
					Percent: percent(c.Count, st.Answered)})
			}
			lv.Steps = append(lv.Steps, sv)
		}
		v.Lessons = append(v.Lessons, lv)
	}
	for _, x := range q.Exercises {
		all := x.Passed + x.Trying + x.NotStarted
		v.Exercises = append(v.Exercises, views.ExerciseBar{ID: x.Exercise, Title: x.Title, Passed: x.Passed, Trying: x.Trying,
			NotStarted: x.NotStarted, PassedPercent: percent(x.Passed, all), TryingPercent: percent(x.Trying, all),
			CommonWrong: x.CommonWrong, CommonWrongCount: x.CommonWrongCount})
	}
	return v
}

// percent is n of all in whole percent; 0 when all is 0.
func percent(n, all int) int {
	if all == 0 {
		return 0
	}
	return (n*100 + all/2) / all
}

func (s *Server) questionsPage(c echo.Context) error {
	lang := Lang(c)
	name := s.opts.Class.Name()
	id, ls, err := questionsLessons(c)
	if err != nil {
		return err
	}
	v := questionsView(name, id, s.questions(lang, ls))
	return Render(c, http.StatusOK, views.ClassQuestions(s.page(c, i18n.T(lang, "class.questions.title", name)), v))
}

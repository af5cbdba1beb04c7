package server

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tidemark/server/class"
	"tidemark/server/web"
)

// answerFirstPrediction runs lesson 01-partitions for tok up to its first
// prediction, answers it with choice k (of the choices as the run lists
// them; each run shows them in its own order) and runs the step; it
// returns the step (1-based) and the choice id. A choice not is avoided.
func answerFirstPrediction(t *testing.T, l classLab, tok string, not string) (int, string) {
	t.Helper()
	status, body := l.call(t, "POST", "/api/v1/lessons/01-partitions/runs", tok, `{"speed":"instant"}`)
	var run struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &run) != nil {
		t.Fatalf("start: %d %s", status, body)
	}
	for range 20 {
		status, body = l.call(t, "GET", "/api/v1/lessons/runs/"+run.ID, tok, "")
		var st struct {
			Steps []struct {
				Index      int
				Current    bool
				Prediction *struct{ Choices []struct{ ID string } }
			}
		}
		if status != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("run: %d %s", status, body)
		}
		for _, s := range st.Steps {
			if !s.Current {
				continue
			}
			if s.Prediction != nil {
				id := s.Prediction.Choices[0].ID
				if id == not {
					id = s.Prediction.Choices[1].ID
				}
				if status, body = l.call(t, "POST", "/api/v1/lessons/runs/"+run.ID+"/predict", tok, `{"choice":"`+id+`"}`); status != 200 {
					t.Fatalf("predict: %d %s", status, body)
				}
				if status, body = l.call(t, "POST", "/api/v1/lessons/runs/"+run.ID+"/next", tok, ""); status != 200 {
					t.Fatalf("next: %d %s", status, body)
				}
				return s.Index + 1, id
			}
		}
		if status, body = l.call(t, "POST", "/api/v1/lessons/runs/"+run.ID+"/next", tok, ""); status != 200 {
			t.Fatalf("next: %d %s", status, body)
		}
	}
	t.Fatal("no prediction in 01-partitions")
	return 0, ""
}

// TestClassQuestions: two learners answer 01-partitions' first prediction,
// differently; GET /api/v1/class/questions counts each choice, with its
// text in the request's language, and the page draws the bars without a
// learner's name.
func TestClassQuestions(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "3")
	ada, bob := l.join(t, 1, "Ada"), l.join(t, 2, "Bob")
	step, a := answerFirstPrediction(t, l, ada, "")
	_, b := answerFirstPrediction(t, l, bob, a)
	status, body := l.call(t, "GET", "/api/v1/class/questions", l.teacher, "")
	var q web.QuestionsResponse
	if status != 200 || json.Unmarshal([]byte(body), &q) != nil {
		t.Fatalf("GET /api/v1/class/questions: %d %s", status, body)
	}
	var found *web.StepQuestions
	for _, lq := range q.Lessons {
		for i := range lq.Steps {
			if lq.Lesson == "01-partitions" && lq.Steps[i].Step == step {
				found = &lq.Steps[i]
			}
		}
	}
	if found == nil || found.Answered != 2 {
		t.Fatalf("step %d of 01-partitions: %+v\n%s", step, found, body)
	}
	right := 0
	for _, c := range found.Choices {
		if c.Right && (c.ID == a || c.ID == b) {
			right++
		}
		want := 0
		if c.ID == a || c.ID == b {
			want = 1
		}
		if c.Count != want || c.Text == "" || c.Text == c.ID {
			t.Errorf("choice %+v: count want %d", c, want)
		}
	}
	if found.RightFirst != right {
		t.Errorf("right first time %d, want %d", found.RightFirst, right)
	}
	if len(q.Exercises) != len(class.Exercises) || q.Exercises[0].NotStarted != 2 {
		t.Fatalf("exercises: %+v", q.Exercises)
	}
	if status, _ := l.call(t, "GET", "/api/v1/class/questions", ada, ""); status != http.StatusForbidden {
		t.Fatalf("a learner's GET /api/v1/class/questions: %d, want 403", status)
	}
	// The gradebook: one row per answer, with the choice's text and an
	// RFC 3339 time, and a summary row per seat.
	texts := map[string]string{}
	for _, c := range found.Choices {
		texts[c.ID] = c.Text
	}
	status, body = l.call(t, "GET", "/api/v1/class/export?format=json", l.teacher, "")
	var book web.ExportResponse
	if status != 200 || json.Unmarshal([]byte(body), &book) != nil || len(book.Attempts) != 2 || len(book.Seats) != 3 {
		t.Fatalf("the JSON export: %d %s", status, body)
	}
	for i, want := range []struct {
		name, choice string
	}{{"Ada", a}, {"Bob", b}} {
		at := book.Attempts[i]
		if _, err := time.Parse(time.RFC3339, at.At); err != nil || at.Name != want.name || at.Kind != "prediction" || at.Lesson != "01-partitions" ||
			at.Step != step || at.Choice != texts[want.choice] || at.Title == "" {
			t.Errorf("attempt %d: %+v, want %s choosing %q", i, at, want.name, texts[want.choice])
		}
	}
	if book.Seats[0].Predictions != 1 || book.Seats[0].LessonsStarted != 1 || book.Seats[2].Name != "" {
		t.Errorf("summary rows: %+v", book.Seats)
	}
	status, body = l.call(t, "GET", "/api/v1/class/export?format=csv", l.teacher, "")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if status != 200 || err != nil || len(rows) != 6 || rows[1][0] != "attempt" || rows[1][4] != "01-partitions" ||
		rows[1][8] != texts[a] || rows[3][0] != "summary" {
		t.Errorf("the CSV export (%v):\n%s", err, body)
	}

	// One lesson, for the projector.
	status, body = l.call(t, "GET", "/api/v1/class/questions?lesson=01-partitions", l.teacher, "")
	var one web.QuestionsResponse
	if status != 200 || json.Unmarshal([]byte(body), &one) != nil || len(one.Lessons) != 1 || one.Lessons[0].Lesson != "01-partitions" {
		t.Fatalf("one lesson's questions: %d %s", status, body)
	}
	if status, _ = l.call(t, "GET", "/api/v1/class/questions?lesson=nope", l.teacher, ""); status != http.StatusNotFound {
		t.Fatalf("an unknown lesson's questions: %d, want 404", status)
	}
	if status, body = l.call(t, "GET", "/class/questions?lesson=01-partitions", l.teacher, ""); status != 200 ||
		strings.Count(body, "<h2 data-lesson=") != 1 {
		t.Fatalf("one lesson's page: %d", status)
	}

	status, page := l.call(t, "GET", "/class/questions", l.teacher, "")
	if status != 200 || !strings.Contains(page, `data-choice="`+a+`" data-count="1"`) || strings.Contains(page, "Ada") || strings.Contains(page, "Bob") {
		t.Fatalf("the questions page: %d\n%s", status, page)
	}
}

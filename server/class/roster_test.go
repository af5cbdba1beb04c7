package class

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openRoster(t *testing.T, dir, name string, seats int) (*Roster, string) {
	t.Helper()
	r, teacher, err := OpenRoster(dir, name, seats, func() time.Time { return time.Unix(1000, 0) }, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return r, teacher
}

// TestRosterSurvivesRestart: the class, its seats and codes, joined names,
// seat tokens and progress come back after the roster is closed and opened
// again; the old teacher token stays valid next to the new one; a reset
// seat's code and token stop working.
func TestRosterSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "roster")
	r, teacher1 := openRoster(t, dir, "Distributed Systems 101", 3)
	seats := r.Seats()
	if len(seats) != 3 {
		t.Fatalf("%d seats, want 3", len(seats))
	}
	code := regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}$`)
	for _, s := range seats {
		if !code.MatchString(s.Code) {
			t.Fatalf("seat %d code %q is not XXXXX-XXXXX in Crockford base 32", s.ID, s.Code)
		}
	}
	id, tok, err := r.Join(" "+seats[1].Code[:5]+seats[1].Code[6:]+" ", " Ada ") // no dash, spaces: still the code
	if err != nil || id != 2 {
		t.Fatalf("Join = %d, %v; want seat 2", id, err)
	}
	if _, _, err := r.Join("AAAAA-AAAAA", "Eve"); !errors.Is(err, ErrBadCode) {
		t.Fatalf("Join with a wrong code: %v, want ErrBadCode", err)
	}
	if _, _, err := r.Join(seats[0].Code, "\x00bad"); !errors.Is(err, ErrBadName) {
		t.Fatalf("Join with a control character in the name: %v, want ErrBadName", err)
	}
	if err := r.RecordLesson(2, LessonProgress{Lesson: "01-log", Executed: 2, Total: 5,
		Predictions: []Prediction{{Step: 1, Chosen: "b", Right: true}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddSeats(2); err != nil {
		t.Fatal(err)
	}
	// Adding no seat is a bad request, not a class over its size.
	if _, err := r.AddSeats(0); !errors.Is(err, kerr.InvalidRequest) || errors.Is(err, ErrTooManySeats) {
		t.Fatalf("AddSeats(0) = %v, want INVALID_REQUEST", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	r, teacher2 := openRoster(t, dir, "", 1)
	defer r.Close()
	if r.Name() != "Distributed Systems 101" || r.Len() != 5 {
		t.Fatalf("after restart: %q with %d seats, want the class with 5", r.Name(), r.Len())
	}
	if !r.Teacher(teacher1) || !r.Teacher(teacher2) || teacher1 == teacher2 || r.Teacher(tok) {
		t.Fatal("teacher tokens: both starts' should be valid, a seat token not")
	}
	if got, ok := r.SeatOf(tok); !ok || got != 2 {
		t.Fatalf("SeatOf(seat 2's token) after restart = %d, %v", got, ok)
	}
	if _, ok := r.SeatOf(teacher1); ok {
		t.Fatal("a teacher token opened a seat")
	}
	s := r.Seats()[1]
	if s.Name != "Ada" || s.Code != seats[1].Code || s.Lessons["01-log"].Predictions[0].Chosen != "b" || s.Tokens != nil {
		t.Fatalf("seat 2 after restart: %+v", s)
	}
	fresh, err := r.Reset(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.SeatOf(tok); ok || fresh.Code == seats[1].Code || fresh.Name != "" || len(fresh.Lessons) != 0 {
		t.Fatalf("after reset: token valid %v, seat %+v", ok, fresh)
	}
	if _, _, err := r.Join(seats[1].Code, "Ada"); !errors.Is(err, ErrBadCode) {
		t.Fatalf("the old code after a reset: %v, want ErrBadCode", err)
	}
}

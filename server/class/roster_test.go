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

// TestJoinClaimsOnce: a join code claims its seat once; a second join with
// it is ErrSeatTaken (GROUP_AUTHORIZATION_FAILED) and the seat keeps its
// name. A new code (NewCode) claims it once more with the progress kept,
// the old code ends, and the first learner's token stays valid unless the
// seat is released.
func TestJoinClaimsOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "roster")
	r, _ := openRoster(t, dir, "c", 2)
	code := r.Seats()[0].Code
	_, alice, err := r.Join(code, "Alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RecordExercise(1, ExerciseFindOffset); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Join(code, "Mallory"); !errors.Is(err, ErrSeatTaken) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("a second join with a used code: %v, want ErrSeatTaken", err)
	}
	if s := r.Seats()[0]; s.Name != "Alice" || !s.Claimed() {
		t.Fatalf("after the refused join: %+v", s)
	}
	fresh, err := r.NewCode(1, false)
	if err != nil || fresh.Code == code || fresh.Claimed() || fresh.Name != "Alice" || fresh.Tokens != nil {
		t.Fatalf("NewCode: %+v, %v", fresh, err)
	}
	if _, _, err := r.Join(code, "Mallory"); !errors.Is(err, ErrBadCode) {
		t.Fatalf("the old code after NewCode: %v, want ErrBadCode", err)
	}
	_, alice2, err := r.Join(fresh.Code, "Alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.SeatOf(alice); !ok {
		t.Fatal("NewCode without release signed out the first device")
	}
	if s := r.Seats()[0]; !s.Claimed() || s.Passed[ExerciseFindOffset].IsZero() {
		t.Fatalf("after the new claim: %+v", s)
	}
	if _, _, err := r.Join(fresh.Code, "Mallory"); !errors.Is(err, ErrSeatTaken) {
		t.Fatalf("the new code used twice: %v", err)
	}
	released, err := r.NewCode(1, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{alice, alice2} {
		if _, ok := r.SeatOf(tok); ok {
			t.Fatal("a released seat's token still works")
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r, _ = openRoster(t, dir, "", 0)
	defer r.Close()
	if s := r.Seats()[0]; s.Claimed() || s.Code != released.Code || s.Passed[ExerciseFindOffset].IsZero() {
		t.Fatalf("a released seat after restart: %+v", s)
	}
	if _, _, err := r.Join(released.Code, "Bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.NewCode(3, false); !errors.Is(err, ErrNoSeat) {
		t.Fatalf("NewCode(3) of 2 seats: %v", err)
	}
}

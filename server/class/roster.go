// Package class runs a classroom: one lab process, a teacher and N seats.
// Each seat is a learner's private place in the lab — their own free-play
// cluster (a kept lab of server/labs that hibernates when idle), their own
// lesson and chaos runs, their progress and prediction answers.
//
// The roster (this file) is the class's durable state in badger under the
// data directory: the class name, the seats with their join codes and
// display names, hashes of the seat and teacher tokens (never the tokens),
// and each seat's progress. Seats (seats.go) runs the seats' clusters.
package class

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dgraph-io/badger/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/server/controller"
	"tidemark/server/kafkaerr"
)

// Limits of the roster.
const (
	// MaxSeats bounds a class: seats beyond what one machine runs would only
	// queue for the awake-cluster budget.
	MaxSeats = 500
	// MaxNameRunes bounds a learner's display name.
	MaxNameRunes = 40
	// keptTokens is how many tokens a seat (one per device it joined from)
	// or the teacher (one per start of the lab) keeps valid; the oldest go.
	keptTokens = 8
)

// Errors of the roster. Each wraps the Kafka error a client can act on.
var (
	// ErrBadCode: no seat has this join code (a reset gives a seat a new one).
	ErrBadCode = fmt.Errorf("%w: no seat has this join code", kerr.SaslAuthenticationFailed)
	// ErrSeatTaken: the code's seat was claimed already; only the teacher
	// can open it to a new claim (Roster.NewCode). It wraps
	// GROUP_AUTHORIZATION_FAILED: the request is well formed and the code
	// is real, but it no longer authorizes anyone to take the seat, which
	// somebody else holds — an authorization refusal about a membership,
	// as Kafka's is about a group, that retrying does not change.
	ErrSeatTaken = fmt.Errorf("%w: this seat is taken; ask the teacher for a new code", kerr.GroupAuthorizationFailed)
	// ErrBadName: the display name is empty, too long or not printable.
	ErrBadName = fmt.Errorf("%w: the name must be 1 to %d printable characters", kerr.InvalidRequest, MaxNameRunes)
	// ErrNoSeat: no such seat number.
	ErrNoSeat = fmt.Errorf("%w: no such seat", kerr.InvalidRequest)
	// ErrTooManySeats: adding would pass MaxSeats.
	ErrTooManySeats = fmt.Errorf("%w: a class has at most %d seats", kerr.PolicyViolation, MaxSeats)
)

// Seat is one seat as the roster keeps it. Tokens holds the SHA-256 of each
// valid seat token, so a copy of the data directory grants nothing.
type Seat struct {
	ID     int       `json:"seat"`
	Code   string    `json:"code"`
	Name   string    `json:"name,omitempty"`
	Joined time.Time `json:"joined,omitzero"`
	Tokens []string  `json:"tokens,omitempty"`
	// Lessons is the seat's progress per lesson id (its latest run).
	Lessons map[string]LessonProgress `json:"lessons,omitempty"`
	// Passed holds when the seat passed each exercise it passed.
	Passed map[string]time.Time `json:"passed,omitempty"`
	// Tries holds the learner's checks of each exercise they checked: the
	// teacher wants to see who is trying and failing, not only who passed.
	Tries map[string]Tries `json:"tries,omitempty"`
	// Attempts are the learner's answers and checks, oldest first (at most
	// maxAttempts).
	Attempts []Attempt `json:"attempts,omitempty"`
	// Open is set when the teacher gave a claimed seat a new code
	// (NewCode): that code may claim the seat once more, progress kept.
	Open bool `json:"open,omitempty"`
}

// Claimed reports whether the seat's code has been used: somebody joined
// and the teacher has not opened the seat again since. A claimed seat
// refuses every join (ErrSeatTaken).
func (s *Seat) Claimed() bool { return s.Name != "" && !s.Open }

// Tries is a seat's checks of one exercise: how many, how many of them did
// not pass, and the last one that did not.
type Tries struct {
	Checks     int          `json:"checks"`
	Failed     int          `json:"failed"`
	LastFailed *FailedCheck `json:"last_failed,omitempty"`
}

// FailedCheck is a check that did not pass: when, the answer given (for the
// exercises that ask for one) and why not, as an i18n key and arguments.
type FailedCheck struct {
	At     time.Time `json:"at"`
	Answer *Answer   `json:"answer,omitempty"`
	Key    string    `json:"key"`
	Args   []string  `json:"args,omitempty"`
}

// LessonProgress is how far a seat got in a lesson's latest run and what it
// predicted there.
type LessonProgress struct {
	Lesson string `json:"lesson"`
	// Run is the lesson run this progress is of (its latest).
	Run         string       `json:"run,omitempty"`
	Executed    int          `json:"executed"` // steps run
	Total       int          `json:"total"`
	Done        bool         `json:"done"`
	Predictions []Prediction `json:"predictions,omitempty"`
	Updated     time.Time    `json:"updated"`
	// Waiting is since when step Executed (the next one) has waited for
	// the learner: the time to answer its prediction counts from it.
	Waiting time.Time `json:"waiting,omitzero"`
}

// Prediction is a seat's answer to one step's prediction: the latest
// (Chosen, Right, of run Run), and over every run of the lesson the first
// answer, whether it was right and how often the answer changed.
type Prediction struct {
	Step   int    `json:"step"`
	Chosen string `json:"chosen"`
	Right  bool   `json:"right"`
	// Correct are the choices that held when the step ran.
	Correct []string `json:"correct,omitempty"`
	Run     string   `json:"run,omitempty"`
	// First is the seat's first answer to the step (any run), RightFirst
	// whether it held, Changes how many later answers differed from the
	// one before.
	First      string `json:"first,omitempty"`
	RightFirst bool   `json:"right_first"`
	Changes    int    `json:"changes,omitempty"`
	// Took is how long the first answer took, from the step waiting for
	// the learner to the answer; 0 when not known.
	Took time.Duration `json:"took,omitempty"`
}

// Attempt is one answer a learner gave, to a lesson step's prediction or
// an exercise's check, as the gradebook export lists them.
type Attempt struct {
	At       time.Time `json:"at"`
	Lesson   string    `json:"lesson,omitempty"`
	Step     int       `json:"step"` // 0-based; lessons only
	Choice   string    `json:"choice,omitempty"`
	Exercise string    `json:"exercise,omitempty"`
	Right    bool      `json:"right"`
	// Key and Args say an exercise check's outcome (why it failed), as
	// the dashboard does (an i18n key and arguments); Answer is the answer
	// checked, for the exercises that ask for one.
	Key    string   `json:"key,omitempty"`
	Args   []string `json:"args,omitempty"`
	Answer *Answer  `json:"answer,omitempty"`
}

// maxAttempts bounds the attempts a seat keeps (the oldest go): a class
// hour is a few hundred answers.
const maxAttempts = 1000

// meta is the class record.
type meta struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	// Teachers holds the SHA-256 of each valid teacher token.
	Teachers []string `json:"teachers"`
	// TeacherCreated is when each of Teachers was minted (by hash); a
	// token from before it was kept has none.
	TeacherCreated map[string]time.Time `json:"teacher_created,omitempty"`
}

// TeacherToken is one valid teacher token as the teacher may see it: an
// ID (the first 12 hex digits of its hash, which identify it without
// granting anything) and when it was minted (zero if unknown).
type TeacherToken struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// TeacherTokenID returns the ID TeacherTokens gives token.
func TeacherTokenID(token string) string { return hashToken(token)[:12] }

const (
	keyMeta    = "class"
	prefixSeat = "seat/"
)

func seatKey(id int) []byte { return fmt.Appendf(nil, "%s%06d", prefixSeat, id) }

// Roster is the class's durable state. Its methods are safe for concurrent
// use; mu guards everything below it, and every change is written to badger
// before the method returns.
type Roster struct {
	db  *badger.DB
	now func() time.Time

	mu     sync.Mutex
	meta   meta
	seats  []*Seat        // seats[i].ID == i+1
	codes  map[string]int // join code → seat
	tokens map[string]int // token hash → seat
	// changed is closed (and replaced) at every change: a live view
	// waits on it (Changes).
	changed chan struct{}
}

// Changes returns a channel closed at the roster's next change (a join, a
// seat added, reset or given a new code, progress, an answer, a check).
func (r *Roster) Changes() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Touch wakes the live views as a change would: something they show
// besides the roster changed (a seat came online).
func (r *Roster) Touch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notifyLocked()
}

// notifyLocked wakes whoever waits on Changes. r.mu is held.
func (r *Roster) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// OpenRoster opens (or creates) the roster in dir. A new class needs name;
// an existing one keeps its own name unless name differs, which renames it.
// The class gets at least seats seats. Every open mints a fresh teacher
// token, returned once: only its hash is stored.
func OpenRoster(dir, name string, seats int, now func() time.Time, log *slog.Logger) (*Roster, string, error) {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	if seats < 0 || seats > MaxSeats {
		return nil, "", fmt.Errorf("class: %d seats: want 0..%d", seats, MaxSeats)
	}
	db, err := controller.OpenBadger(dir, log)
	if err != nil {
		return nil, "", fmt.Errorf("class: opening the roster in %s: %w", dir, err)
	}
	r := &Roster{db: db, now: now, codes: map[string]int{}, tokens: map[string]int{}, changed: make(chan struct{})}
	if err := r.load(); err != nil {
		db.Close()
		return nil, "", err
	}
	if r.meta.Name == "" && name == "" {
		db.Close()
		return nil, "", errors.New("class: a new class needs a name")
	}
	if name != "" {
		r.meta.Name = name
	}
	if r.meta.Created.IsZero() {
		r.meta.Created = now()
	}
	teacher := newToken("tmt_")
	r.meta.Teachers = keepNewest(append(r.meta.Teachers, hashToken(teacher)))
	if r.meta.TeacherCreated == nil {
		r.meta.TeacherCreated = map[string]time.Time{}
	}
	r.meta.TeacherCreated[hashToken(teacher)] = now()
	for h := range r.meta.TeacherCreated {
		if !slices.Contains(r.meta.Teachers, h) {
			delete(r.meta.TeacherCreated, h)
		}
	}
	if err := r.putMeta(); err != nil {
		db.Close()
		return nil, "", err
	}
	if missing := seats - len(r.seats); missing > 0 {
		if _, err := r.AddSeats(missing); err != nil {
			db.Close()
			return nil, "", err
		}
	}
	return r, teacher, nil
}

// load reads the class record and every seat.
func (r *Roster) load() error {
	return r.db.View(func(txn *badger.Txn) error {
		if it, err := txn.Get([]byte(keyMeta)); err == nil {
			if err := it.Value(func(v []byte) error { return json.Unmarshal(v, &r.meta) }); err != nil {
				return fmt.Errorf("class: reading the class record: %w", err)
			}
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixSeat), PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			s := new(Seat)
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, s) }); err != nil {
				return fmt.Errorf("class: reading %s: %w", it.Item().Key(), err)
			}
			if s.ID != len(r.seats)+1 {
				return fmt.Errorf("class: seat %d stored where seat %d belongs", s.ID, len(r.seats)+1)
			}
			r.seats = append(r.seats, s)
			r.codes[s.Code] = s.ID
			for _, h := range s.Tokens {
				r.tokens[h] = s.ID
			}
		}
		return nil
	})
}

// Close closes the store.
func (r *Roster) Close() error { return r.db.Close() }

// Name returns the class's name.
func (r *Roster) Name() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meta.Name
}

// Teacher reports whether token is a valid teacher token.
func (r *Roster) Teacher(token string) bool {
	if token == "" {
		return false
	}
	h := hashToken(token)
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.meta.Teachers, h)
}

// TeacherTokens returns the valid teacher tokens, oldest first: each start
// mints one, and the last 8 stay valid until revoked.
func (r *Roster) TeacherTokens() []TeacherToken {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]TeacherToken, 0, len(r.meta.Teachers))
	for _, h := range r.meta.Teachers {
		out = append(out, TeacherToken{ID: h[:12], Created: r.meta.TeacherCreated[h]})
	}
	return out
}

// RevokeTeacher makes the teacher token with the given ID invalid at once
// (every browser and script holding it is refused from the next request);
// false if no valid token has that ID.
func (r *Roster) RevokeTeacher(id string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.meta.Teachers, func(h string) bool { return len(id) == 12 && strings.HasPrefix(h, id) })
	if i < 0 {
		return false, nil
	}
	old := r.meta
	h := r.meta.Teachers[i]
	r.meta.Teachers = slices.Delete(slices.Clone(r.meta.Teachers), i, i+1)
	r.meta.TeacherCreated = maps.Clone(r.meta.TeacherCreated)
	delete(r.meta.TeacherCreated, h)
	if err := r.putMeta(); err != nil {
		r.meta = old
		return false, err
	}
	return true, nil
}

// SeatOf returns the seat a seat token belongs to; false for any other
// token (a teacher's, a reset seat's old one, garbage).
func (r *Roster) SeatOf(token string) (int, bool) {
	if token == "" {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.tokens[hashToken(token)]
	return id, ok
}

// Join claims the free seat a join code belongs to: it gives the joiner a
// new token for that seat and sets its display name. A code claims once: a
// second join with it is ErrSeatTaken and the seat keeps its name (the
// join code is on the projected dashboard; it must not let anyone take a
// seat over). Another device, or a learner who lost their cookie, joins
// with a new code from the teacher (NewCode), which keeps the progress.
func (r *Roster) Join(code, name string) (int, string, error) {
	name = strings.TrimSpace(name)
	if !validName(name) {
		return 0, "", ErrBadName
	}
	code = NormalizeCode(code)
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.codes[code]
	if !ok {
		return 0, "", ErrBadCode
	}
	s := *r.seats[id-1]
	if s.Claimed() {
		return 0, "", ErrSeatTaken
	}
	token := newToken("tms_")
	h := hashToken(token)
	s.Tokens = append(slices.Clone(s.Tokens), h)
	var dropped []string
	if n := len(s.Tokens) - keptTokens; n > 0 {
		dropped, s.Tokens = s.Tokens[:n], s.Tokens[n:]
	}
	s.Name, s.Open = name, false
	if s.Joined.IsZero() {
		s.Joined = r.now()
	}
	if err := r.putSeat(&s); err != nil {
		return 0, "", err
	}
	*r.seats[id-1] = s
	for _, d := range dropped {
		delete(r.tokens, d)
	}
	r.tokens[h] = id
	r.notifyLocked()
	return id, token, nil
}

// AddSeats adds n seats with fresh join codes and returns them.
func (r *Roster) AddSeats(n int) ([]Seat, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < 1 {
		return nil, kafkaerr.WithKey(fmt.Errorf("%w: count %d: add at least one seat", kerr.InvalidRequest, n),
			"class.add.count", strconv.Itoa(MaxSeats-len(r.seats)))
	}
	if len(r.seats)+n > MaxSeats {
		return nil, kafkaerr.WithKey(fmt.Errorf("%w (%d now, %d asked for)", ErrTooManySeats, len(r.seats), n),
			"class.add.too-many", strconv.Itoa(MaxSeats), strconv.Itoa(len(r.seats)))
	}
	added := make([]Seat, 0, n)
	wb := r.db.NewWriteBatch()
	defer wb.Cancel()
	for i := range n {
		s := Seat{ID: len(r.seats) + i + 1, Code: r.freshCodeLocked(added)}
		v, _ := json.Marshal(s)
		if err := wb.Set(seatKey(s.ID), v); err != nil {
			return nil, err
		}
		added = append(added, s)
	}
	if err := wb.Flush(); err != nil {
		return nil, fmt.Errorf("class: storing seats: %w", err)
	}
	for i := range added {
		s := added[i]
		r.seats = append(r.seats, &s)
		r.codes[s.Code] = s.ID
	}
	r.notifyLocked()
	return added, nil
}

// freshCodeLocked returns a code no seat (nor one of pending) has.
func (r *Roster) freshCodeLocked(pending []Seat) string {
	for {
		c := newCode()
		if _, taken := r.codes[c]; !taken && !slices.ContainsFunc(pending, func(s Seat) bool { return s.Code == c }) {
			return c
		}
	}
}

// Reset empties a seat for a new learner: a new join code, every token
// revoked, no name and no progress. The caller resets its cluster.
func (r *Roster) Reset(id int) (Seat, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < 1 || id > len(r.seats) {
		return Seat{}, ErrNoSeat
	}
	old := r.seats[id-1]
	s := Seat{ID: id, Code: r.freshCodeLocked(nil)}
	if err := r.putSeat(&s); err != nil {
		return Seat{}, err
	}
	delete(r.codes, old.Code)
	for _, h := range old.Tokens {
		delete(r.tokens, h)
	}
	r.codes[s.Code] = id
	r.seats[id-1] = &s
	r.notifyLocked()
	return s, nil
}

// NewCode gives seat id a new join code that may claim it once more, the
// old code ending; the seat keeps its name (until the claim), cluster and
// progress. With release, the devices signed in to the seat are signed out
// too (every seat token revoked): the seat is for whoever claims it next.
// Without, they stay signed in (a learner moving to a second device).
func (r *Roster) NewCode(id int, release bool) (Seat, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < 1 || id > len(r.seats) {
		return Seat{}, ErrNoSeat
	}
	old := r.seats[id-1]
	s := *old
	s.Code, s.Open = r.freshCodeLocked(nil), true
	if release {
		s.Tokens = nil
	}
	if err := r.putSeat(&s); err != nil {
		return Seat{}, err
	}
	delete(r.codes, old.Code)
	r.codes[s.Code] = id
	if release {
		for _, h := range old.Tokens {
			delete(r.tokens, h)
		}
	}
	*r.seats[id-1] = s
	r.notifyLocked()
	out := s
	out.Tokens = nil
	return out, nil
}

// update changes a copy of seat id with change, which reports whether it
// changed anything, and stores it: on disk first, then in memory.
func (r *Roster) update(id int, change func(s *Seat) bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < 1 || id > len(r.seats) {
		return ErrNoSeat
	}
	s := *r.seats[id-1]
	if !change(&s) {
		return nil // nothing new: no write
	}
	if err := r.putSeat(&s); err != nil {
		return err
	}
	*r.seats[id-1] = s
	r.notifyLocked()
	return nil
}

// RecordLesson stores a seat's progress in a lesson run (p.Run, its
// latest): p.Predictions hold the run's answers (Step, Chosen, Right,
// Correct). They are merged with the answers of the seat's earlier runs
// of the lesson: the first answer to each step, whether it was right, how
// long it took and how often the answer changed are kept, and each new
// answer is an Attempt.
func (r *Roster) RecordLesson(id int, p LessonProgress) error {
	return r.update(id, func(s *Seat) bool {
		now := r.now()
		old, had := s.Lessons[p.Lesson]
		p.Waiting = old.Waiting
		if !had || old.Run != p.Run || old.Executed != p.Executed {
			p.Waiting = now // the next step waits from now
		}
		byStep := map[int]Prediction{}
		for _, q := range old.Predictions {
			byStep[q.Step] = q
		}
		var attempts []Attempt
		for i, q := range p.Predictions {
			prev, seen := byStep[q.Step]
			switch {
			case !seen:
				q.First, q.RightFirst = q.Chosen, q.Right
				if had && old.Run == p.Run && old.Executed == q.Step && !old.Waiting.IsZero() {
					q.Took = now.Sub(old.Waiting)
				}
			case prev.Run == p.Run: // this run's answer, recorded before
				q.First, q.RightFirst, q.Changes, q.Took = prev.First, prev.RightFirst, prev.Changes, prev.Took
			default: // an answer in a new run of the lesson
				q.First, q.RightFirst, q.Took, q.Changes = prev.First, prev.RightFirst, prev.Took, prev.Changes
				if q.Chosen != prev.Chosen {
					q.Changes++
				}
			}
			q.Run = p.Run
			if !seen || prev.Run != p.Run {
				attempts = append(attempts, Attempt{At: now, Lesson: p.Lesson, Step: q.Step, Choice: q.Chosen, Right: q.Right})
			}
			p.Predictions[i] = q
			delete(byStep, q.Step)
		}
		for _, q := range byStep { // answered in an earlier run, not (yet) in this one
			p.Predictions = append(p.Predictions, q)
		}
		slices.SortFunc(p.Predictions, func(a, b Prediction) int { return a.Step - b.Step })
		if had && old.Executed == p.Executed && old.Done == p.Done && old.Run == p.Run &&
			slices.EqualFunc(old.Predictions, p.Predictions, func(a, b Prediction) bool {
				return a.Step == b.Step && a.Chosen == b.Chosen && a.Right == b.Right && a.Run == b.Run && a.Changes == b.Changes
			}) {
			return false
		}
		p.Updated = now
		s.Lessons = maps.Clone(s.Lessons)
		if s.Lessons == nil {
			s.Lessons = map[string]LessonProgress{}
		}
		s.Lessons[p.Lesson] = p
		s.Attempts = appendAttempts(s.Attempts, attempts...)
		return true
	})
}

// appendAttempts appends to a copy of log, keeping the newest maxAttempts.
func appendAttempts(log []Attempt, more ...Attempt) []Attempt {
	if len(more) == 0 {
		return log
	}
	out := append(slices.Clip(log), more...)
	return out[max(0, len(out)-maxAttempts):]
}

// RecordExercise stores that a seat passed an exercise (the first time
// counts).
func (r *Roster) RecordExercise(id int, exercise string) error {
	return r.update(id, func(s *Seat) bool {
		if _, ok := s.Passed[exercise]; ok {
			return false
		}
		s.Passed = maps.Clone(s.Passed)
		if s.Passed == nil {
			s.Passed = map[string]time.Time{}
		}
		s.Passed[exercise] = r.now()
		s.Attempts = appendAttempts(s.Attempts, Attempt{At: r.now(), Exercise: exercise, Right: true, Key: "exercise.passed.text"})
		return true
	})
}

// RecordTry stores a learner's check of an exercise; failed, when it did
// not pass, says why.
func (r *Roster) RecordTry(id int, exercise string, failed *FailedCheck) error {
	return r.update(id, func(s *Seat) bool {
		s.Tries = maps.Clone(s.Tries)
		if s.Tries == nil {
			s.Tries = map[string]Tries{}
		}
		t := s.Tries[exercise]
		t.Checks++
		if failed != nil { // a pass is an Attempt when it is recorded (RecordExercise)
			a := Attempt{At: r.now(), Exercise: exercise, Key: failed.Key, Args: failed.Args}
			if ans := failed.Answer; ans != nil {
				a.Answer = ans
			}
			s.Attempts = appendAttempts(s.Attempts, a)
		}
		if failed != nil {
			t.Failed++
			f := *failed
			f.At = r.now()
			t.LastFailed = &f
		}
		s.Tries[exercise] = t
		return true
	})
}

// Result returns a seat's standing in an exercise: passed or not yet, and
// the learner's checks of it.
func (r *Roster) Result(id int, exercise string) (ExerciseResult, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id < 1 || id > len(r.seats) {
		return ExerciseResult{}, false
	}
	s := r.seats[id-1]
	out := ExerciseResult{Exercise: exercise, Key: "exercise." + exercise + ".pending", Tries: s.Tries[exercise]}
	if at, ok := s.Passed[exercise]; ok {
		out.Passed, out.At, out.Key = true, at.UTC().Format(time.RFC3339), "exercise.passed.text"
	}
	return out, true
}

// Seats returns a copy of every seat, by number, without token hashes.
func (r *Roster) Seats() []Seat {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Seat, len(r.seats))
	for i, s := range r.seats {
		out[i] = *s
		out[i].Tokens = nil
		out[i].Passed = maps.Clone(s.Passed)
		out[i].Tries = maps.Clone(s.Tries)
		out[i].Attempts = slices.Clone(s.Attempts)
		out[i].Lessons = make(map[string]LessonProgress, len(s.Lessons))
		for k, v := range s.Lessons {
			v.Predictions = slices.Clone(v.Predictions)
			out[i].Lessons[k] = v
		}
	}
	return out
}

// Len returns the number of seats.
func (r *Roster) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seats)
}

func (r *Roster) putSeat(s *Seat) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := r.db.Update(func(txn *badger.Txn) error { return txn.Set(seatKey(s.ID), v) }); err != nil {
		return fmt.Errorf("class: storing seat %d: %w", s.ID, err)
	}
	return nil
}

func (r *Roster) putMeta() error {
	v, err := json.Marshal(r.meta)
	if err != nil {
		return err
	}
	return r.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(keyMeta), v) })
}

func keepNewest(hashes []string) []string {
	if n := len(hashes) - keptTokens; n > 0 {
		return hashes[n:]
	}
	return hashes
}

// validName accepts 1..MaxNameRunes printable runes.
func validName(name string) bool {
	if name == "" || !utf8.ValidString(name) || utf8.RuneCountInString(name) > MaxNameRunes {
		return false
	}
	for _, c := range name {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// codeAlphabet is Crockford's base 32: no I, L, O or U to misread.
const codeAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newCode returns a join code: 10 characters of codeAlphabet from
// crypto/rand (50 bits: at the join rate limit, guessing one takes
// longer than any class lasts), written XXXXX-XXXXX.
func newCode() string {
	var b [10]byte
	rand.Read(b[:])
	out := make([]byte, 0, 11)
	for i, c := range b {
		if i == 5 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[c&31])
	}
	return string(out)
}

// NormalizeCode makes a typed code comparable: upper case, Crockford's
// look-alikes mapped (O→0, I and L→1), spaces dropped, the dash put back.
func NormalizeCode(code string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(code) {
		switch {
		case c == 'O':
			c = '0'
		case c == 'I' || c == 'L':
			c = '1'
		case c == '-' || c == ' ':
			continue
		}
		b.WriteRune(c)
	}
	s := b.String()
	if len(s) == 10 {
		s = s[:5] + "-" + s[5:]
	}
	return s
}

// newToken returns prefix and 32 random bytes, base64url.
func newToken(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// hashToken is what the roster stores of a token: tokens carry 256 random
// bits, so a plain SHA-256 (no salt, no stretching) cannot be reversed.
func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

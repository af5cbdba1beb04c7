package web

import (
	"errors"
	"testing"

	"tidemark/i18n"
	"tidemark/lessons"
)

// TestExperimentRefusalInLanguage: an experiment file the parser refuses
// is 400 INVALID_REQUEST whose key and args (class.lesson.refused) say
// what is wrong in the request's language, nested parts included; the
// message stays English.
func TestExperimentRefusalInLanguage(t *testing.T) {
	_, perr := lessons.ParseExperiment("bad.experiment", []byte("experiment bad\nduration 1s\nworkload w acks=2\n"))
	var e *Error
	if !errors.As(experimentError(i18n.TraditionalChinese, perr), &e) || e.Status != 400 || e.Code != "INVALID_REQUEST" {
		t.Fatalf("refusal: %v", perr)
	}
	const want = "bad.experiment 第 3 行：workload w：acks=2：應為 0、1 或 all"
	if e.Key != "class.lesson.refused" || learnerText(i18n.TraditionalChinese, e) != want || e.Message != "bad.experiment:3: workload w: acks=2: want 0, 1 or all" {
		t.Fatalf("got %q %q %q, want %q", e.Key, learnerText(i18n.TraditionalChinese, e), e.Message, want)
	}
}

package rulesplay

import (
	"testing"

	"tidemark/lessons"
)

// TestVocabularyAgrees: the rules-only queries lessons declares (their
// names and arguments, for the parser) are the ones implemented here, and
// the actions the lab lacks exist here.
func TestVocabularyAgrees(t *testing.T) {
	for name := range lessons.RulesLastQueries {
		if lastQueries[name] == nil {
			t.Errorf("lessons declares rules query %s; rulesplay lacks it", name)
		}
	}
	for name := range lastQueries {
		if _, ok := lessons.RulesLastQueries[name]; !ok {
			t.Errorf("rulesplay answers %s; lessons.RulesLastQueries lacks its arguments", name)
		}
	}
	for _, name := range []string{"notice", "elect"} {
		if rulesActions[name] == nil {
			t.Errorf("rules-only action %s missing", name)
		}
	}
}

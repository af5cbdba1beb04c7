// Package i18ntest holds the check that tests of several packages make on
// text shown in Chinese: the lessons' texts, the interface's catalogs and
// the event messages a lab publishes.
package i18ntest

import (
	"regexp"
	"strings"
)

// englishSentence is three or more English words in a row (Kafka's terms
// are single words or hyphenated: leader epoch, acks=all, min.insync.replicas).
var englishSentence = regexp.MustCompile(`[A-Za-z]{2,}(?:[ ,]+[A-Za-z]{2,}){2,}`)

// allowed are the English phrases a Chinese text may keep: names of
// things a learner types or reads in Kafka's own output.
// ("offset:" is the lanes' notation, as in 0:m1/e0.)
var allowed = regexp.MustCompile(`offset:|eligible leader replicas|log end offset|high watermark|unclean leader election|log start offset|leader epoch cache|NOT_[A-Z_]+`)

// halfWidth is ASCII punctuation next to Chinese characters.
var halfWidth = regexp.MustCompile(`[\p{Han}）。][,:;?!.]|[,:;?!(]\s*[\p{Han}（]`)

// ChineseProblems lists what is wrong with text shown in a Chinese
// language: an English sentence, "<nil>" or a formatting error ("%!"), or
// half-width punctuation next to Chinese. None for good text.
func ChineseProblems(text string) []string {
	var out []string
	s := allowed.ReplaceAllString(text, "")
	if m := englishSentence.FindString(s); m != "" {
		out = append(out, m+" in "+text)
	}
	if strings.Contains(s, "<nil>") || strings.Contains(s, "%!") {
		out = append(out, text)
	}
	if halfWidth.MatchString(s) {
		out = append(out, "half-width punctuation in "+text)
	}
	return out
}

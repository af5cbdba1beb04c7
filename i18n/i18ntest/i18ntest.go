// Package i18ntest holds the check that tests of several packages make on
// text shown in Chinese: the lessons' texts, the interface's catalogs and
// the event messages a lab publishes.
package i18ntest

import (
	"regexp"
	"strconv"
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

// placeholder is a fmt verb or a {query} a text is filled in with: what
// it becomes may be Chinese ("时钟%s": 运行中), so spacing ignores it.
var placeholder = regexp.MustCompile(`%[-+# 0-9.]*(\[[0-9]+\])?[a-zA-Z]|\{[^{}]*\}`)

// unspaced is a Latin letter or digit touching a Chinese character. Chinese
// technical writing, and most of the catalogues and lessons, put a space
// between Chinese and a Latin word or number ("的 segment", "3 个"); full-
// width punctuation and code marks (`, =, _) need none.
var unspaced = regexp.MustCompile(`\p{Han}[A-Za-z0-9]|[A-Za-z0-9]\p{Han}`)

// SpacingProblems lists the places in text, shown in a Chinese language,
// where a Latin word or number touches a Chinese character without a
// space (placeholders left out); none for good text.
func SpacingProblems(text string) []string {
	var out []string
	for _, m := range unspaced.FindAllString(placeholder.ReplaceAllString(text, "\x00"), -1) {
		out = append(out, "no space in "+strconv.Quote(m)+" in "+text)
	}
	return out
}

// ChineseProblems lists what is wrong with text shown in a Chinese
// language: an English sentence, "<nil>" or a formatting error ("%!"),
// half-width punctuation next to Chinese, or a Latin word or number
// touching Chinese (SpacingProblems). None for good text.
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
	return append(out, SpacingProblems(text)...)
}

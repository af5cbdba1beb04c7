// Package i18ntest holds the check that tests of several packages make on
// text shown in Chinese: the lessons' texts, the interface's catalogs and
// the event messages a lab publishes.
package i18ntest

import (
	"regexp"
	"slices"
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

// AllowedLatin are the Latin words a Chinese page may show besides
// Kafka's config names, its error codes and the lab's identifiers (see
// LatinWords): the reviewed short list, each with why. The Kafka terms are
// the ones the lessons' glossary keeps in English (lessons/script_test.go):
// Chinese Kafka books and docs write them so, and a learner meets them so
// in Kafka's logs; a page that said 主题 where every lesson says topic
// would teach two words for one thing.
var AllowedLatin = map[string]string{
	// Names.
	"Kafka":     "the product's name",
	"KRaft":     "Kafka's Raft-based metadata mode, a name",
	"Raft":      "the consensus algorithm's name",
	"ZooKeeper": "a product's name (the pre-KRaft metadata store)",
	"HDFS":      "a product's name (the write pipeline the pipeline protocol follows)",
	"NameNode":  "HDFS's metadata server, a name (lesson 23: the controller plays it)",
	"DataNode":  "HDFS's storage server, a name (lesson 23)",
	"Tidemark":  "the lab's name",
	"KIP":       "Kafka Improvement Proposal numbers (KIP-903), cited so in Chinese too",
	// Kafka's terms the lessons' glossary keeps in English.
	"broker":   "glossary: Chinese Kafka literature keeps broker",
	"Broker":   "glossary: broker at the start of a menu title",
	"topic":    "glossary: kept in English (the glossary refuses 主题)",
	"leader":   "glossary: kept in English",
	"follower": "glossary: kept in English",
	"offset":   "glossary: kept in English",
	"segment":  "glossary: kept in English",
	"epoch":    "glossary: leader epoch, broker epoch and partition epoch are Kafka's names",
	"unclean":  "glossary: unclean 选举, as unclean.leader.election.enable names it",
	"ISR":      "Kafka's abbreviation (in-sync replicas), kept in Chinese docs",
	"OSR":      "folklore abbreviation from books and blogs (out-of-sync replicas), labelled so where shown; not a Kafka field",
	"ELR":      "Kafka's abbreviation (eligible leader replicas, KIP-966)",
	"AR":       "folklore abbreviation (assigned replicas: AR = ISR + OSR); Kafka says replicas",
	"HW":       "Kafka's abbreviation (high watermark); the glossary refuses 高水位 for one word per concept",
	"LEO":      "Kafka's abbreviation (log end offset)",
	"acks":     "a producer config's name",
	// Names of code: a system call, Kafka's protocol requests as on the
	// wire, a command-line tool, an HTTP method, a host, formats.
	"fsync":                 "the system call's name",
	"sendfile":              "the system call's name (zero-copy)",
	"mmap":                  "the system call's name (Kafka maps its index files, lesson 05)",
	"CRC":                   "the checksum's name, as a record batch's header field says it (lesson 06)",
	"ListOffsets":           "Kafka protocol request name",
	"OffsetsForLeaderEpoch": "Kafka protocol request name (KIP-101, KIP-279)",
	"InitProducerId":        "Kafka protocol request name",
	"DeleteRecords":         "Kafka protocol request name (the log start offset moves)",
	"tombstone":             "Kafka's name for a null-value record that deletes its key under compaction",
	"compaction":            "glossary: log compaction (cleanup.policy=compact) kept in English, as 压缩 is compression (compression.type)",
	"null":                  "a null value, as Kafka's API and console consumer write it (a tombstone's value)",
	"LSO":                   "Kafka's abbreviation (last stable offset), as the fetch response and its consumer config docs name it",
	"CreateTime":            "a message.timestamp.type value, as Kafka names it",
	"LogAppendTime":         "a message.timestamp.type value, as Kafka names it",
	"TLS":                   "a protocol's name",
	"badger":                "the metadata store's name (the Go key-value store the controller keeps)",
	"Fetch":                 "Kafka protocol request name",
	"AlterPartition":        "Kafka protocol request name",
	"LeaderAndIsr":          "Kafka protocol request name",
	"kcat":                  "a command-line tool's name",
	"API":                   "the lab's HTTP API, as its paths (/api/v1) and Chinese docs name it",
	"GET":                   "an HTTP method, as a request is written (GET /api/v1/cluster)",
	"localhost":             "a host name",
	"JSON":                  "a format's name", "JSONL": "a format's name", "CSV": "a format's name", "SVG": "a format's name",
	"Prometheus": "a product's name (the metrics format)", "JavaScript": "a language's name", "WebAssembly": "a format's name",
	// Math and theory: f faults need f+1 or 2f+1 replicas; offset N, time
	// t; the CAP theorem's names.
	"f": "the number of faults tolerated, as the formulas f+1 and 2f+1 write it",
	"N": "a variable (offset N)", "t": "a variable (time t)",
	"CAP": "the CAP theorem's name", "CP": "CAP: consistent under partition", "AP": "CAP: available under partition",
	// Values a learner chooses or types in a control, shown as they are
	// sent: the fencing rules, the truncation rules, the replication
	// protocols, the chaos configurations, a lesson's speeds, acks=all and
	// booleans.
	"kraft-elr": "fencing.rule value", "kraft": "fencing.rule value", "zookeeper": "fencing.rule value", "kraft-elr-recovery": "fencing.rule value",
	"leader-epoch": "truncation.rule value", "high-watermark": "truncation.rule value",
	"isr": "replication.protocol value", "quorum": "replication.protocol value", "pipeline": "replication.protocol value",
	"strict": "chaos configuration", "acks1": "chaos configuration", "hw-truncation": "chaos configuration",
	"strict-pipeline": "chaos configuration", "strict-quorum": "chaos configuration",
	"instant": "lesson speed", "fast": "lesson speed", "normal": "lesson speed", "slow": "lesson speed",
	"all": "the acks value", "true": "a boolean config value", "false": "a boolean config value",
}

// configName is a Kafka-style config name (min.insync.replicas,
// replica.lag.time.max.ms), a file name (00000000000000000000.log) or a
// dotted identifier, possibly set to a value (acks=all); errorCode is
// Kafka's error name (NOT_LEADER_OR_FOLLOWER); code is what a page marks
// as code. They may be shown as they are.
var (
	configName = regexp.MustCompile(`[A-Za-z0-9_-]*\.[A-Za-z0-9_.-]*[A-Za-z0-9](=[^\s，。；：、（）,;]*)?|\b[a-z]+=[^\s，。；：、（）,;]*`)
	// flag is a command-line flag (--observe), a system call as its manual
	// page is named (read(2)) or a Kafka checkpoint file's name
	// (replication-offset-checkpoint); path a URL path (/api/v1/cluster):
	// code a learner types or finds on disk.
	flag      = regexp.MustCompile(`--[a-z][a-z-]*|\b[a-z]+\([0-9]\)|\b[a-z]+(-[a-z]+)*-checkpoint\b`)
	path      = regexp.MustCompile(`(^|[\s（(“「])/[A-Za-z0-9/._:?=&-]*`)
	errorCode = regexp.MustCompile(`\b[A-Z][A-Z0-9]*(_[A-Z0-9]+)+\b`)
	latinWord = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*`)
)

// LatinWords lists the Latin words of text, shown in a Chinese language,
// that a Chinese page must not show: everything but AllowedLatin, config
// names (with their values), Kafka's error codes, command-line flags, URL
// paths and the identifiers given (topic names, record values, client ids:
// what a learner typed or the lab named; each a whole word). A word that
// holds a digit (m1, p1-1, v3) is an identifier too. None for good text.
func LatinWords(text string, identifiers ...string) []string {
	s := flag.ReplaceAllString(text, " ")
	s = path.ReplaceAllString(s, " ")
	s = configName.ReplaceAllString(s, " ")
	s = errorCode.ReplaceAllString(s, " ")
	var out []string
	for _, w := range latinWord.FindAllString(s, -1) {
		if _, ok := AllowedLatin[w]; ok || strings.ContainsAny(w, "0123456789") || slices.Contains(identifiers, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

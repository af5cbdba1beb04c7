package lessons

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/kafkaname"
)

// valueKind is what a query's value is.
type valueKind int

const (
	vNum valueKind = iota
	vStr
	vList
	vBool
	vErr // a Kafka error, or none
)

// Value is a query's answer.
type Value struct {
	kind valueKind
	n    int64
	s    string
	list []string
	b    bool
	err  error
}

func num(n int64) Value        { return Value{kind: vNum, n: n} }
func str(s string) Value       { return Value{kind: vStr, s: s} }
func list(l []string) Value    { return Value{kind: vList, list: l} }
func truth(b bool) Value       { return Value{kind: vBool, b: b} }
func errValue(err error) Value { return Value{kind: vErr, err: err} }
func ints32(l []int32) Value {
	return list(mapS(l, func(x int32) string { return strconv.Itoa(int(x)) }))
}
func mapS[T any](l []T, f func(T) string) []string {
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, f(x))
	}
	return out
}

// Canon is the value as a script writes it: 5, m1, [m1 m2], yes, no,
// NOT_ENOUGH_REPLICAS, none.
func (v Value) Canon() string {
	switch v.kind {
	case vNum:
		return strconv.FormatInt(v.n, 10)
	case vList:
		return "[" + strings.Join(v.list, " ") + "]"
	case vBool:
		if v.b {
			return "yes"
		}
		return "no"
	case vErr:
		return errCode(v.err)
	}
	return v.s
}

// errCode is a Kafka error's name, none for no error; an error that is not
// Kafka's keeps its text (the lesson itself broke).
func errCode(err error) string {
	if err == nil {
		return "none"
	}
	return kafkaname.Text(err)
}

// Human is the value as a learner reads it, in every language: lists
// spaced, truths and errors in words, a Kafka error as its code and its
// description translated.
func (v Value) Human() Text {
	switch v.kind {
	case vList:
		if len(v.list) == 0 {
			return T("none", "无", "無")
		}
		s := strings.Join(v.list, " ")
		return T(s, s, s)
	case vBool:
		if v.b {
			return T("yes", "是", "是")
		}
		return T("no", "否", "否")
	case vErr:
		return ErrorText(v.err)
	}
	s := v.Canon()
	return T(s, s, s)
}

// kafkaErrors are the descriptions of the Kafka errors a lesson can meet,
// in every language (kerr's own are English only).
var kafkaErrors = map[string]Text{
	"NOT_ENOUGH_REPLICAS": T("fewer in-sync replicas than min.insync.replicas: the write is refused",
		"ISR 小于 min.insync.replicas，写入被拒绝", "ISR 小於 min.insync.replicas，寫入被拒絕"),
	"NOT_ENOUGH_REPLICAS_AFTER_APPEND": T("written to the log, but to fewer in-sync replicas than min.insync.replicas",
		"已写入 log，但 ISR 小于 min.insync.replicas", "已寫入 log，但 ISR 小於 min.insync.replicas"),
	"LEADER_NOT_AVAILABLE": T("the partition has no leader right now",
		"该分区目前没有 leader", "該分區目前沒有 leader"),
	"NOT_LEADER_OR_FOLLOWER": T("this broker is not the partition's leader",
		"该 broker 不是这个分区的 leader", "該 broker 不是這個分區的 leader"),
	"REQUEST_TIMED_OUT": T("the request timed out: whether the write was committed is unknown",
		"请求超时：不知道写入是否已提交", "請求逾時：不知道寫入是否已提交"),
	"OUT_OF_ORDER_SEQUENCE_NUMBER": T("the batch's sequence number is not the next one the leader expects from this producer",
		"这个批次的序号不是 leader 期待这个生产者发来的下一个", "這個批次的序號不是 leader 期待這個生產者發來的下一個"),
	"KAFKA_STORAGE_ERROR": T("the broker's disk failed while accessing the log",
		"访问 log 时 broker 的磁盘出错", "存取 log 時 broker 的磁碟出錯"),
	"UNKNOWN_TOPIC_OR_PARTITION": T("no such topic or partition", "没有这个 topic 或分区", "沒有這個 topic 或分區"),
	"OFFSET_OUT_OF_RANGE":        T("the offset is outside the log", "offset 超出 log 范围", "offset 超出 log 範圍"),
}

// ErrorText is an error as a learner reads it: OK for none, a Kafka error
// as its code and its description in each language.
func ErrorText(err error) Text {
	if err == nil {
		return T("OK", "成功", "成功")
	}
	code := errCode(err)
	if d, ok := kafkaErrors[code]; ok {
		return T("%s (%s)", "%s（%s）", "%s（%s）").F(code, d)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return T(code, code, code)
	}
	// Not a Kafka error: the lesson broke; the text is for the teacher.
	return T(code, "错误："+code, "錯誤："+code)
}

// compare evaluates got OP want for a term.
func compare(got Value, op string, want Value) (bool, error) {
	g, w := got.Canon(), want.Canon()
	if want.kind == vStr && got.kind == vList {
		w = normList(w)
	}
	switch op {
	case "==":
		return g == w, nil
	case "!=":
		return g != w, nil
	case "has", "lacks":
		if got.kind == vStr { // a text: whether it holds the words
			return strings.Contains(g, w) == (op == "has"), nil
		}
		if got.kind != vList {
			return false, errk("lesson.error.needs-list-text-got", op, g)
		}
		in := slices.Contains(got.list, strings.Trim(w, "[]"))
		return in == (op == "has"), nil
	}
	a, err1 := strconv.ParseInt(g, 10, 64)
	b, err2 := strconv.ParseInt(w, 10, 64)
	if err1 != nil || err2 != nil {
		return false, errk("lesson.error.compares-numbers-got", op, g, w)
	}
	switch op {
	case "<":
		return a < b, nil
	case "<=":
		return a <= b, nil
	case ">":
		return a > b, nil
	}
	return a >= b, nil
}

// normList writes a literal list the way Canon does: [a  b] → [a b].
func normList(s string) string {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return s
	}
	return "[" + strings.Join(strings.Fields(s[1:len(s)-1]), " ") + "]"
}

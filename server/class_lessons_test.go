package server

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"tidemark/server/web"
)

// ownLesson is a teacher's lesson: one step that produces and checks.
const ownLesson = `lesson 90-own-keys
part storage
brokers 1
title
  en: Our own keys
  zh-Hans: 我们自己的键
  zh-Hant: 我們自己的鍵
summary
  en: One record, one partition.
  zh-Hans: 一条记录，一个分区。
  zh-Hant: 一筆記錄，一個分區。
setup
  do create-topic own partitions=1 rf=1
step
  title
    en: Send one
    zh-Hans: 发送一条
    zh-Hant: 發送一筆
  explain
    en: We send k1.
    zh-Hans: 我们发送 k1。
    zh-Hant: 我們發送 k1。
  do produce-key own alice k1
  check partition own k1 == 0
    en: k1 is in partition 0
    zh-Hans: k1 在分区 0
    zh-Hant: k1 在分區 0
`

// upload posts a lesson file to /api/v1/class/lessons as tok in lang.
func upload(t *testing.T, l classLab, tok, lang, name, src string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(web.LessonUpload{Name: name, Source: src})
	req, err := http.NewRequest("POST", l.url+"api/v1/class/lessons", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept-Language", lang)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// lessonListed reports whether tok's lesson list holds id.
func lessonListed(t *testing.T, l classLab, tok, id string) bool {
	t.Helper()
	status, body := l.call(t, "GET", "/api/v1/lessons", tok, "")
	if status != 200 {
		t.Fatalf("GET /api/v1/lessons: %d %s", status, body)
	}
	return strings.Contains(body, `"`+id+`"`)
}

// TestClassLessonUpload: a teacher's lesson file with a mistake is refused
// with its line, in the teacher's language, and nothing is offered; a good
// one is in the learner's lessons at once, runs on the learner's seat, is
// refused to a learner, and is there again after a restart on the same
// data directory. The dashboard's form takes a file too.
func TestClassLessonUpload(t *testing.T) {
	dir := t.TempDir()
	l, stop := startClass(t, dir, "--seats", "1")
	ada := l.join(t, 1, "Ada")

	bad := strings.Replace(ownLesson, "  do produce-key own alice k1\n", "  do produce-key own alice k1\n  shout loudly\n", 1)
	status, body := upload(t, l, l.teacher, "zh-Hans", "own.lesson", bad)
	var refused web.LessonRefused
	if status != http.StatusBadRequest || json.Unmarshal([]byte(body), &refused) != nil {
		t.Fatalf("a bad lesson: %d %s", status, body)
	}
	if refused.Code != "INVALID_REQUEST" || refused.Line != 24 || refused.File != "own.lesson" ||
		refused.Text != `own.lesson 第 24 行：未知的关键字 "shout"` {
		t.Fatalf("the refusal: %+v", refused)
	}
	if _, body := upload(t, l, l.teacher, "zh-Hant", "", strings.Replace(ownLesson, "brokers 1\n", "", 1)); !strings.Contains(body, `"text":"upload.lesson 第 11 行：setup 出現在課程 id 和 brokers 之前"`) {
		t.Errorf("a lesson without brokers, in Traditional Chinese: %s", body)
	}
	if _, body := upload(t, l, l.teacher, "en", "x.lesson", strings.Replace(ownLesson, "90-own-keys", "01-partitions", 1)); !strings.Contains(body, `"text":"x.lesson, line 1: lesson id 01-partitions is taken by`) {
		t.Errorf("a lesson with a built-in lesson's id: %s", body)
	}
	// Every refusal of the lesson language reads in the class's language,
	// the nested parts (an action's arguments) too.
	oneChoice := strings.Replace(ownLesson, "  do produce-key own alice k1\n", "  question\n    en: Where?\n    zh-Hans: 在哪？\n    zh-Hant: 在哪？\n"+
		"  choice p0 when partition own k1 == 0\n    en: 0\n    zh-Hans: 0\n    zh-Hant: 0\n  do produce-key own alice k1\n", 1)
	if _, body := upload(t, l, l.teacher, "zh-Hans", "own.lesson", oneChoice); !strings.Contains(body, `"text":"own.lesson 第 14 行：一个 question 至少需要两个 choice"`) ||
		!strings.Contains(body, `"message":"own.lesson:14: a question needs at least two choices"`) {
		t.Errorf("a question with one choice, in Simplified Chinese: %s", body)
	}
	noValue := strings.Replace(ownLesson, "  do produce-key own alice k1\n", "  do produce-key own alice\n", 1)
	if _, body := upload(t, l, l.teacher, "zh-Hant", "own.lesson", noValue); !strings.Contains(body, `"text":"own.lesson 第 23 行：produce-key：缺少 `) ||
		!strings.Contains(body, "用法：do produce-key") || strings.Contains(body, `"text":"own.lesson 第 23 行：produce-key：missing`) {
		t.Errorf("an action missing an argument, in Traditional Chinese: %s", body)
	}
	if lessonListed(t, l, ada, "90-own-keys") {
		t.Fatal("a refused lesson is offered")
	}

	if status, body := upload(t, l, ada, "en", "own.lesson", ownLesson); status != http.StatusForbidden {
		t.Fatalf("a learner uploading: %d %s", status, body)
	}
	status, body = upload(t, l, l.teacher, "zh-Hant", "own.lesson", ownLesson)
	var added web.LessonAdded
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &added) != nil || added.ID != "90-own-keys" || added.Title != "我們自己的鍵" || added.Steps != 1 {
		t.Fatalf("a good lesson: %d %s", status, body)
	}
	if !lessonListed(t, l, ada, "90-own-keys") {
		t.Fatal("the uploaded lesson is not in the learner's lessons")
	}
	status, body = l.call(t, "POST", "/api/v1/lessons/90-own-keys/runs", ada, `{"speed":"instant"}`)
	var run struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &run) != nil {
		t.Fatalf("Ada starting the uploaded lesson: %d %s", status, body)
	}
	if status, body := l.call(t, "POST", "/api/v1/lessons/runs/"+run.ID+"/next", ada, ""); status != http.StatusOK || !strings.Contains(body, `"passed":true`) {
		t.Fatalf("Ada's step of the uploaded lesson: %d %s", status, body)
	}

	// The dashboard's form: a file, back to /class with the outcome.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("lesson", "own2.lesson")
	fw.Write([]byte(strings.NewReplacer("90-own-keys", "91-own-keys-again", "Our own keys", "Our keys again").Replace(ownLesson)))
	mw.Close()
	req, _ := http.NewRequest("POST", l.url+"class/lessons", &form)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+l.teacher)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !lessonListed(t, l, ada, "91-own-keys-again") {
		t.Fatalf("the dashboard's upload: %d, listed %v", resp.StatusCode, lessonListed(t, l, ada, "91-own-keys-again"))
	}
	if _, page := l.call(t, "GET", "/class", l.teacher, ""); !strings.Contains(page, `action="/class/lessons"`) {
		t.Error("the dashboard has no upload form")
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	l2, _ := startClass(t, dir)
	l.url = l2.url
	if !lessonListed(t, l, ada, "90-own-keys") || !lessonListed(t, l, ada, "91-own-keys-again") {
		t.Fatal("the uploaded lessons are gone after a restart")
	}
}

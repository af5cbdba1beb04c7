package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/web"
)

// TestClassSeatClaimedOnce: a second join with a used code is refused (403
// GROUP_AUTHORIZATION_FAILED, in the learner's language, telling them to
// ask the teacher) and the seat keeps its name; the teacher's new code
// (POST /api/v1/class/seats/{seat}/code) lets the learner in again with
// their progress, and release signs their devices out.
func TestClassSeatClaimedOnce(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	alice := l.join(t, 1, "Alice")
	if status, body := l.call(t, "POST", "/api/v1/exercises/find-offset/check", alice, ""); status != 200 {
		t.Fatalf("a try: %d %s", status, body)
	}
	status, body := l.call(t, "POST", "/api/v1/join", "", `{"code":"`+l.codes[0]+`","name":"Mallory"}`)
	if status != http.StatusForbidden || !strings.Contains(body, `"code":"GROUP_AUTHORIZATION_FAILED"`) || !strings.Contains(body, `"key":"class.join.taken"`) {
		t.Fatalf("a second join with seat 1's code: %d %s", status, body)
	}
	var cls web.ClassResponse
	_, body = l.call(t, "GET", "/api/v1/class", l.teacher, "")
	if json.Unmarshal([]byte(body), &cls) != nil || cls.Seats[0].Name != "Alice" || !cls.Seats[0].Claimed {
		t.Fatalf("seat 1 after the refused join: %s", body)
	}
	// The join page says it in the learner's language.
	req, _ := http.NewRequest("POST", l.url+"join", strings.NewReader(url.Values{"code": {l.codes[0]}, "name": {"Mallory"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", "zh-TW")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "請向老師要一個新的加入碼") {
		t.Fatalf("the join page with a used code: %d\n%s", resp.StatusCode, page)
	}
	// The dashboard shows no spent code.
	if _, body = l.call(t, "GET", "/class", l.teacher, ""); strings.Contains(body, l.codes[0]) {
		t.Fatal("the dashboard shows a claimed seat's spent code")
	}

	status, body = l.call(t, "POST", "/api/v1/class/seats/1/code", l.teacher, "")
	var seat web.SeatResponse
	if status != 200 || json.Unmarshal([]byte(body), &seat) != nil || seat.Code == l.codes[0] || seat.Claimed || seat.Name != "Alice" {
		t.Fatalf("a new code: %d %s", status, body)
	}
	if status, _ = l.call(t, "POST", "/api/v1/join", "", `{"code":"`+l.codes[0]+`","name":"Mallory"}`); status != http.StatusUnauthorized {
		t.Fatalf("the old code after a new one: %d, want 401", status)
	}
	l.codes[0] = seat.Code
	alice2 := l.join(t, 1, "Alice")
	if status, body = l.call(t, "GET", "/api/v1/exercises", alice2, ""); status != 200 || !strings.Contains(body, `"checks":1`) {
		t.Fatalf("the progress after a new code: %d %s", status, body)
	}
	if status, _ = l.call(t, "GET", "/api/v1/cluster", alice, ""); status != 200 {
		t.Fatalf("the first device after a new code: %d, want 200", status)
	}
	if status, _ = l.call(t, "POST", "/api/v1/class/seats/1/code", alice, ""); status != http.StatusForbidden {
		t.Fatalf("a learner asking for a new code: %d, want 403", status)
	}
	if status, body = l.call(t, "POST", "/api/v1/class/seats/1/code", l.teacher, `{"release":true}`); status != 200 {
		t.Fatalf("release: %d %s", status, body)
	}
	for _, tok := range []string{alice, alice2} {
		if status, _ = l.call(t, "GET", "/api/v1/cluster", tok, ""); status != http.StatusUnauthorized {
			t.Fatalf("a released seat's token: %d, want 401", status)
		}
	}
	if status, _ = l.call(t, "POST", "/api/v1/class/seats/2/code", l.teacher, ""); status != http.StatusNotFound {
		t.Fatalf("a new code for seat 2 of 1: %d, want 404", status)
	}
}

// TestClassDashboardResetConfirms: on the dashboard a seat's Reset is a link to
// a confirmation that says what a reset wipes, and only its form (confirm
// =yes) resets; a post without it resets nothing. No script is needed.
func TestClassDashboardResetConfirms(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	alice := l.join(t, 1, "Alice")
	teacherForm := func(path, form string) *http.Response {
		req, _ := http.NewRequest("POST", l.url+strings.TrimPrefix(path, "/"), strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "tidemark_teacher", Value: l.teacher})
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	_, body := l.call(t, "GET", "/class", l.teacher, "")
	if !strings.Contains(body, `href="/class?reset=1#reset"`) || strings.Contains(body, `data-testid="confirm-reset"`) {
		t.Fatal("the dashboard's Reset is not a link to a confirmation")
	}
	resp := teacherForm("/class/seats/1/reset", "")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/class?reset=1#reset" {
		t.Fatalf("an unconfirmed reset form: %d to %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if status, _ := l.call(t, "GET", "/api/v1/cluster", alice, ""); status != 200 {
		t.Fatalf("an unconfirmed reset form reset the seat: %d", status)
	}
	_, body = l.call(t, "GET", "/class?reset=1", l.teacher, "")
	if !strings.Contains(body, `data-testid="confirm-reset"`) || !strings.Contains(body, "exercise passes and tries") ||
		!strings.Contains(body, `name="confirm" value="yes"`) {
		t.Fatalf("the confirmation does not say what a reset wipes:\n%s", body)
	}
	if resp = teacherForm("/class/seats/1/reset", "confirm=yes"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/class" {
		t.Fatalf("a confirmed reset form: %d to %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if status, _ := l.call(t, "GET", "/api/v1/cluster", alice, ""); status != http.StatusUnauthorized {
		t.Fatalf("after a confirmed reset the old token: %d, want 401", status)
	}
	if resp = teacherForm("/class/seats/1/code", ""); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the new-code form: %d", resp.StatusCode)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestClassExerciseGradesTheLearnersWrites: with a broker the learner crashed,
// an acks=all write acknowledged to somebody else (a Kafka client on the
// machine, straight to the seat's listener) does not pass "acks=all with a
// broker down"; the learner's own acks=all produce through the API does.
func TestClassExerciseGradesTheLearnersWrites(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1", "--brokers", "3")
	ada := l.join(t, 1, "Ada")
	status, body := l.call(t, "GET", "/api/v1/cluster", ada, "")
	var cr web.ClusterResponse
	if status != 200 || json.Unmarshal([]byte(body), &cr) != nil || len(cr.Brokers) != 3 {
		t.Fatalf("GET /api/v1/cluster: %d %s", status, body)
	}
	if status, b := l.call(t, "POST", "/api/v1/brokers/3/crash", ada, ""); status != 200 {
		t.Fatalf("crash: %d %s", status, b)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cr.Brokers[0].Listener, cr.Brokers[1].Listener), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "demo", Partition: 0, Value: []byte("not Ada's")}).FirstErr(); err != nil {
		t.Fatalf("a Kafka client's acks=all write with broker 3 down: %v", err)
	}
	passed := func() bool {
		t.Helper()
		status, body := l.call(t, "GET", "/api/v1/exercises", ada, "")
		var list []web.ExerciseResponse
		if status != 200 || json.Unmarshal([]byte(body), &list) != nil {
			t.Fatalf("Ada's exercises: %d %s", status, body)
		}
		return slices.ContainsFunc(list, func(r web.ExerciseResponse) bool { return r.ID == "acks-all-one-down" && r.Passed })
	}
	if passed() {
		t.Fatal("an acks=all write Ada did not send passed her exercise")
	}
	// The ISR has shrunk (the write above went through): Ada's own write is
	// taken at once; a retriable refusal is retried, bounded.
	for i := 0; ; i++ {
		status, b := l.call(t, "POST", "/api/v1/topics/demo/records", ada, `{"partition":0,"acks":"all","records":[{"value":"x"}]}`)
		if status == 200 {
			break
		}
		if i == 50 || status != http.StatusServiceUnavailable {
			t.Fatalf("Ada's acks=all produce with broker 3 down: %d %s", status, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !passed() {
		t.Fatal("Ada's own acks=all write with broker 3 down did not pass")
	}
}

// TestClassExerciseISRRejoin, on the real cluster: the learner crashes broker 3,
// restarts it and waits until it is back in every ISR; a wrong reason
// fails, the one the event list gives passes, and the dashboard shows the
// failed answer in words.
func TestClassExerciseISRRejoin(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1", "--brokers", "3")
	ada := l.join(t, 1, "Ada")
	inEveryISR := func(id int32) (bool, bool) { // in every ISR, in none
		t.Helper()
		status, body := l.call(t, "GET", "/api/v1/topics", ada, "")
		var tr struct {
			Topics []struct {
				Partitions []struct{ ISR []int32 }
			}
		}
		if status != 200 || json.Unmarshal([]byte(body), &tr) != nil {
			t.Fatalf("GET /api/v1/topics: %d %s", status, body)
		}
		all, none := true, true
		for _, tp := range tr.Topics {
			for _, p := range tp.Partitions {
				in := slices.Contains(p.ISR, id)
				all, none = all && in, none && !in
			}
		}
		return all, none
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; !cond(); i++ {
			if i == 300 {
				t.Fatalf("waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	check := func(cause string) web.ExerciseResponse {
		t.Helper()
		status, body := l.call(t, "POST", "/api/v1/exercises/isr-rejoin/check", ada, `{"cause":"`+cause+`"}`)
		var r web.ExerciseResponse
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("check: %d %s", status, body)
		}
		return r
	}
	if r := check("fenced"); r.Passed || r.Key != "exercise.isr-rejoin.none" {
		t.Fatalf("before any fault: %+v", r)
	}
	if status, b := l.call(t, "POST", "/api/v1/brokers/3/crash", ada, ""); status != 200 {
		t.Fatalf("crash: %d %s", status, b)
	}
	wait("broker 3 out of every ISR", func() bool { _, none := inEveryISR(3); return none })
	if status, b := l.call(t, "POST", "/api/v1/brokers/3/restart", ada, ""); status != 200 {
		t.Fatalf("restart: %d %s", status, b)
	}
	wait("broker 3 back in every ISR", func() bool { all, _ := inEveryISR(3); return all })
	// Why it left, as the learner reads it in the event list.
	_, evs := l.call(t, "GET", "/api/v1/events?limit=500", ada, "")
	m := regexp.MustCompile(`"isr_changes":\[\{"cause":"([a-z-]+)","broker":3\}`).FindStringSubmatch(evs)
	if m == nil {
		t.Fatalf("no event says why broker 3 left:\n%s", evs)
	}
	wrong := "lagged"
	if m[1] == wrong {
		wrong = "restarted"
	}
	if r := check(wrong); r.Passed || r.Key != "exercise.isr-rejoin.wrong" {
		t.Fatalf("a wrong reason: %+v", r)
	}
	if r := check(m[1]); !r.Passed {
		t.Fatalf("the reason the events give, %s: %+v", m[1], r)
	}
	if _, page := l.call(t, "GET", "/class", l.teacher, ""); !strings.Contains(page, map[string]string{"lagged": "it lagged: it had not caught up", "restarted": "registered again as a new incarnation"}[wrong]) {
		t.Error("the dashboard does not show the failed answer in words")
	}
	if _, page := l.call(t, "GET", "/exercises", ada, ""); !strings.Contains(page, `<option value="session-expired">`) {
		t.Error("the exercises page offers no reasons")
	}
}

// TestClassExerciseFindTimestamp, on the real cluster: two records produced a
// moment apart; the second's timestamp and offset pass, the first's
// timestamp is refused (no index to read), a wrong offset fails.
func TestClassExerciseFindTimestamp(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	ada := l.join(t, 1, "Ada")
	check := func(answer string) web.ExerciseResponse {
		t.Helper()
		status, body := l.call(t, "POST", "/api/v1/exercises/find-timestamp/check", ada, answer)
		var r web.ExerciseResponse
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("check: %d %s", status, body)
		}
		return r
	}
	if r := check(`{"timestamp":1,"offset":1}`); r.Passed || r.Key != "exercise.find-timestamp.no-records" {
		t.Fatalf("before any record: %+v", r)
	}
	for i := range 2 {
		if status, b := l.call(t, "POST", "/api/v1/topics/demo/records", ada, `{"partition":0,"acks":"1","records":[{"value":"v`+strconv.Itoa(i)+`"}]}`); status != 200 {
			t.Fatalf("produce: %d %s", status, b)
		}
		time.Sleep(20 * time.Millisecond) // the next record's timestamp is later
	}
	var cr web.ConsumeResponse
	for i := 0; ; i++ { // the records are readable once the HW has passed them
		status, body := l.call(t, "GET", "/api/v1/topics/demo/partitions/0/records?offset=0", ada, "")
		if status != 200 || json.Unmarshal([]byte(body), &cr) != nil {
			t.Fatalf("consume: %d %s", status, body)
		}
		if len(cr.Records) == 2 || i == 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(cr.Records) != 2 || cr.Records[1].Timestamp <= cr.Records[0].Timestamp {
		t.Fatalf("records: %+v", cr.Records)
	}
	ts := func(i int) string { return strconv.FormatInt(cr.Records[i].Timestamp, 10) }
	if r := check(`{"timestamp":` + ts(0) + `,"offset":0}`); r.Passed || r.Key != "exercise.find-timestamp.first" {
		t.Fatalf("the first record's timestamp: %+v", r)
	}
	if r := check(`{"timestamp":` + ts(1) + `,"offset":0}`); r.Passed || r.Key != "exercise.find-timestamp.wrong" {
		t.Fatalf("a wrong offset: %+v", r)
	}
	if r := check(`{"timestamp":` + ts(1) + `}`); r.Passed || r.Key != "exercise.find-timestamp.answer" {
		t.Fatalf("no offset: %+v", r)
	}
	if r := check(`{"timestamp":` + ts(1) + `,"offset":1}`); !r.Passed {
		t.Fatalf("the right answer: %+v", r)
	}
	if _, page := l.call(t, "GET", "/class", l.teacher, ""); !strings.Contains(page, "timestamp "+ts(1)+", offset —") {
		t.Error("the dashboard does not show the last failed answer")
	}
}

// exercisePassed reports whether tok's seat passed exercise id.
func exercisePassed(t *testing.T, l classLab, tok, id string) bool {
	t.Helper()
	status, body := l.call(t, "GET", "/api/v1/exercises", tok, "")
	var list []web.ExerciseResponse
	if status != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("the exercises: %d %s", status, body)
	}
	return slices.ContainsFunc(list, func(r web.ExerciseResponse) bool { return r.ID == id && r.Passed })
}

// TestClassExercisePredictHW: the seat's question comes with its LEOs; no
// answer and the leader's LEO fail (the latter with its own reason), the
// HW passes, and the dashboard shows the failed answer.
func TestClassExercisePredictHW(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2")
	ada := l.join(t, 1, "Ada")
	status, body := l.call(t, "GET", "/api/v1/exercises", ada, "")
	var list []web.ExerciseResponse
	if status != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("the exercises: %d %s", status, body)
	}
	i := slices.IndexFunc(list, func(r web.ExerciseResponse) bool { return r.ID == "predict-hw" })
	if i < 0 || list[i].Question == nil || list[i].Passed {
		t.Fatalf("predict-hw: %+v", list)
	}
	q := list[i].Question
	check := func(body string) web.ExerciseResponse {
		t.Helper()
		status, b := l.call(t, "POST", "/api/v1/exercises/predict-hw/check", ada, body)
		var r web.ExerciseResponse
		if status != 200 || json.Unmarshal([]byte(b), &r) != nil {
			t.Fatalf("check %s: %d %s", body, status, b)
		}
		return r
	}
	if r := check(""); r.Passed || r.Key != "exercise.predict-hw.answer" {
		t.Fatalf("no answer: %+v", r)
	}
	if r := check(fmt.Sprintf(`{"hw":%d}`, q.LEO[1])); r.Passed || r.Key != "exercise.predict-hw.leader-leo" {
		t.Fatalf("the leader's LEO: %+v", r)
	}
	if _, page := l.call(t, "GET", "/class", l.teacher, ""); !strings.Contains(page, fmt.Sprintf("HW %d", q.LEO[1])) {
		t.Error("the dashboard does not show the failed answer")
	}
	if _, page := l.call(t, "GET", "/exercises", ada, ""); !strings.Contains(page, fmt.Sprintf("LEO of leader broker 1: %d.", q.LEO[1])) {
		t.Error("the exercises page does not ask the question")
	}
	if r := check(fmt.Sprintf(`{"hw":%d}`, q.LEO[2])); !r.Passed {
		t.Fatalf("follower 2's LEO, the smallest in the ISR: %+v", r)
	}
}

// TestClassExerciseFPlusOne, on the real cluster: RF-3 topics, one under
// the quorum protocol. With one broker down both take writes (no pass);
// with two down the ISR topic still does and the quorum topic refuses:
// passed.
func TestClassExerciseFPlusOne(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1", "--brokers", "3")
	ada := l.join(t, 1, "Ada")
	for _, body := range []string{`{"name":"isr3","partitions":1,"replication_factor":3}`,
		`{"name":"raft3","partitions":1,"replication_factor":3,"configs":{"replication.protocol":"quorum"}}`} {
		if status, b := l.call(t, "POST", "/api/v1/topics", ada, body); status != 201 && status != 200 {
			t.Fatalf("create %s: %d %s", body, status, b)
		}
	}
	produce := func(topic string, timeoutMs int) int {
		t.Helper()
		status, _ := l.call(t, "POST", "/api/v1/topics/"+topic+"/records", ada,
			fmt.Sprintf(`{"partition":0,"acks":"all","records":[{"value":"x"}],"timeout_ms":%d}`, timeoutMs))
		return status
	}
	for _, topic := range []string{"isr3", "raft3"} {
		if s := produce(topic, 10000); s != 200 {
			t.Fatalf("%s with every broker up: %d", topic, s)
		}
	}
	crash := func(id string) {
		t.Helper()
		if status, b := l.call(t, "POST", "/api/v1/brokers/"+id+"/crash", ada, ""); status != 200 {
			t.Fatalf("crash %s: %d %s", id, status, b)
		}
	}
	crash("3")
	if s := produce("isr3", 10000); s != 200 {
		t.Fatalf("isr3 with broker 3 down: %d", s)
	}
	if exercisePassed(t, l, ada, "f-plus-one") {
		t.Fatal("passed with one broker down")
	}
	crash("2")
	if s := produce("raft3", 1500); s == 200 {
		t.Fatal("the quorum topic took a write with 2 of 3 down")
	}
	if exercisePassed(t, l, ada, "f-plus-one") {
		t.Fatal("passed before the ISR topic's write")
	}
	if s := produce("isr3", 10000); s != 200 {
		t.Fatalf("isr3 with brokers 2 and 3 down: %d", s)
	}
	if !exercisePassed(t, l, ada, "f-plus-one") {
		t.Fatal("the ISR topic kept writing and the quorum's did not, with the same two down: not passed")
	}
}

// TestClassExerciseHWTruncation, on the real cluster, as lesson 14 tells
// it: under the ZooKeeper-era fencing rule before 2.2, the clock paused,
// an acks=all write to each of an old-rule topic and a leader-epoch topic
// (RF 2); the follower restarts, and the leader crashes before the
// follower fetches again. Not passed after the restart alone; passed once
// the follower leads.
func TestClassExerciseHWTruncation(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1", "--brokers", "2")
	ada := l.join(t, 1, "Ada")
	must := func(method, path, body string) string {
		t.Helper()
		status, b := l.call(t, method, path, ada, body)
		if status/100 != 2 {
			t.Fatalf("%s %s %s: %d %s", method, path, body, status, b)
		}
		return b
	}
	must("PUT", "/api/v1/cluster/fencing-rule", `{"rule":"zookeeper-pre-2.2"}`)
	for _, rule := range []string{"high-watermark", "leader-epoch"} {
		must("POST", "/api/v1/topics", `{"name":"`+rule+`","partitions":1,"replication_factor":2,"configs":{"truncation.rule":"`+rule+`"}}`)
	}
	var tr struct {
		Partitions []struct {
			Leader int32
			ISR    []int32
		}
	}
	for i := 0; ; i++ { // both partitions led and in sync
		ok := true
		for _, topic := range []string{"high-watermark", "leader-epoch"} {
			if json.Unmarshal([]byte(must("GET", "/api/v1/topics/"+topic, "")), &tr) != nil || len(tr.Partitions) != 1 || tr.Partitions[0].Leader < 1 || len(tr.Partitions[0].ISR) != 2 {
				ok = false
			}
		}
		if ok {
			break
		}
		if i == 100 {
			t.Fatal("the topics have no leader with both replicas in sync")
		}
		time.Sleep(50 * time.Millisecond)
	}
	leaders := map[string]int32{}
	for _, topic := range []string{"high-watermark", "leader-epoch"} {
		json.Unmarshal([]byte(must("GET", "/api/v1/topics/"+topic, "")), &tr)
		leaders[topic] = tr.Partitions[0].Leader
	}
	if leaders["high-watermark"] != leaders["leader-epoch"] {
		t.Skipf("the two partitions have different leaders (%v): the story needs one leader", leaders)
	}
	leader := strconv.Itoa(int(leaders["leader-epoch"]))
	follower := strconv.Itoa(3 - int(leaders["leader-epoch"]))
	must("POST", "/api/v1/clock/pause", "")
	// acks=all writes wait for the follower's fetches, which the paused
	// clock leaves to the learner.
	send := func(value string) {
		t.Helper()
		done := make(chan string, 2)
		for _, topic := range []string{"high-watermark", "leader-epoch"} {
			go func() {
				status, b := l.call(t, "POST", "/api/v1/topics/"+topic+"/records", ada, `{"partition":0,"acks":"all","records":[{"value":"`+value+`"}],"timeout_ms":20000}`)
				done <- fmt.Sprint(status, " ", b)
			}()
		}
		for range 2 {
			select {
			case r := <-done:
				if !strings.HasPrefix(r, "200 ") {
					t.Fatalf("acks=all %s: %s", value, r)
				}
			case <-time.After(100 * time.Millisecond):
				must("POST", "/api/v1/brokers/"+follower+"/fetch", "")
			}
		}
	}
	send("m1")
	must("POST", "/api/v1/brokers/"+follower+"/fetch", "")
	send("m2")
	must("POST", "/api/v1/brokers/"+follower+"/crash", "")
	must("POST", "/api/v1/brokers/"+follower+"/restart", "")
	if exercisePassed(t, l, ada, "hw-truncation") {
		t.Fatal("passed with the follower's restart alone")
	}
	must("POST", "/api/v1/brokers/"+leader+"/crash", "")
	must("POST", "/api/v1/clock/step", `{"ms":2100}`)
	for i := 0; !exercisePassed(t, l, ada, "hw-truncation"); i++ {
		if i == 100 {
			_, evs := l.call(t, "GET", "/api/v1/events?limit=200", ada, "")
			t.Fatalf("the follower leads both topics and the exercise has not passed; events:\n%s", evs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What the learner sees: the old rule's topic lost m2, the other kept it.
	values := func(topic string) string {
		var rr struct{ Records []struct{ Value string } }
		json.Unmarshal([]byte(must("GET", "/api/v1/topics/"+topic+"/partitions/0/records", "")), &rr)
		var vs []string
		for _, r := range rr.Records {
			vs = append(vs, r.Value)
		}
		return strings.Join(vs, " ")
	}
	if hw, le := values("high-watermark"), values("leader-epoch"); strings.Contains(hw, "m2") || le != "m1 m2" {
		t.Errorf("after the follower took over: high-watermark %q, leader-epoch %q; want m2 gone from the first only", hw, le)
	}
}

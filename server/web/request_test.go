package web

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"tidemark/i18n"
)

// TestDuplicateNamesRefused: a body naming a field twice in one object, at
// any depth, is a 400 INVALID_REQUEST naming the field, in the learner's
// language too (encoding/json kept the last value and said nothing); a
// body naming the same field in two objects is fine.
func TestDuplicateNamesRefused(t *testing.T) {
	for _, c := range []struct{ body, field string }{
		{`{"acks":"1","acks":"all","records":[{"value":"x"}]}`, `"acks"`},
		{`{"acks":"1","records":[{"value":"x"},{"key":"k","value":"y","key":"k"}]}`, `"records/1/key"`},
		{`{"acks":"1","records":[{"value":"x"}],"timeout_ms":5,"partition":0,"timeout_ms":6}`, `"timeout_ms"`},
	} {
		req := loopbackRequest("POST", "/api/v1/topics/demo/records", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		var pr ProduceRequest
		err := decodeJSON(echo.New().NewContext(req, httptest.NewRecorder()), &pr)
		var e *Error
		if !errors.As(err, &e) || e.Status != 400 || e.Code != "INVALID_REQUEST" || e.Key != "form.duplicate-key" ||
			len(e.Args) != 1 || e.Args[0] != c.field || e.Message != "malformed JSON body: "+c.field+" is given twice" {
			t.Errorf("%s: %+v, want INVALID_REQUEST naming %s", c.body, err, c.field)
			continue
		}
		for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			if got, want := learnerText(l, e), i18n.T(l, "form.duplicate-key", c.field); got != want || !strings.Contains(got, c.field) {
				t.Errorf("%s in %s: %q, want %q", c.body, l, got, want)
			}
		}
	}
	ok := `{"acks":"1","records":[{"key":"k","value":"x"},{"key":"k","value":"x"}]}`
	req := loopbackRequest("POST", "/api/v1/topics/demo/records", strings.NewReader(ok))
	req.Header.Set("Content-Type", "application/json")
	var pr ProduceRequest
	if err := decodeJSON(echo.New().NewContext(req, httptest.NewRecorder()), &pr); err != nil || len(pr.Records) != 2 {
		t.Fatalf("the same fields in two records: %v", err)
	}
}

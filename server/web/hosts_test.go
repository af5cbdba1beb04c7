package web

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"tidemark/events"
)

// TestDNSRebindingRefused sends, over a real listener, requests whose Host
// and Origin are both rebind.evil.example at the lab's port — what a page on
// that site gets once its name resolves to 127.0.0.1 — to every kind of
// route: pages, the read API, static files, /ws, the form action and the
// mutating API. Each is refused with 421 before any handler runs; the same
// requests with a loopback Host are served.
func TestDNSRebindingRefused(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	srv := httptest.NewServer(newTestServer(t, lab, Options{}).Handler())
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	evil := "rebind.evil.example:" + port

	send := func(method, path, host, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Accept-Language", "zh-CN")
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if strings.HasPrefix(body, "{") {
				req.Header.Set("Content-Type", "application/json")
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	routes := []struct{ method, path, body string }{
		{"GET", "/", ""},
		{"GET", "/topics/demo/partitions/0", ""},
		{"GET", "/api/v1/cluster", ""},
		{"GET", "/static/app.css", ""},
		{"GET", "/ws", ""},
		{"POST", "/ui/action", "action=crash&broker=1"},
		{"DELETE", "/api/v1/topics/demo", ""},
		{"POST", "/api/v1/brokers/1/crash", ""},
		{"POST", "/api/v1/topics", `{"name":"x"}`},
		{"GET", "/no/such/route", ""},
	}
	for _, r := range routes {
		if resp := send(r.method, r.path, evil, r.body); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("%s %s with Host %s: %d, want 421", r.method, r.path, evil, resp.StatusCode)
		}
		if resp := send(r.method, r.path, "127.0.0.1:"+port, r.body); resp.StatusCode == http.StatusMisdirectedRequest {
			t.Errorf("%s %s with a loopback Host: 421", r.method, r.path)
		}
	}

	// /ws through a websocket client, and the JSON body: code and a
	// translated message.
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	_, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Host": {evil}, "Origin": {"http://" + evil}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("/ws with Host %s: err %v, resp %v", evil, err, resp)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/brokers/1/crash", nil)
	req.Host = evil
	req.Header.Set("Accept-Language", "zh-CN")
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	var body errorBody
	if err := json.NewDecoder(r2.Body).Decode(&body); err != nil || body.Error == nil {
		t.Fatalf("body: %v", err)
	}
	if body.Error.Code != CodeForbiddenHost || !strings.Contains(body.Error.Message, "rebind.evil.example") || !strings.Contains(body.Error.Message, "主机") {
		t.Fatalf("error %+v: want %s with a Simplified Chinese message naming the host", body.Error, CodeForbiddenHost)
	}
	if got := len(lab.Snapshot().Topics); got != 1 {
		t.Fatalf("%d topics after the refused requests, want demo still there", got)
	}
}

// TestHostPolicy: loopback names at the served port, the operator's extra
// names (any port, or the one given), nothing else.
func TestHostPolicy(t *testing.T) {
	p, err := newHostPolicy([]string{"lab.example", "Tunnel.example:9000"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"localhost:8080":           true,
		"LOCALHOST:8080":           true,
		"127.0.0.1:8080":           true,
		"127.0.0.2:8080":           true,
		"[::1]:8080":               true,
		"[::1]":                    true,
		"localhost":                true,
		"localhost:9999":           false, // another port: not this listener
		"rebind.evil.example:8080": false,
		"evil.localhost.example":   false,
		"10.0.0.1:8080":            false,
		"":                         false,
		"lab.example:1234":         true,
		"lab.example":              true,
		"tunnel.example:9000":      true,
		"tunnel.example:9001":      false,
	} {
		if got := p.allows(host, "8080"); got != want {
			t.Errorf("allows(%q) = %v, want %v", host, got, want)
		}
	}
	for _, bad := range []string{"", "http://x", "a/b"} {
		if _, err := newHostPolicy([]string{bad}); err == nil {
			t.Errorf("allowed host %q accepted", bad)
		}
	}
}

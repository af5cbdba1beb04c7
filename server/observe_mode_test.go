package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestParseObserveFlags(t *testing.T) {
	c, err := parseFlags([]string{"--observe", "k1:9092, k2:9093", "--observe-sasl-mechanism", "scram-sha-512",
		"--observe-sasl-user", "u", "--observe-sasl-password", "p", "--observe-tls"}, io.Discard)
	if err != nil || !slices.Equal(c.observe.seeds, []string{"k1:9092", "k2:9093"}) || c.observe.mechanism() == nil {
		t.Fatalf("observe flags = %+v, %v", c.observe, err)
	}
	if tc, err := c.observe.tlsConfig(); err != nil || tc == nil {
		t.Fatalf("--observe-tls: %v %v", tc, err)
	}
	t.Setenv(observePasswordEnv, "from-env")
	c, err = parseFlags([]string{"--observe", "k1:9092", "--observe-sasl-mechanism", "plain", "--observe-sasl-user", "u"}, io.Discard)
	if err != nil || c.observe.saslPassword != "from-env" {
		t.Fatalf("password from %s: %q, %v", observePasswordEnv, c.observe.saslPassword, err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, args := range [][]string{
		{"--observe-tls"}, {"--observe-sasl-user", "u"},
		{"--observe", "k:9092", "--observe-sasl-mechanism", "gssapi", "--observe-sasl-user", "u"},
		{"--observe", "k:9092", "--observe-sasl-mechanism", "plain"},
		{"--observe", "k:9092", "--observe-tls-ca", filepath.Join(t.TempDir(), "missing.pem")},
		{"--observe", "k:9092", "--observe-tls-ca", notPEM},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// TestRunObserveKfake runs observe mode as Main does against franz-go's
// kfake cluster: the overview shows its topic and no fault controls, the
// API's read routes answer, every mutating request is refused with
// READ_ONLY, and /metrics reports it as cluster="observed".
func TestRunObserveKfake(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, "payments"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	cfg, err := parseFlags([]string{"--addr", "127.0.0.1:0", "--observe", strings.Join(kc.ListenAddrs(), ",")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.logger = quietLogger()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan string, 1)
	var out bytes.Buffer
	go func() { done <- runObserve(ctx, cfg, &out, func(url string) { started <- url }) }()
	var url string
	select {
	case url = <-started:
	case err := <-done:
		t.Fatalf("runObserve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("observe mode did not start")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runObserve after cancel: %v", err)
		}
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get("")
	// The fault controls: no broker table buttons, controls section, time
	// controls or link menus; the stage's node menus are hidden by the
	// stylesheet (body class observe), as the live panel draws them too.
	if code != 200 || !strings.Contains(page, "payments-1") || !strings.Contains(page, `<body class="observe"`) ||
		!strings.Contains(page, `data-testid="observed"`) || strings.Contains(page, `class="controls"`) ||
		strings.Contains(page, `id="stage-step"`) || strings.Contains(page, `data-testid="linkctl-`) ||
		strings.Contains(page, `<button type="submit" data-broker=`) {
		t.Fatalf("overview: %d\n%s", code, page)
	}
	code, body := get("api/v1/observe")
	var info struct {
		Seeds   []string `json:"seeds"`
		LogDirs []any    `json:"log_dirs"`
	}
	if err := json.Unmarshal([]byte(body), &info); code != 200 || err != nil || len(info.Seeds) != 2 || len(info.LogDirs) == 0 {
		t.Fatalf("/api/v1/observe: %d %v %s", code, err, body)
	}
	if code, body := get("api/v1/topics/payments/partitions/0"); code != 200 {
		t.Fatalf("partition: %d %s", code, body)
	}
	if code, body := get("metrics"); code != 200 || !strings.Contains(body, `kafka_controller_kafkacontroller_activecontrollercount{broker=`) ||
		!strings.Contains(body, `cluster="observed"`) {
		t.Fatalf("/metrics: %d %.2000s", code, body)
	}
	for _, path := range []string{"api/v1/brokers/0/crash", "api/v1/topics", "ui/action", "api/v1/clock/pause"} {
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(b), `"READ_ONLY"`) {
			t.Errorf("POST /%s: %d %s", path, resp.StatusCode, b)
		}
	}
	if !strings.Contains(out.String(), "observing the Kafka cluster at") {
		t.Errorf("output %q", out.String())
	}
}

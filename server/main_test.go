package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tidemark/server/cluster"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.addr != "127.0.0.1:8080" || c.dataDir != "./data" || c.brokers != 3 || c.kafkaPort != 9092 || c.historyBytes != 256<<20 {
		t.Fatalf("defaults = %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--addr", "[::1]:0", "--data-dir", "/tmp/x", "--brokers", "5", "--kafka-port", "19092", "--paused"}, io.Discard)
	if err != nil || c.addr != "[::1]:0" || c.brokers != 5 || c.kafkaPort != 19092 || c.dataDir != "/tmp/x" || !c.paused {
		t.Fatalf("parsed = %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--allowed-hosts", "lab.example, tunnel.example:9000", "--max-partition-replicas", "300"}, io.Discard)
	if err != nil || !slices.Equal(c.allowedHosts, []string{"lab.example", "tunnel.example:9000"}) || c.maxPartitionReplicas != 300 {
		t.Fatalf("limits = %q %d, %v", c.allowedHosts, c.maxPartitionReplicas, err)
	}
	c, err = parseFlags([]string{"--connections-max-idle", "90s", "--max-connections-per-ip", "0"}, io.Discard)
	if err != nil || c.connectionsMaxIdle != 90*time.Second || offIfZero(c.maxConnectionsPerIP) != -1 {
		t.Fatalf("listener limits = %v %d, %v", c.connectionsMaxIdle, c.maxConnectionsPerIP, err)
	}
	if c, err = parseFlags([]string{"--history-bytes", "0"}, io.Discard); err != nil || c.historyBytes != 0 {
		t.Fatalf("--history-bytes 0 (no history) = %d, %v", c.historyBytes, err)
	}
	for _, args := range [][]string{
		{"--max-partition-replicas", "-1"},
		{"--connections-max-idle", "-1s"}, {"--max-connections-per-ip", "-2"},
		{"--brokers", "0"}, {"--brokers", "8"}, {"--brokers", "x"},
		{"--kafka-port", "-1"}, {"--kafka-port", "65534", "--brokers", "3"},
		{"--addr", "0.0.0.0:8080"}, {"--addr", "example.com:80"}, {"--addr", "nonsense"},
		{"--data-dir", ""}, {"--nope"}, {"extra"},
		{"--history-bytes", "-1"}, {"--history-bytes", "65536"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// quietLogger keeps the cluster's warnings out of test output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startRun runs the lab as Main does, on free ports in dir, and returns its
// URL, the cluster, and a stop function that cancels it and returns run's error.
func startRun(t *testing.T, dir string, args ...string) (string, *cluster.Cluster, *bytes.Buffer, func() error) {
	t.Helper()
	return startRunWith(t, dir, nil, args...)
}

// startRunWith is startRun with a last change to the parsed config (nil: none).
func startRunWith(t testing.TB, dir string, change func(*config), args ...string) (string, *cluster.Cluster, *bytes.Buffer, func() error) {
	t.Helper()
	cfg, err := parseFlags(append([]string{"--addr", "127.0.0.1:0", "--kafka-port", "0", "--data-dir", dir}, args...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.logger = quietLogger()
	if change != nil {
		change(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := new(bytes.Buffer) // written by run before started is called
	type startedLab struct {
		url string
		cl  *cluster.Cluster
	}
	started := make(chan startedLab, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, out, func(url string, cl *cluster.Cluster) { started <- startedLab{url, cl} })
	}()
	select {
	case s := <-started:
		var once sync.Once
		var stopErr error
		stop := func() error {
			once.Do(func() { cancel(); stopErr = <-done })
			return stopErr
		}
		t.Cleanup(func() { stop() })
		return s.url, s.cl, out, stop
	case err := <-done:
		cancel()
		t.Fatalf("run: %v", err)
	}
	return "", nil, nil, nil
}

// TestRunServesAndStops runs the real server and cluster on free ports,
// reads the API and the page over TCP, and checks that cancelling the
// context stops both.
func TestRunServesAndStops(t *testing.T) {
	url, cl, out, stop := startRun(t, t.TempDir(), "--brokers", "2")
	if !strings.Contains(out.String(), url) {
		t.Fatalf("URL %s not printed: %q", url, out.String())
	}
	resp, err := http.Get(url + "api/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Brokers []struct{ Listener string }
		Topics  []struct {
			Name              string
			Partitions        int
			ReplicationFactor int               `json:"replication_factor"`
			Configs           map[string]string `json:"configs"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || len(got.Brokers) != 2 || got.Brokers[1].Listener != cl.Broker(2).Addr() ||
		len(got.Topics) != 1 || got.Topics[0].Name != "demo" || got.Topics[0].Partitions != 3 ||
		got.Topics[0].ReplicationFactor != 2 || got.Topics[0].Configs["min.insync.replicas"] != "2" {
		t.Fatalf("cluster = %+v, %v", got, err)
	}
	resp, err = http.Get(url)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET / = %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(url + "metrics") // the main cluster, labelled cluster="main"
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `kafka_log_log_logendoffset{broker="1",cluster="main",partition="0",topic="demo"}`; !strings.Contains(string(body), want) {
		t.Fatalf("/metrics has no %s:\n%.2000s", want, body)
	}
	if err := stop(); err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("server still answering after shutdown")
	}
}

// TestRunKeepsDataAcrossRestarts produces through the API, stops the lab
// and starts it again on the same data dir: the records are still there,
// committed, and topic demo is not created twice.
func TestRunKeepsDataAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	url, _, _, stop := startRun(t, dir, "--brokers", "1")
	body := `{"partition":1,"acks":"all","records":[{"key":"a","value":"kept"},{"value":"too"}]}`
	resp, err := http.Post(url+"api/v1/topics/demo/records", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"last_offset":1`) {
		t.Fatalf("produce = %d %s", resp.StatusCode, b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	url, cl, _, _ := startRun(t, dir, "--brokers", "1")
	if n := len(cl.Snapshot().Topics); n != 1 {
		t.Fatalf("%d topics after restart", n)
	}
	resp, err = http.Get(url + "api/v1/topics/demo/partitions/1/records")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Records []struct {
			Offset int64
			Key    *string
			Value  string
		}
		HighWatermark int64 `json:"high_watermark"`
	}
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || got.HighWatermark != 2 || len(got.Records) != 2 || got.Records[0].Value != "kept" ||
		got.Records[0].Key == nil || *got.Records[0].Key != "a" || got.Records[1].Key != nil {
		t.Fatalf("after restart: %+v %v", got, err)
	}
}

// TestRunStopsWithProduceWaiting stops the lab while an acks=all produce
// waits on a paused clock: the produce answers REQUEST_TIMED_OUT at once and
// the lab shuts down cleanly instead of waiting for the produce's timeout.
func TestRunStopsWithProduceWaiting(t *testing.T) {
	url, cl, _, stop := startRun(t, t.TempDir(), "--paused")
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Post(url+"api/v1/topics/demo/records", "application/json",
			strings.NewReader(`{"partition":0,"acks":"all","records":[{"value":"v"}],"timeout_ms":60000}`))
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	snap := cl.Snapshot()
	leader := cl.Broker(snap.Partition("demo", 0).Leader).Replica("demo", 0)
	for deadline := time.Now().Add(5 * time.Second); leader.Status().LogEndOffset < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the produce never appended")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	if resp := <-answered; resp != nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(b), "REQUEST_TIMED_OUT") {
			t.Fatalf("waiting produce answered %d %s", resp.StatusCode, b)
		}
	}
}

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil || c.addr != "127.0.0.1:8080" || c.dataDir != "./data" || c.brokers != 3 || c.kafkaPort != 9092 {
		t.Fatalf("defaults = %+v, %v", c, err)
	}
	c, err = parseFlags([]string{"--addr", "[::1]:0", "--data-dir", "/tmp/x", "--brokers", "5", "--kafka-port", "19092"}, io.Discard)
	if err != nil || c.addr != "[::1]:0" || c.brokers != 5 || c.kafkaPort != 19092 || c.dataDir != "/tmp/x" {
		t.Fatalf("parsed = %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--brokers", "0"}, {"--brokers", "10"}, {"--brokers", "x"},
		{"--kafka-port", "0"}, {"--kafka-port", "65534", "--brokers", "3"},
		{"--addr", "0.0.0.0:8080"}, {"--addr", "example.com:80"}, {"--addr", "nonsense"},
		{"--data-dir", ""}, {"--nope"}, {"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// TestRunServesAndStops runs the real server on a random port, reads the API
// and the page over TCP, and checks that cancelling the context stops it.
func TestRunServesAndStops(t *testing.T) {
	cfg, err := parseFlags([]string{"--addr", "127.0.0.1:0", "--brokers", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, &out, func(url string, _ *staticLab) { urls <- url }) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(out.String(), url) {
		t.Fatalf("URL %s not printed: %q", url, out.String())
	}
	resp, err := http.Get(url + "api/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var cl struct {
		Brokers []struct{ Listener string }
		Topics  []struct {
			Name              string
			Partitions        int
			ReplicationFactor int `json:"replication_factor"`
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&cl)
	resp.Body.Close()
	if err != nil || len(cl.Brokers) != 2 || cl.Brokers[1].Listener != "127.0.0.1:9093" ||
		len(cl.Topics) != 1 || cl.Topics[0].Partitions != 3 || cl.Topics[0].ReplicationFactor != 2 {
		t.Fatalf("cluster = %+v, %v", cl, err)
	}
	resp, err = http.Get(url)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET / = %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after cancel: %v", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("server still answering after shutdown")
	}
}

// Package apiclient is a typed Go client for Tidemark's HTTP API
// (/api/v1, described by /api/v1/openapi.json): topics, produce and
// consume, broker faults, and experiments. Scripts import it instead of
// writing the requests by hand:
//
//	cl := apiclient.New("http://127.0.0.1:8080")
//	t, err := cl.CreateTopic(ctx, apiclient.CreateTopic{Name: "orders", Partitions: 3})
//	res, err := cl.Produce(ctx, "orders", apiclient.Produce{Acks: "all", Records: []apiclient.Record{{Value: "v1"}}})
//	st, err := cl.StartExperiment(ctx, apiclient.ExperimentRequest{Study: "acks-leader-crash"})
//	st, err = cl.WaitExperiment(ctx, st.ID, time.Second, nil)
//
// A refused request is an *Error with the HTTP status and the Kafka error
// name the API answered (code).
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"tidemark/apiv1"
)

// Client calls one lab's API.
type Client struct {
	base string
	http *http.Client
	lang string
}

// New returns a client of the lab at base ("http://127.0.0.1:8080").
func New(base string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 2 * time.Minute}}
}

// WithHTTPClient makes the client send its requests with hc (a test's
// server client, say).
func (c *Client) WithHTTPClient(hc *http.Client) *Client {
	c.http = hc
	return c
}

// WithLanguage asks the lab to answer in lang ("en", "zh-Hans",
// "zh-Hant"; its Accept-Language): messages, an experiment's findings and
// report.md.
func (c *Client) WithLanguage(lang string) *Client {
	c.lang = lang
	return c
}

// Error is a refused request: the HTTP status, the Kafka error name (or
// the lab's own code, such as NOT_FOUND) and the message.
type Error struct {
	Status   int       `json:"-"`
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Attempts []Attempt `json:"attempts,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// do sends a request with an optional JSON body and decodes a JSON answer
// into out (nil: drop it).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	raw, err := c.raw(ctx, method, path, body)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// raw sends a request and returns the answer's body.
func (c *Client) raw(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.lang != "" {
		req.Header.Set("Accept-Language", c.lang)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return nil, decodeError(resp)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// decodeError is an answer's *Error: its body's error, or the status.
func decodeError(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	var body struct {
		Error *Error `json:"error"`
	}
	if json.Unmarshal(b, &body) != nil || body.Error == nil || body.Error.Code == "" {
		body.Error = &Error{Code: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(b))}
	}
	body.Error.Status = resp.StatusCode
	return body.Error
}

// --- topics ---

// CreateTopic is the body of POST /api/v1/topics. Zero Partitions and
// ReplicationFactor take the lab's defaults; nil ReadyTimeoutMs waits the
// default 5 s for the topic to be ready, 0 not at all.
type CreateTopic struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions,omitempty"`
	ReplicationFactor int16             `json:"replication_factor,omitempty"`
	Configs           map[string]string `json:"configs,omitempty"`
	ReadyTimeoutMs    *int64            `json:"ready_timeout_ms,omitempty"`
}

// Partition is one partition's placement and health, the API's own type.
type Partition = apiv1.PartitionInfo

// Topic is a topic with its configs and partitions.
type Topic struct {
	Name                string            `json:"name"`
	ReplicationFactor   int               `json:"replication_factor"`
	Configs             map[string]string `json:"configs"`
	ReplicationProtocol string            `json:"replication_protocol"`
	Partitions          []Partition       `json:"partitions"`
}

// NotReady is a partition of a new topic that was not usable yet, and why
// (no-leader, leader-not-applied, broker-down, isr-short).
type NotReady struct {
	Partition int32   `json:"partition"`
	Reason    string  `json:"reason"`
	Leader    int32   `json:"leader"`
	ISR       []int32 `json:"isr"`
	Replicas  []int32 `json:"replicas"`
}

// CreatedTopic is the answer to CreateTopic.
type CreatedTopic struct {
	Topic
	Ready    bool       `json:"ready"`
	NotReady []NotReady `json:"not_ready"`
}

// CreateTopic creates a topic and waits until it is ready (or the wait ends).
func (c *Client) CreateTopic(ctx context.Context, t CreateTopic) (CreatedTopic, error) {
	var out CreatedTopic
	err := c.do(ctx, http.MethodPost, "/api/v1/topics", t, &out)
	return out, err
}

// Topics lists every topic.
func (c *Client) Topics(ctx context.Context) ([]Topic, error) {
	var out struct {
		Topics []Topic `json:"topics"`
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/topics", nil, &out)
	return out.Topics, err
}

// Topic returns one topic.
func (c *Client) Topic(ctx context.Context, name string) (Topic, error) {
	var out Topic
	err := c.do(ctx, http.MethodGet, "/api/v1/topics/"+url.PathEscape(name), nil, &out)
	return out, err
}

// DeleteTopic deletes a topic.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/topics/"+url.PathEscape(name), nil, nil)
}

// --- produce and consume ---

// Record is one record to produce (text key and value; nil key: none).
type Record struct {
	Key   *string `json:"key,omitempty"`
	Value string  `json:"value"`
}

// Produce is the body of POST /api/v1/topics/{topic}/records. Acks is "0",
// "1" or "all"; nil Partition lets the key choose; nil DeliveryTimeoutMs
// retries retriable errors for the default 10 s, 0 not at all.
type Produce struct {
	Partition         *int32   `json:"partition,omitempty"`
	Acks              string   `json:"acks"`
	Records           []Record `json:"records"`
	TimeoutMs         *int64   `json:"timeout_ms,omitempty"`
	DeliveryTimeoutMs *int64   `json:"delivery_timeout_ms,omitempty"`
}

// Attempt is one produce request the API sent: the broker and its error
// ("" when it succeeded).
type Attempt struct {
	Broker int32  `json:"broker"`
	Error  string `json:"error,omitempty"`
}

// Produced is where a produce went and the requests it took.
type Produced struct {
	Partition  int32     `json:"partition"`
	Leader     int32     `json:"leader"`
	BaseOffset int64     `json:"base_offset"`
	LastOffset int64     `json:"last_offset"`
	Attempts   []Attempt `json:"attempts"`
}

// Produce produces records as a producer does (retries within the delivery
// timeout).
func (c *Client) Produce(ctx context.Context, topic string, p Produce) (Produced, error) {
	var out Produced
	err := c.do(ctx, http.MethodPost, "/api/v1/topics/"+url.PathEscape(topic)+"/records", p, &out)
	return out, err
}

// Consumed is one record read back.
type Consumed struct {
	Offset      int64   `json:"offset"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Timestamp   int64   `json:"timestamp"`
	Key         *string `json:"key"`
	Value       *string `json:"value"`
}

// Consumption is what a consume read: records below the HW from offset.
type Consumption struct {
	Records       []Consumed `json:"records"`
	HighWatermark int64      `json:"high_watermark"`
	NextOffset    int64      `json:"next_offset"`
}

// Consume reads up to limit (0: the API's default) committed records of a
// partition from offset, as a consumer does.
func (c *Client) Consume(ctx context.Context, topic string, partition int32, offset int64, limit int) (Consumption, error) {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out Consumption
	err := c.do(ctx, http.MethodGet, "/api/v1/topics/"+url.PathEscape(topic)+"/partitions/"+strconv.Itoa(int(partition))+"/records?"+q.Encode(), nil, &out)
	return out, err
}

// --- faults ---

// Crash crashes a broker (it keeps what it wrote).
func (c *Client) Crash(ctx context.Context, broker int32) error {
	return c.do(ctx, http.MethodPost, "/api/v1/brokers/"+strconv.Itoa(int(broker))+"/crash", nil, nil)
}

// PowerLoss cuts a broker's power (it loses what it had not fsynced).
func (c *Client) PowerLoss(ctx context.Context, broker int32) error {
	return c.do(ctx, http.MethodPost, "/api/v1/brokers/"+strconv.Itoa(int(broker))+"/power-loss", nil, nil)
}

// Restart restarts a stopped broker.
func (c *Client) Restart(ctx context.Context, broker int32) error {
	return c.do(ctx, http.MethodPost, "/api/v1/brokers/"+strconv.Itoa(int(broker))+"/restart", nil, nil)
}

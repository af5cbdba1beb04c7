package web

import (
	_ "embed"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/clip"
)

// MaxEventsLimit is the largest limit GET /api/v1/events accepts; DefaultEventsLimit
// is used when limit is absent.
const (
	MaxEventsLimit     = 1000
	DefaultEventsLimit = 100
)

//go:embed openapi.json
var openapiDoc []byte

// ClusterResponse is the body of GET /api/v1/cluster.
type ClusterResponse struct {
	Brokers    []events.Broker `json:"brokers"`
	Controller int32           `json:"controller"`
	Topics     []TopicSummary  `json:"topics"`
	LastSeq    uint64          `json:"last_seq"`
}

// TopicSummary is one topic in ClusterResponse: its size and health.
type TopicSummary struct {
	Name              string            `json:"name"`
	Partitions        int               `json:"partitions"`
	ReplicationFactor int               `json:"replication_factor"`
	UnderReplicated   int               `json:"under_replicated"`
	Offline           int               `json:"offline"`
	Configs           map[string]string `json:"configs,omitempty"`
}

func (s *Server) getCluster(c echo.Context) error {
	snap := s.opts.Lab.Snapshot()
	r := ClusterResponse{Brokers: snap.Brokers, Controller: snap.Controller, Topics: []TopicSummary{}, LastSeq: snap.Seq}
	if r.Brokers == nil {
		r.Brokers = []events.Broker{}
	}
	for _, t := range snap.Topics {
		ts := TopicSummary{Name: t.Name, Partitions: len(t.Partitions), Configs: t.Configs}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			ts.ReplicationFactor = max(ts.ReplicationFactor, len(p.Replicas))
			if p.Offline() {
				ts.Offline++
			} else if p.UnderReplicated() {
				ts.UnderReplicated++
			}
		}
		r.Topics = append(r.Topics, ts)
	}
	return c.JSON(http.StatusOK, r)
}

// EventsResponse is the body of GET /api/v1/events. OldestSeq is the oldest
// event still recorded in memory (0 when none): asking for events before it
// leaves a gap. HistoryFirstSeq is the oldest event GET /api/v1/history
// still reaches, on disk (absent when the lab keeps no history).
type EventsResponse struct {
	Events          []events.Event `json:"events"`
	OldestSeq       uint64         `json:"oldest_seq"`
	LastSeq         uint64         `json:"last_seq"`
	HistoryFirstSeq uint64         `json:"history_first_seq,omitempty"`
}

func (s *Server) getEvents(c echo.Context) error {
	since, err := queryUint(c, "since", 0, math.MaxUint64)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, DefaultEventsLimit, MaxEventsLimit)
	if err != nil {
		return err
	}
	bus := s.opts.Lab.Bus()
	last := bus.LastSeq() // read first: every returned event is ≤ it or newer, never a lie about the end
	evs, oldest := bus.Since(since, int(limit))
	if evs == nil {
		evs = []events.Event{}
	}
	if n := len(evs); n > 0 {
		last = max(last, evs[n-1].Seq)
	}
	r := EventsResponse{Events: evs, OldestSeq: oldest, LastSeq: last}
	if h, err := s.history(); err == nil {
		r.HistoryFirstSeq, _ = h.Bounds()
	}
	return c.JSON(http.StatusOK, r)
}

// queryUint parses an optional unsigned query parameter no larger than maxV;
// absent or empty gives def. Anything else is a 400 INVALID_REQUEST.
func queryUint(c echo.Context, name string, def, maxV uint64) (uint64, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || v > maxV {
		return 0, KafkaError(http.StatusBadRequest, kerr.InvalidRequest,
			name+" must be an integer between 0 and "+strconv.FormatUint(maxV, 10)+", got "+strconv.Quote(clip.Bytes(raw, 40)))
	}
	return v, nil
}

func (s *Server) getOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openapiDoc)
}

package web

import (
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/events/history"
)

// HistoryKeeper is a Lab that keeps its events on disk for its life
// (package events/history); GET /api/v1/history pages back through them.
// A Lab without it, or whose History is nil, answers those routes 501.
type HistoryKeeper interface {
	History() *history.Store
}

// MaxHistoryLimit is the largest limit GET /api/v1/history accepts,
// DefaultHistoryLimit the one used when limit is absent, and
// MaxHistoryBytes the most bytes of encoded events a page holds (keeping
// the newest, at least one); the page's snapshot comes on top.
const (
	MaxHistoryLimit     = 2000
	DefaultHistoryLimit = 500
	MaxHistoryBytes     = 2 << 20
)

// HistorySnapshotResponse is the body of GET /api/v1/history/snapshot: the
// state after event Snapshot.Seq and the history's bounds.
type HistorySnapshotResponse struct {
	FirstSeq uint64           `json:"first_seq"`
	LastSeq  uint64           `json:"last_seq"`
	Snapshot *events.Snapshot `json:"snapshot"`
}

// history returns the lab's history, or a 501 when it keeps none.
func (s *Server) history() (*history.Store, error) {
	if k, ok := s.opts.Lab.(HistoryKeeper); ok {
		if h := k.History(); h != nil {
			return h, nil
		}
	}
	return nil, notImplemented("page back through its history (it keeps none: --history-bytes 0)")
}

// getHistory answers a page of events before ?before (default: the
// newest), oldest first, with the state the page starts from.
func (s *Server) getHistory(c echo.Context) error {
	h, err := s.history()
	if err != nil {
		return err
	}
	before, err := queryUint(c, "before", 0, math.MaxUint64)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, DefaultHistoryLimit, MaxHistoryLimit)
	if err != nil {
		return err
	}
	p, err := h.Page(before, limit, MaxHistoryBytes)
	if err != nil {
		return historyError(err, before)
	}
	if p.Events == nil {
		p.Events = []events.Event{}
	}
	return c.JSON(http.StatusOK, events.HistoryPage{FirstSeq: p.First, LastSeq: p.Last, Snapshot: &p.Base, Events: p.Events})
}

// getHistorySnapshot answers the state after event ?seq.
func (s *Server) getHistorySnapshot(c echo.Context) error {
	h, err := s.history()
	if err != nil {
		return err
	}
	if c.QueryParam("seq") == "" {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "seq is required: the event whose state to rebuild")
	}
	seq, err := queryUint(c, "seq", 0, math.MaxUint64)
	if err != nil {
		return err
	}
	snap, err := h.SnapshotAt(seq)
	if err != nil {
		return historyError(err, seq)
	}
	first, last := h.Bounds()
	return c.JSON(http.StatusOK, HistorySnapshotResponse{FirstSeq: first, LastSeq: last, Snapshot: &snap})
}

// historyError says which events the history holds when seq is not among
// them; other errors (the disk's) are the server's.
func historyError(err error, seq uint64) error {
	if errors.Is(err, history.ErrNotKept) {
		return KafkaError(http.StatusBadRequest, kerr.OffsetOutOfRange,
			"event "+strconv.FormatUint(seq, 10)+" is not kept in the history (older than its first, newer than its last, or lost)")
	}
	return err
}

package web

import (
	"bytes"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"tidemark/server/export"
)

// The export routes hand a run to other tools: the recorded events as JSON
// Lines, the topology and a partition's lanes as SVG (drawn from the
// Snapshot, texts in the page's language), and a finished chaos run's
// acknowledged writes against what was read back as CSV. Each answers a
// file to download.

func (s *Server) exportRoutes(e *echo.Echo) {
	e.GET("/api/v1/export/events.jsonl", s.exportEvents)
	e.GET("/api/v1/export/topology.svg", s.exportTopology)
	e.GET("/api/v1/export/topics/:topic/partitions/:partition/lanes.svg", s.exportLanes)
	e.GET("/api/v1/export/chaos/:id/acked.csv", s.exportAckedCSV)
}

// MIMEJSONLines is the media type of /api/v1/export/events.jsonl.
const MIMEJSONLines = "application/jsonl"

// download answers body as a file called name.
func download(c echo.Context, name, mime string, body []byte) error {
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	return c.Blob(http.StatusOK, mime, body)
}

func (s *Server) exportEvents(c echo.Context) error {
	since, err := queryUint(c, "since", 0, math.MaxUint64) // as GET /api/v1/events
	if err != nil {
		return err
	}
	evs, _ := s.opts.Lab.Bus().Since(since, 0) // every event still recorded (the bus's History bounds it)
	var b bytes.Buffer
	if err := export.EventsJSONL(&b, evs); err != nil {
		return err
	}
	return download(c, "events.jsonl", MIMEJSONLines, b.Bytes())
}

func (s *Server) exportTopology(c echo.Context) error {
	var b bytes.Buffer
	if err := export.Topology(&b, s.opts.Lab.Snapshot(), Lang(c)); err != nil {
		return err
	}
	return download(c, "topology.svg", "image/svg+xml", b.Bytes())
}

func (s *Server) exportLanes(c echo.Context) error {
	snap := s.opts.Lab.Snapshot()
	name, p, err := pathPartition(c, &snap)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := export.Lanes(&b, name, *p, Lang(c)); err != nil {
		return err
	}
	return download(c, name+"-"+strconv.Itoa(int(p.Partition))+"-lanes.svg", "image/svg+xml", b.Bytes())
}

func (s *Server) exportAckedCSV(c echo.Context) error {
	st, err := chaosKind.finishedRun(s, c)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := export.AckedCSV(&b, st.Result); err != nil {
		return err
	}
	return download(c, "chaos-"+st.ID+"-acked.csv", "text/csv; charset=utf-8", b.Bytes())
}

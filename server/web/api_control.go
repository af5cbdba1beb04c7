package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// MaxStep is the longest single clock step POST /api/v1/clock/step takes.
const MaxStep = time.Hour

// DefaultStep is the step POST /api/v1/clock/step takes without ms (or
// without a body): the overview's "step 100 ms".
const DefaultStep = 100 * time.Millisecond

// BrokerResponse is the body of the broker fault routes: the broker's state
// afterwards, the last event, and for a power loss the bytes each file lost.
type BrokerResponse struct {
	Broker    int32              `json:"broker"`
	State     events.BrokerState `json:"state"`
	LastSeq   uint64             `json:"last_seq"`
	LostBytes map[string]int64   `json:"lost_bytes,omitempty"`
}

func (s *Server) brokerResponse(id int32) BrokerResponse {
	snap := s.opts.Lab.Snapshot()
	r := BrokerResponse{Broker: id, LastSeq: snap.Seq}
	if b := snap.Broker(id); b != nil {
		r.State = b.State
	}
	return r
}

// faultBroker resolves {id} for a fault route; wantRunning says whether
// the fault needs a running broker (crash, power loss) or a stopped one
// (restart): the other case is a 409.
func (s *Server) faultBroker(c echo.Context, wantRunning bool) (int32, error) {
	if s.faults == nil {
		return 0, notImplemented("inject faults")
	}
	snap := s.opts.Lab.Snapshot()
	id, err := brokerParam(c, &snap)
	if err != nil {
		return 0, err
	}
	running := snap.Broker(id).State != events.BrokerCrashed
	switch {
	case wantRunning && !running:
		return 0, brokerStopped(id)
	case !wantRunning && running:
		return 0, KafkaError(http.StatusConflict, kerr.InvalidRequest, "broker "+strconv.Itoa(int(id))+" is already running").
			withKey("control.broker-running", strconv.Itoa(int(id)))
	}
	return id, nil
}

// brokerStopped is 409 BROKER_NOT_AVAILABLE for a control that needs broker
// id running.
func brokerStopped(id int32) *Error {
	return KafkaError(http.StatusConflict, kerr.BrokerNotAvailable, "broker "+strconv.Itoa(int(id))+" is not running; restart it first").
		withKey("control.broker-stopped", strconv.Itoa(int(id)))
}

func (s *Server) crash(c echo.Context) error {
	id, err := s.faultBroker(c, true)
	if err != nil {
		return err
	}
	if err := s.faults.Crash(id); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, s.brokerResponse(id))
}

func (s *Server) powerLoss(c echo.Context) error {
	id, err := s.faultBroker(c, true)
	if err != nil {
		return err
	}
	lost, err := s.faults.PowerLoss(id)
	if err != nil {
		return LabError(err)
	}
	r := s.brokerResponse(id)
	r.LostBytes = lost
	if r.LostBytes == nil {
		r.LostBytes = map[string]int64{}
	}
	return c.JSON(http.StatusOK, r)
}

func (s *Server) restart(c echo.Context) error {
	id, err := s.faultBroker(c, false)
	if err != nil {
		return err
	}
	if err := s.faults.Restart(id); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, s.brokerResponse(id))
}

// FetchResponse is the body of POST /api/v1/brokers/{id}/fetch.
type FetchResponse struct {
	Broker  int32  `json:"broker"`
	LastSeq uint64 `json:"last_seq"`
}

func (s *Server) fetchRound(c echo.Context) error {
	if s.clock == nil {
		return notImplemented("step fetches")
	}
	snap := s.opts.Lab.Snapshot()
	id, err := brokerParam(c, &snap)
	if err != nil {
		return err
	}
	if !snap.Paused {
		// Running, the followers fetch on their own; a step is for a paused lab.
		return KafkaError(http.StatusConflict, kerr.InvalidRequest, "the clock is running and followers fetch by themselves; pause it to step fetches").
			withKey("control.fetch-running")
	}
	if snap.Broker(id).State == events.BrokerCrashed {
		return brokerStopped(id)
	}
	if err := s.clock.StepFetch(c.Request().Context(), id); err != nil {
		e := LabError(err)
		// A leader's refusal: say whose round it was and the first code
		// in the learner's language (the code is also its own field).
		if le, ok := e.(*Error); ok && le.Key == "" {
			le.withKey("control.fetch-failed", strconv.Itoa(int(id)), le.Code)
		}
		return e
	}
	return c.JSON(http.StatusOK, FetchResponse{Broker: id, LastSeq: s.opts.Lab.Snapshot().Seq})
}

// CutRequest is the body of POST /api/v1/network/cuts: the link from→to
// (0 is the controller), cut both ways unless oneway.
type CutRequest struct {
	From   *int32 `json:"from"`
	To     *int32 `json:"to"`
	OneWay bool   `json:"oneway"`
}

// NetworkResponse is the body of the network routes: the links cut now.
type NetworkResponse struct {
	Cuts    []CutView `json:"cuts"`
	LastSeq uint64    `json:"last_seq"`
}

// CutView is one cut link. Unlike the event's Fault, from and to are always
// written: node 0 is the controller, not a missing field.
type CutView struct {
	Kind   events.FaultKind `json:"kind"`
	From   int32            `json:"from"`
	To     int32            `json:"to"`
	OneWay bool             `json:"oneway"`
}

func (s *Server) networkResponse() NetworkResponse {
	snap := s.opts.Lab.Snapshot()
	r := NetworkResponse{Cuts: make([]CutView, 0, len(snap.Cuts)), LastSeq: snap.Seq}
	for _, f := range snap.Cuts {
		r.Cuts = append(r.Cuts, CutView{Kind: f.Kind, From: f.From, To: f.To, OneWay: f.OneWay})
	}
	return r
}

func (s *Server) cut(c echo.Context) error {
	if s.faults == nil {
		return notImplemented("cut links")
	}
	var req CutRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.From == nil || req.To == nil {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, `from and to are required: {"from": 1, "to": 2, "oneway": false} (0 is the controller)`)
	}
	if err := s.faults.Cut(*req.From, *req.To, req.OneWay); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, s.networkResponse())
}

func (s *Server) heal(c echo.Context) error {
	if s.faults == nil {
		return notImplemented("heal links")
	}
	s.faults.Heal()
	return c.JSON(http.StatusOK, s.networkResponse())
}

// ClockResponse is the body of the clock routes: whether the lab clock is
// paused, its rate (lab seconds per real second while it runs), the lab
// time and the last event.
type ClockResponse struct {
	Paused  bool      `json:"paused"`
	Rate    float64   `json:"rate"`
	Time    time.Time `json:"time"`
	LastSeq uint64    `json:"last_seq"`
}

func (s *Server) clockResponse() ClockResponse {
	snap := s.opts.Lab.Snapshot()
	return ClockResponse{Paused: snap.Paused, Rate: snap.ClockRate(), Time: snap.Time, LastSeq: snap.Seq}
}

func (s *Server) pause(c echo.Context) error {
	if s.clock == nil {
		return notImplemented("pause the clock")
	}
	s.clock.Pause()
	return c.JSON(http.StatusOK, s.clockResponse())
}

func (s *Server) resume(c echo.Context) error {
	if s.clock == nil {
		return notImplemented("resume the clock")
	}
	s.clock.Resume()
	return c.JSON(http.StatusOK, s.clockResponse())
}

// StepRequest is the optional body of POST /api/v1/clock/step: the lab
// time to step in milliseconds (DefaultStep when absent).
type StepRequest struct {
	Ms *int64 `json:"ms"`
}

func (s *Server) step(c echo.Context) error {
	if s.clock == nil {
		return notImplemented("step the clock")
	}
	var req StepRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		return err
	}
	d := DefaultStep
	if req.Ms != nil {
		if *req.Ms < 1 || *req.Ms > MaxStep.Milliseconds() {
			// A step moves the paused clock forward: at least 1 ms, and at
			// most an hour so that one request cannot run away with the lab.
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "ms, the lab time to step in milliseconds, must be between 1 and "+
				strconv.FormatInt(MaxStep.Milliseconds(), 10)+" (an hour); got "+strconv.FormatInt(*req.Ms, 10)+"; leave it out to step "+
				strconv.FormatInt(DefaultStep.Milliseconds(), 10)).
				withKey("clock.step-range", strconv.FormatInt(MaxStep.Milliseconds(), 10), strconv.FormatInt(*req.Ms, 10))
		}
		d = time.Duration(*req.Ms) * time.Millisecond
	}
	if !s.opts.Lab.Snapshot().Paused {
		return KafkaError(http.StatusConflict, kerr.InvalidRequest, "the clock is running; pause it before stepping").withKey("clock.running")
	}
	if err := s.clock.Step(d); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, s.clockResponse())
}

// MaxStepToEvent is the most lab time POST /api/v1/clock/step-event looks
// ahead for the next event.
const MaxStepToEvent = time.Minute

// StepEventRequest is the optional body of POST /api/v1/clock/step-event:
// how far to look for the next event (default and at most MaxStepToEvent).
type StepEventRequest struct {
	MaxMs *int64 `json:"max_ms"`
}

// StepEventResponse is the body of POST /api/v1/clock/step-event: how far
// the clock moved, the events it reached (empty: none within the limit,
// said by Found) and the clock afterwards.
type StepEventResponse struct {
	ClockResponse
	SteppedMs int64          `json:"stepped_ms"`
	Found     bool           `json:"found"`
	Events    []events.Event `json:"events"`
}

func (s *Server) stepEvent(c echo.Context) error {
	if s.clock == nil {
		return notImplemented("step the clock")
	}
	var req StepEventRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		return err
	}
	limit := MaxStepToEvent
	if req.MaxMs != nil {
		if *req.MaxMs < 1 || *req.MaxMs > MaxStepToEvent.Milliseconds() {
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "max_ms, how much lab time to look ahead for the next event in milliseconds, must be between 1 and "+
				strconv.FormatInt(MaxStepToEvent.Milliseconds(), 10)+" (a minute); got "+strconv.FormatInt(*req.MaxMs, 10)+"; leave it out to look a minute ahead")
		}
		limit = time.Duration(*req.MaxMs) * time.Millisecond
	}
	if !s.opts.Lab.Snapshot().Paused {
		return KafkaError(http.StatusConflict, kerr.InvalidRequest, "the clock is running; pause it before stepping to the next event").withKey("clock.running")
	}
	moved, evs, err := s.clock.StepToEvent(limit)
	if err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, StepEventResponse{ClockResponse: s.clockResponse(), SteppedMs: moved.Milliseconds(), Found: len(evs) > 0, Events: nonNil(evs)})
}

// RateRequest is the body of POST /api/v1/clock/rate.
type RateRequest struct {
	Rate *float64 `json:"rate"`
}

func (s *Server) setRate(c echo.Context) error {
	if s.clock == nil {
		return notImplemented("set the clock's rate")
	}
	var req RateRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Rate == nil {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, `rate is required: {"rate": 0.25} (0.25, 1 or 4)`).withKey("form.rate")
	}
	if err := s.clock.SetRate(*req.Rate); err != nil {
		e := LabError(err)
		if le, ok := e.(*Error); ok && le.Code == kerr.InvalidRequest.Message {
			le.withKey("form.rate") // the lab's rates, in the learner's language
		}
		return e
	}
	return c.JSON(http.StatusOK, s.clockResponse())
}

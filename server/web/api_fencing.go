package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Fencing switches the controller's fencing rule: how a restarted broker
// is treated and whom the controller may elect (kraft-elr, kraft,
// zookeeper, zookeeper-pre-2.2, kraft-elr-recovery).
type Fencing interface {
	// FencingRule names the rule in force.
	FencingRule() string
	// SetFencingRule switches to the named rule (INVALID_CONFIG for an
	// unknown name).
	SetFencingRule(name string) error
}

// FencingRuleBody is the body of GET and PUT /api/v1/cluster/fencing-rule.
type FencingRuleBody struct {
	Rule string `json:"rule"`
}

func (s *Server) fencingRoutes(e *echo.Echo) {
	e.GET("/api/v1/cluster/fencing-rule", s.getFencingRule)
	e.PUT("/api/v1/cluster/fencing-rule", s.setFencingRule, sameOrigin)
	e.POST("/api/v1/brokers/:id/disk-failure", s.failDisk, sameOrigin)
}

func (s *Server) fencing() (Fencing, error) {
	f, ok := s.opts.Lab.(Fencing)
	if !ok {
		return nil, notImplemented("switch fencing rules")
	}
	return f, nil
}

func (s *Server) getFencingRule(c echo.Context) error {
	f, err := s.fencing()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, FencingRuleBody{Rule: f.FencingRule()})
}

func (s *Server) setFencingRule(c echo.Context) error {
	f, err := s.fencing()
	if err != nil {
		return err
	}
	var body FencingRuleBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if err := f.SetFencingRule(body.Rule); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, FencingRuleBody{Rule: f.FencingRule()})
}

// DiskFaults fails a broker's disk.
type DiskFaults interface {
	// FailDisk makes every later write and fsync of broker id's disk fail:
	// its log dir goes offline and the broker halts.
	FailDisk(id int32) error
}

func (s *Server) failDisk(c echo.Context) error {
	df, ok := s.opts.Lab.(DiskFaults)
	if !ok {
		return notImplemented("fail disks")
	}
	id, err := s.faultBroker(c, true)
	if err != nil {
		return err
	}
	if err := df.FailDisk(id); err != nil {
		return LabError(err)
	}
	return c.JSON(http.StatusOK, s.brokerResponse(id))
}

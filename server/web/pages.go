package web

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/views"
	"tidemark/wasm/panel"
)

// The HTML pages and their form controls. The pages read the same views the
// JSON API answers with; the forms post to /ui/action, which turns a form
// into the matching API request, sends it through the same Echo app (so every
// check and error code is the API's own) and comes back to the page with the
// outcome. The live panel posts the same forms with fetch and gets JSON back.

// flashCookie carries the outcome of the last control to the next page.
const flashCookie = "tidemark_flash"

// maxFormBytes bounds a control form's body.
const maxFormBytes = 64 << 10

func (s *Server) pageRoutes(e *echo.Echo) {
	e.GET("/", s.overview)
	e.GET("/topics/:topic/partitions/:partition", s.partitionPage)
	e.GET("/brokers/:id/partitions/:topic/:partition/segments", s.segmentsPage)
	e.POST("/ui/action", s.action, sameOrigin)
	e.GET("/ui/lang", s.setLang)
}

// Lang returns the learner's language for c: the i18n cookie, else the
// first language of Accept-Language Tidemark speaks, else English.
func Lang(c echo.Context) i18n.Lang {
	cookie := ""
	if ck, err := c.Cookie(i18n.CookieName); err == nil {
		cookie = ck.Value
	}
	return i18n.Pick(cookie, c.Request().Header.Get("Accept-Language"))
}

// page starts the Page of a request: language, path and the pending flash
// (which it clears).
func (s *Server) page(c echo.Context, title string) views.Page {
	p := views.Page{Title: title, Lang: Lang(c), Path: c.Request().URL.RequestURI()}
	if s.observed != nil {
		p.Observe = s.observedSeeds()
	}
	if ck, err := c.Cookie(flashCookie); err == nil {
		if raw, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil && len(raw) > 0 {
			p.Flash = &views.Flash{OK: raw[0] == '1', Text: string(raw[1:])}
		}
		c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
	return p
}

func (s *Server) overview(c echo.Context) error {
	p := s.page(c, i18n.T(Lang(c), "ui.overview.title"))
	p.Recent = s.recent()
	p.Charts = s.charts.html(Lang(c))
	return Render(c, http.StatusOK, views.Overview(p, s.opts.Lab.Snapshot(), s.observeView()))
}

// recentEvents is how many of the newest events a lesson page's event
// list is rendered from: more than the panel lists, as some kinds are not
// listed.
const recentEvents = 4 * panel.MaxRecent

// recent returns the newest events a page's event list shows (at most
// panel.MaxRecent, oldest first), read back from the bus's history a
// window at a time: a running lab's message events (fetches, heartbeats),
// which the list leaves out, fill a window of the newest in seconds, and
// the list opened empty.
func (s *Server) recent() []events.Event { return recentOn(s.opts.Lab.Bus()) }

// recentOn is recent on bus.
func recentOn(bus *events.Bus) []events.Event {
	var listed []events.Event
	for end := bus.LastSeq(); end > 0 && len(listed) < panel.MaxRecent; {
		from := end - min(end, recentEvents)
		evs, oldest := bus.Since(from, int(end-from))
		var window []events.Event
		for _, e := range evs {
			if !e.Kind.Unlisted() {
				window = append(window, e)
			}
		}
		listed = append(window, listed...)
		if oldest == 0 || oldest > from+1 {
			break // the bus has forgotten what came before
		}
		end = from
	}
	return listed[max(0, len(listed)-panel.MaxRecent):]
}

func (s *Server) partitionPage(c echo.Context) error {
	snap := s.opts.Lab.Snapshot()
	name, pt, err := pathPartition(c, &snap)
	if err != nil {
		return err
	}
	v := s.partitionView(&snap, name, pt, -1, views.LaneWidth)
	p := s.page(c, name+"-"+strconv.Itoa(int(pt.Partition)))
	p.Recent = s.recent()
	return Render(c, http.StatusOK, views.Partition(p, views.PartitionPage{View: v, Snap: snap}))
}

func (s *Server) segmentsPage(c echo.Context) error {
	id, name, partition, l, err := s.replicaLog(c)
	if err != nil {
		return err
	}
	sg, err := segmentsView(id, name, partition, l)
	if err != nil {
		return err
	}
	lang := Lang(c)
	d := views.SegmentsPage{Segments: sg, Offset: c.QueryParam("offset")}
	if d.Offset != "" {
		off, err := strconv.ParseInt(d.Offset, 10, 64)
		if err != nil || off < 0 {
			d.LookupError = i18n.T(lang, "ui.lookup.bad", clip.Bytes(d.Offset, 40))
		} else if lk, err := lookupView(id, l, off); err != nil {
			d.LookupError = errText(lang, toError(err))
		} else {
			d.Lookup = &lk
		}
	}
	p := s.page(c, i18n.T(lang, "ui.segments.title", id, name, partition))
	return Render(c, http.StatusOK, views.Segments(p, d))
}

// setLang remembers the chosen language in a cookie and goes back.
func (s *Server) setLang(c echo.Context) error {
	l := i18n.Lang(c.QueryParam("set"))
	if !l.Valid() {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "set must be one of en, zh-Hans, zh-Hant")
	}
	c.SetCookie(&http.Cookie{Name: i18n.CookieName, Value: string(l), Path: "/", MaxAge: 365 * 24 * 3600, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("next")))
}

// localPath keeps a redirect on this site: a path starting with one "/",
// else "/". Browsers drop tabs and newlines from a Location and read "\"
// as "/", so "/\t/evil.example" would leave the site: any control
// character, space or backslash makes it "/", and so does anything that
// parses with a scheme or host.
func localPath(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' || unicode.IsSpace(r) }) {
		return "/"
	}
	return next
}

// ActionResult is what /ui/action answers a client that accepts JSON (the
// panel): whether the control worked, the text to show and the API status.
type ActionResult struct {
	OK   bool   `json:"ok"`
	Text string `json:"text"`
	// Code is Kafka's error name when the control failed ("" on success);
	// Text starts with it too, for the flash.
	Code   string `json:"code,omitempty"`
	Status int    `json:"status"`
}

// action runs one control form. A browser without the panel is sent back to
// the form's page (303) with the outcome in a one-shot cookie.
func (s *Server) action(c echo.Context) error {
	lang := Lang(c)
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBytes)
	res := s.runAction(c, lang)
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		return c.JSON(http.StatusOK, res)
	}
	flag := "0"
	if res.OK {
		flag = "1"
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(flag + clip.Bytes(res.Text, 600))),
		Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusSeeOther, localPath(c.FormValue("next")))
}

// apiCall is one request /ui/action makes of the API.
type apiCall struct {
	method, path string
	body         any // nil: no body
}

func (s *Server) runAction(c echo.Context, lang i18n.Lang) ActionResult {
	if err := c.Request().ParseForm(); err != nil {
		e := KafkaError(http.StatusBadRequest, kerr.InvalidRequest, clip.Bytes(err.Error(), 200))
		return ActionResult{Text: errText(lang, e), Code: e.Code, Status: e.Status}
	}
	f := c.Request().PostForm
	action := f.Get("action")
	call, err := formCall(action, f.Get)
	if err != nil {
		e := toError(err)
		return ActionResult{Text: errText(lang, e), Code: e.Code, Status: e.Status}
	}
	status, body := s.callAPI(c.Request(), call)
	if status/100 != 2 {
		var eb errorBody
		if json.Unmarshal(body, &eb) != nil || eb.Error == nil {
			eb.Error = &Error{Code: kerr.UnknownServerError.Message}
		}
		return ActionResult{Text: errText(lang, eb.Error), Code: eb.Error.Code, Status: status}
	}
	return ActionResult{OK: true, Text: doneText(lang, action, f.Get, body), Status: status}
}

// errText shows an error to a learner as "CODE: text" (learnerText).
func errText(lang i18n.Lang, e *Error) string {
	return e.Code + ": " + learnerText(lang, e)
}

// formCall turns a control form into its API request.
func formCall(action string, get func(string) string) (apiCall, error) {
	// bad refuses a field: msg for the API's message, key and args for
	// the flash in the learner's language.
	bad := func(msg, key string, args ...string) (apiCall, error) {
		return apiCall{}, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, msg).withKey(key, args...)
	}
	broker := func() (string, error) {
		id := get("broker")
		if _, err := strconv.ParseInt(id, 10, 32); err != nil {
			q := strconv.Quote(clip.Bytes(id, 20))
			return "", KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "broker must be an integer, got "+q).withKey("form.broker", q)
		}
		return id, nil
	}
	switch action {
	case "crash", "power-loss", "restart", "fetch", "disk-failure":
		id, err := broker()
		if err != nil {
			return apiCall{}, err
		}
		return apiCall{"POST", "/api/v1/brokers/" + id + "/" + action, nil}, nil
	case "pause", "resume":
		return apiCall{"POST", "/api/v1/clock/" + action, nil}, nil
	case "step":
		ms, err := strconv.ParseInt(get("ms"), 10, 64)
		if err != nil {
			return bad("ms must be an integer", "form.ms")
		}
		return apiCall{"POST", "/api/v1/clock/step", map[string]any{"ms": ms}}, nil
	case "step-event":
		return apiCall{"POST", "/api/v1/clock/step-event", nil}, nil
	case "rate":
		rate, err := strconv.ParseFloat(get("rate"), 64)
		if err != nil || panel.RateValue(rate) == "" {
			return bad("rate must be 0.25, 1 or 4", "form.rate")
		}
		return apiCall{"POST", "/api/v1/clock/rate", map[string]any{"rate": rate}}, nil
	case "heal":
		return apiCall{"DELETE", "/api/v1/network/cuts", nil}, nil
	case "cut":
		from, err1 := strconv.ParseInt(get("from"), 10, 32)
		to, err2 := strconv.ParseInt(get("to"), 10, 32)
		if err1 != nil || err2 != nil {
			return bad("from and to must be node ids (0 is the controller)", "form.nodes")
		}
		return apiCall{"POST", "/api/v1/network/cuts", map[string]any{"from": from, "to": to, "oneway": get("oneway") == "true"}}, nil
	case "produce":
		topic := get("topic")
		n, err := strconv.Atoi(get("count"))
		if err != nil || n < 1 || n > MaxProduceRecords {
			return bad("count must be between 1 and "+strconv.Itoa(MaxProduceRecords), "form.count", strconv.Itoa(MaxProduceRecords))
		}
		body := map[string]any{"acks": get("acks")}
		if p := get("partition"); p != "" {
			v, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return bad("partition must be an integer", "form.partition")
			}
			body["partition"] = v
		}
		recs := make([]map[string]any, n)
		for i := range recs {
			value := get("value")
			if n > 1 {
				value += "-" + strconv.Itoa(i+1)
			}
			recs[i] = map[string]any{"value": value}
			if k := get("key"); k != "" {
				recs[i]["key"] = k
			}
		}
		body["records"] = recs
		// A person at the controls sees the broker's first answer at once
		// (a refusal is what the stage is teaching); scripts get the
		// producer's retries.
		body["delivery_timeout_ms"] = 0
		return apiCall{"POST", "/api/v1/topics/" + pathSegment(topic) + "/records", body}, nil
	case "configs":
		changes := map[string]any{}
		for _, k := range []string{"min.insync.replicas", "unclean.leader.election.enable", "truncation.rule", "segment.bytes"} {
			if v := strings.TrimSpace(get(k)); v != "" {
				changes[k] = v
			}
		}
		if len(changes) == 0 {
			return bad("no config to change: fill in at least one field", "form.no-configs")
		}
		return apiCall{"PATCH", "/api/v1/topics/" + pathSegment(get("topic")) + "/configs", changes}, nil
	case "fencing-rule":
		return apiCall{"PUT", "/api/v1/cluster/fencing-rule", FencingRuleBody{Rule: get("rule")}}, nil
	}
	return bad("unknown action "+strconv.Quote(clip.Bytes(action, 30)), "form.action", strconv.Quote(clip.Bytes(action, 30)))
}

// pathSegment keeps a topic name to one path segment; the API then checks
// the name itself.
func pathSegment(s string) string {
	if s == "" || strings.ContainsAny(s, "/?#%") || s == "." || s == ".." {
		return "%21invalid" // "!invalid": INVALID_TOPIC_EXCEPTION from the API
	}
	return s
}

// callAPI sends one request through the app's own routes, on behalf of
// the form post from, and returns the status and body.
func (s *Server) callAPI(from *http.Request, call apiCall) (int, []byte) {
	var body bytes.Buffer
	if call.body != nil {
		json.NewEncoder(&body).Encode(call.body)
	}
	req, err := http.NewRequestWithContext(from.Context(), call.method, call.path, &body)
	if err != nil {
		return http.StatusBadRequest, []byte(`{"error":{"code":"INVALID_REQUEST","message":"bad request"}}`)
	}
	req.Host = from.Host // already checked: the API's Host check passes it again
	if call.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.echo.ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// recorder is the http.ResponseWriter callAPI hands the app.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.body.Write(b)
}

// doneText says in lang what a successful control did.
func doneText(lang i18n.Lang, action string, get func(string) string, body []byte) string {
	switch action {
	case "produce":
		var r ProduceResponse
		if json.Unmarshal(body, &r) == nil {
			// An acks=0 producer hears nothing back: the lab's leader knows
			// where the records went, but a learner's producer would not,
			// so the answer names no offsets.
			if get("acks") == string(events.AcksNone) || r.BaseOffset < 0 {
				n, _ := strconv.Atoi(get("count"))
				return i18n.T(lang, "ui.done.produce0", max(n, 1), r.Partition)
			}
			return i18n.T(lang, "ui.done.produce", r.LastOffset-r.BaseOffset+1, r.Partition, r.BaseOffset, r.LastOffset, get("acks"))
		}
	case "crash", "power-loss", "restart", "fetch", "disk-failure":
		return i18n.T(lang, "ui.done."+action, get("broker"))
	case "step":
		return i18n.T(lang, "ui.done.step", get("ms"))
	case "step-event":
		var r StepEventResponse
		if json.Unmarshal(body, &r) == nil && !r.Found {
			return i18n.T(lang, "ui.done.step-event.none", r.SteppedMs)
		}
		return i18n.T(lang, "ui.done.step-event", r.SteppedMs)
	case "rate":
		var r ClockResponse
		json.Unmarshal(body, &r)
		return i18n.T(lang, "ui.done.rate", panel.RateLabel(panel.Catalog(views.PanelCatalog(lang)), r.Rate))
	case "cut":
		from, to := get("from"), get("to")
		if get("oneway") == "true" {
			return i18n.T(lang, "ui.done.cut1", from, to, from, to, to, from)
		}
		return i18n.T(lang, "ui.done.cut2", from, to)
	case "fencing-rule":
		return i18n.T(lang, "ui.done.fencing-rule", get("rule"))
	}
	return i18n.T(lang, "ui.done."+action)
}

// isPage reports whether an error answering r is shown as an HTML page
// rather than the API's JSON body: on the cluster's pages always, and on any
// other path outside the API, the static files and /ws when a browser asks
// for HTML (a lesson run's page after the run ended, an old link, a
// mistyped address, /metrics refused to a class's seat); a script asking
// for anything else (Prometheus asks for text) keeps the JSON.
func isPage(r *http.Request) bool {
	path := r.URL.Path
	if path == "/" || strings.HasPrefix(path, "/topics/") || (strings.HasPrefix(path, "/brokers/") && strings.HasSuffix(path, "/segments")) {
		return true
	}
	return strings.Contains(r.Header.Get("Accept"), "text/html") &&
		!strings.HasPrefix(path, "/api/") && !strings.HasPrefix(path, "/static/") && path != "/ws"
}

// renderErrorPage shows an error on a page route as HTML.
func (s *Server) renderErrorPage(c echo.Context, e *Error) error {
	lang := Lang(c)
	p := views.Page{Title: i18n.T(lang, "ui.error.title"), Lang: lang, Path: "/"}
	return Render(c, e.Status, views.ErrorPage(p, e.Status, e.Code, learnerText(lang, e)))
}

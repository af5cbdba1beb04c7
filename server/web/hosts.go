package web

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"tidemark/i18n"
	"tidemark/internal/clip"
)

// CodeForbiddenHost is the code of a request whose Host is not this lab's.
const CodeForbiddenHost = "FORBIDDEN_HOST"

// hostPolicy decides which Host headers name this lab: loopback names and
// addresses (localhost, 127.0.0.0/8, ::1) at the port the request arrived
// on, plus the names the operator allowed (Options.AllowedHosts), at any
// port or at the one given.
//
// It is what stops DNS rebinding: a page on evil.example can make its own
// name resolve to 127.0.0.1, and the browser then sends it to the lab as
// same-origin, with Host (and Origin) evil.example. The lab has no login, so
// only the Host tells it apart.
type hostPolicy struct {
	names map[string]bool // lower-case "name" (any port) or "name:port"
}

// newHostPolicy checks and keeps the operator's extra host names.
func newHostPolicy(allowed []string) (hostPolicy, error) {
	p := hostPolicy{names: map[string]bool{}}
	for _, h := range allowed {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" || strings.ContainsAny(h, "/?#@ ") {
			return p, fmt.Errorf("web: allowed host %q: want a host name or name:port", h)
		}
		p.names[h] = true
	}
	return p, nil
}

// allows reports whether host (a Host header: name or name:port) names this
// lab when the request arrived on localPort ("" when unknown).
func (p hostPolicy) allows(host, localPort string) bool {
	host = strings.ToLower(host)
	name, port := host, ""
	if n, pt, err := net.SplitHostPort(host); err == nil {
		name, port = n, pt
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1] // [::1] without a port
	}
	if p.names[name] || (port != "" && p.names[host]) {
		return true
	}
	if port != "" && localPort != "" && port != localPort {
		return false
	}
	ip := net.ParseIP(name)
	return name == "localhost" || (ip != nil && ip.IsLoopback())
}

// checkHost refuses, before routing, every request whose Host is not this
// lab's (421 Misdirected Request): pages, the API, /ws and static files
// alike. Mutating routes also check the Origin (sameOrigin), which must then
// equal this checked Host.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		localPort := ""
		if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			_, localPort, _ = net.SplitHostPort(a.String())
		}
		if !s.hosts.allows(r.Host, localPort) {
			host := clip.Bytes(r.Host, 80)
			return &Error{Status: http.StatusMisdirectedRequest, Code: CodeForbiddenHost,
				Message: i18n.T(Lang(c), "limits.host.refused", host)}
		}
		return next(c)
	}
}

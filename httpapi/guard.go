package httpapi

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// Two checks keep web pages of other sites from using a server that was not
// opened to them (a browser still sends such a page's requests; it only
// hides the answers).

// checkJSONBody refuses a POST whose body is not declared JSON, with 415.
// A page of any site may send a "simple" cross-origin request — text/plain,
// a form, or no Content-Type — without a CORS preflight, and a server that
// read its body as JSON would start the generation it asks for; a JSON
// Content-Type needs a preflight, which only an origin Options.AllowOrigin
// names passes. Parameters (charset=utf-8) are fine.
func checkJSONBody(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt == "application/json" {
		return nil
	}
	got := "none"
	if ct != "" {
		got = fmt.Sprintf("%q", ct)
	}
	return &apiError{status: http.StatusUnsupportedMediaType, typ: typeInvalidRequest, code: "unsupported_media_type",
		message: "the request body must be JSON, sent with Content-Type: application/json; got " + got}
}

// checkHost refuses, with 403, a request whose Host names a server that
// Options.AllowHost does not accept. A server on 127.0.0.1 is otherwise open
// to DNS rebinding: a page of evil.example whose name then resolves to
// 127.0.0.1 is, to the browser, of the same origin as evil.example:8080 —
// the server — and may read every answer. The name is the only thing that
// gives it away.
func (h *Handler) checkHost(r *http.Request) *apiError {
	if h.opts.AllowHost == nil {
		return nil
	}
	name := HostName(r.Host)
	if h.opts.AllowHost(name) {
		return nil
	}
	return &apiError{status: http.StatusForbidden, typ: typeInvalidRequest, code: "host_not_allowed",
		message: fmt.Sprintf("this server does not answer to the name %q (wasmlm serve -allow-host %s would allow it)", name, name)}
}

// HostName is the name in a Host header, as Options.AllowHost receives it:
// without the port or an IPv6 address's brackets, in lower case, without a
// trailing dot ("LocalHost.:8080" → "localhost", "[::1]:8080" → "::1").
func HostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

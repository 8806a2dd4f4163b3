package httpapi

import (
	"net/http"
	"strings"
)

// allowOrigin sets the CORS headers every response to r carries and
// reports whether r comes from a page of an origin Options.AllowOrigin
// allows. With one allowed origin the answer depends on the request's
// Origin, so every response says Vary: Origin, and a shared cache cannot
// hand one origin's answer to another.
func (h *Handler) allowOrigin(w http.ResponseWriter, r *http.Request) bool {
	allow := h.opts.AllowOrigin
	if allow == "" {
		return false
	}
	hdr := w.Header()
	if allow != "*" {
		hdr.Add("Vary", "Origin")
		if r.Header.Get("Origin") != allow {
			return false
		}
	}
	hdr.Set("Access-Control-Allow-Origin", allow)
	// A 503's or 429's Retry-After is not a CORS-safelisted response
	// header: without this, a page's client could not see how long to wait.
	hdr.Set("Access-Control-Expose-Headers", "Retry-After, Retry-After-Ms")
	return true
}

// preflight answers a CORS preflight from an allowed origin: the route's
// methods, and the request headers the page asked for, whatever they are.
// The API reads only Content-Type (and no credentials), so a header a
// client adds (the openai SDK's X-Stainless-*, Authorization, OpenAI-
// Organization) changes nothing here and may as well be allowed; a fixed
// list would fail every client that sends one more. The answer depends on
// Access-Control-Request-Headers, which Vary says.
func preflight(w http.ResponseWriter, r *http.Request, methods []string) {
	hdr := w.Header()
	hdr.Add("Vary", "Access-Control-Request-Headers")
	hdr.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	if asked := r.Header.Values("Access-Control-Request-Headers"); len(asked) > 0 {
		hdr.Set("Access-Control-Allow-Headers", strings.Join(asked, ", "))
	}
	// Chromium asks this of a public page calling a server on a private or
	// loopback address (Private Network Access); an allowed origin may.
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		hdr.Set("Access-Control-Allow-Private-Network", "true")
	}
	hdr.Set("Access-Control-Max-Age", "7200") // Chromium's cap; Firefox's is a day
}

package main

import (
	"net/http"
	"strings"
)

// joinHeaders gives next each request header as the request carried it.
// syumai/workers (v0.32.0, jshttp.ToHeader) splits every header value at
// its commas into several values, so Header.Get sees only the part before
// the first comma: "Authorization: Bearer sk-a,anything" would pass as the
// key sk-a. Joining the parts with commas restores the value exactly (the
// JavaScript Headers it came from had already combined repeated headers
// with ", ", as a list header may be).
func joinHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name, values := range r.Header {
			if len(values) > 1 {
				r.Header[name] = []string{strings.Join(values, ",")}
			}
		}
		next.ServeHTTP(w, r)
	})
}

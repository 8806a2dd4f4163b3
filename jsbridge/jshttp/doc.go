// Package jshttp carries HTTP between JavaScript and a Go http.Handler on
// GOOS=js: a request given as parts (method, URL, headers, a body already
// in Go memory) is served by the handler, and its response goes back to
// JavaScript a part at a time, the status and headers with the first, then
// each time the handler flushes (a Server-Sent Event leaves as soon as it
// is written). The page's serveHTTP (package jsbridge) and the edge worker
// (cmd/worker) both serve httpapi through it.
package jshttp

package jshttp

import (
	"bytes"
	"context"
	"net/http"
	"syscall/js"
)

var (
	object     = js.Global().Get("Object")
	uint8Array = js.Global().Get("Uint8Array")
	arrayBuf   = js.Global().Get("ArrayBuffer")
)

// NewRequest is the http.Request of a request's parts: rawURL absolute
// ("http://localhost/v1/models"), body the bytes read of it (see Body) and
// size its whole length, the request's ContentLength.
func NewRequest(ctx context.Context, method, rawURL string, header http.Header, body []byte, size int64) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, method, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	r.Header, r.ContentLength = header, size
	return r, nil
}

// Parts reads the header and body of a request a host's own JavaScript
// made, {headers, body}: headers an array of [name, value] pairs, body a
// Uint8Array, an ArrayBuffer or undefined, read as Body reads it (size is
// its whole length).
func Parts(req js.Value, limit int) (header http.Header, body []byte, size int64) {
	header = http.Header{}
	pairs := req.Get("headers")
	for i := range pairs.Length() {
		pair := pairs.Index(i)
		header.Add(pair.Index(0).String(), pair.Index(1).String())
	}
	if b := req.Get("body"); !b.IsUndefined() && !b.IsNull() {
		body, size, _ = Body(b, limit)
	}
	return header, body, size
}

// Body copies a request body, a Uint8Array or an ArrayBuffer, into Go
// memory, but not more than limit+1 bytes (one byte beyond a handler's
// limit tells it the body is too large); size is the body's whole length.
// ok is false when v is neither.
func Body(v js.Value, limit int) (data []byte, size int64, ok bool) {
	var u8 js.Value
	switch {
	case v.InstanceOf(uint8Array):
		u8 = v
	case v.InstanceOf(arrayBuf):
		u8 = uint8Array.New(v)
	default:
		return nil, 0, false
	}
	n := u8.Length()
	if n > limit+1 {
		u8 = u8.Call("subarray", 0, limit+1)
	}
	data = make([]byte, u8.Length())
	js.CopyBytesToGo(data, u8)
	return data, int64(n), true
}

// Serve runs h on r and hands its response to send: an object {status,
// headers, body} when the response starts, headers an array of [name,
// value] pairs, then {body} each time the handler flushes, body a
// Uint8Array. The last part is sent when h returns. An error of send ends
// the response: later writes fail with it, and Serve returns it.
func Serve(h http.Handler, r *http.Request, send func(part js.Value) error) error {
	w := &responseWriter{send: send, header: http.Header{}}
	h.ServeHTTP(w, r)
	w.flush()
	return w.err
}

// responseWriter is Serve's http.ResponseWriter: it keeps what the handler
// writes until the handler flushes (or returns), or partBytes of it, then
// sends it, the status and headers with the first part.
type responseWriter struct {
	send    func(part js.Value) error
	header  http.Header
	status  int    // 0 until the handler writes the header (or a byte)
	started bool   // the head was sent
	buf     []byte // written, not yet sent
	err     error  // send failed: later writes fail
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
}

// partBytes is the most of a response kept before it is sent: a large
// body (a list of 2,048 embeddings is some 9 MB of JSON) leaves in parts
// of this size as it is written, rather than held whole in Go memory
// until the handler returns.
const partBytes = 64 << 10

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	w.WriteHeader(http.StatusOK)
	n := 0
	for len(p) > 0 {
		k := min(len(p), partBytes-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(w.buf) >= partBytes {
			if w.flush(); w.err != nil {
				return n, w.err
			}
		}
	}
	return n, nil
}

// FlushError sends what was written (http.ResponseController.Flush calls
// it): a Server-Sent Event leaves as soon as it is written.
func (w *responseWriter) FlushError() error {
	w.flush()
	return w.err
}

// flush sends what was written since the last part: with the status and
// headers, the first time.
func (w *responseWriter) flush() {
	if w.err != nil || (w.started && len(w.buf) == 0) {
		return
	}
	w.WriteHeader(http.StatusOK)
	part := object.New()
	if !w.started {
		part.Set("status", w.status)
		var pairs []any
		for name, values := range w.header {
			for _, v := range values {
				pairs = append(pairs, []any{name, v})
			}
		}
		part.Set("headers", pairs)
		w.started = true
	}
	body := uint8Array.New(len(w.buf))
	js.CopyBytesToJS(body, w.buf)
	part.Set("body", body)
	w.buf = w.buf[:0]
	w.err = w.send(part)
}

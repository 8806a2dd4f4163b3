package jshttp

import (
	"context"
	"io"
	"net/http"
	"strings"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// part is one part Serve sent, read back from JavaScript.
type part struct {
	status  int // 0: not the first part
	headers [][2]string
	body    string
}

func readPart(v js.Value) part {
	var p part
	if s := v.Get("status"); !s.IsUndefined() {
		p.status = s.Int()
		h := v.Get("headers")
		for i := range h.Length() {
			p.headers = append(p.headers, [2]string{h.Index(i).Index(0).String(), h.Index(i).Index(1).String()})
		}
	}
	b := v.Get("body")
	data := make([]byte, b.Length())
	js.CopyBytesToGo(data, b)
	p.body = string(data)
	return p
}

// TestServe: the handler's response comes back in parts, the status and
// headers with the first, then one part per flush or per partBytes
// written, the rest when it returns; the request carries its method, URL, headers and body.
func TestServe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    []part
	}{
		{"flushed twice", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Test")+" "+string(body))
			require.NoError(t, http.NewResponseController(w).Flush())
			_, _ = io.WriteString(w, "two")
			require.NoError(t, http.NewResponseController(w).Flush())
			_, _ = io.WriteString(w, "three")
		}, []part{
			{status: http.StatusCreated, headers: [][2]string{{"Content-Type", "text/event-stream"}}, body: "POST /v1/x yes hello"},
			{body: "two"},
			{body: "three"},
		}},
		{"larger than a part", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, strings.Repeat("a", partBytes-1))
			_, _ = io.WriteString(w, strings.Repeat("b", 2*partBytes+10))
		}, []part{
			{status: http.StatusOK, body: strings.Repeat("a", partBytes-1) + "b"},
			{body: strings.Repeat("b", partBytes)},
			{body: strings.Repeat("b", partBytes)},
			{body: strings.Repeat("b", 9)},
		}},
		{"nothing written", func(http.ResponseWriter, *http.Request) {}, []part{{status: http.StatusOK, body: ""}}},
		{"flushed with nothing new", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "one")
			require.NoError(t, http.NewResponseController(w).Flush())
			require.NoError(t, http.NewResponseController(w).Flush())
		}, []part{{status: http.StatusOK, body: "one"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte("hello")
			r, err := NewRequest(context.Background(), "POST", "http://localhost/v1/x", http.Header{"X-Test": {"yes"}}, body, int64(len(body)))
			require.NoError(t, err)
			var got []part
			require.NoError(t, Serve(tc.handler, r, func(v js.Value) error { got = append(got, readPart(v)); return nil }))
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestServeSendFails: once send fails, writes fail with its error and
// Serve returns it.
func TestServeSendFails(t *testing.T) {
	gone := io.ErrClosedPipe
	var writeErr error
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "one")
		_ = http.NewResponseController(w).Flush()
		_, writeErr = io.WriteString(w, "two")
	})
	r, err := NewRequest(context.Background(), "GET", "http://localhost/", http.Header{}, nil, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, Serve(h, r, func(js.Value) error { return gone }), gone)
	assert.ErrorIs(t, writeErr, gone)
}

// TestBody: a Uint8Array or an ArrayBuffer is copied up to limit+1 bytes,
// with its whole size; anything else is refused.
func TestBody(t *testing.T) {
	u8 := js.Global().Get("Uint8Array").New(5)
	js.CopyBytesToJS(u8, []byte("abcde"))
	for _, tc := range []struct {
		name  string
		v     js.Value
		limit int
		data  string
		size  int64
		ok    bool
	}{
		{"Uint8Array", u8, 10, "abcde", 5, true},
		{"ArrayBuffer", u8.Get("buffer"), 10, "abcde", 5, true},
		{"over the limit", u8, 2, "abc", 5, true},
		{"a string", js.ValueOf("abc"), 10, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, size, ok := Body(tc.v, tc.limit)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.data, string(data))
			assert.Equal(t, tc.size, size)
		})
	}
}

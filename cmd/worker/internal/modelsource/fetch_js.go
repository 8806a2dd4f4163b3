package modelsource

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall/js"

	"github.com/wasmlm/wasmlm/cmd/internal/jspromise"
)

// Fetch is a Store of URLs read with HTTP Range requests through a fetch
// function: globalThis's, or a static-assets binding's (env.ASSETS.fetch).
// The server must honour ranges (206 with a Content-Range that says which
// bytes and the file's size). One that answers a range with the whole file
// (200), as miniflare's static assets do, is accepted for the file it
// sends: the file is then held whole in JavaScript while it is read, one
// file at a time (a split set's parts each once for its header and once
// for its weights), and counted against the budget.
type Fetch struct {
	// fetch(ctx, url, init) is the Response's promise awaited
	fetch  func(ctx context.Context, args ...any) (js.Value, error)
	assets string // the assets binding's name, "" for globalThis's fetch
	// wholeURL's whole file, as a server that ignores Range sent it
	wholeURL string
	whole    js.Value
	body     reader
}

var _ Store = (*Fetch)(nil)

// NewFetch is the Store of URLs fetched with globalThis.fetch, called as a
// plain function: workerd's fetch throws "Illegal invocation" when called
// as a method of the global object Go's js.Global() stands for.
func NewFetch() *Fetch {
	fn := js.Global().Get("fetch")
	return &Fetch{fetch: func(ctx context.Context, args ...any) (js.Value, error) {
		return jspromise.AwaitInvoke(ctx, fn, "fetch", args...)
	}}
}

// NewAssets is the Store of the static assets of a binding (binding.fetch)
// bound as name.
func NewAssets(binding js.Value, name string) *Fetch {
	return &Fetch{assets: name, fetch: func(ctx context.Context, args ...any) (js.Value, error) {
		return jspromise.AwaitCall(ctx, binding, "fetch", args...)
	}}
}

// Open gets the URL's first n bytes with a Range request.
func (s *Fetch) Open(ctx context.Context, url string, n int) (Object, Chunk, error) {
	resp, err := s.get(ctx, url, 0, n)
	if err != nil {
		return Object{}, nil, err
	}
	switch status := resp.Get("status").Int(); status {
	case 206:
		start, size, err := contentRange(resp)
		if err != nil {
			return Object{}, nil, err
		}
		if start != 0 {
			return Object{}, nil, fmt.Errorf("asked for the bytes from 0, the server sent them from %d", start)
		}
		c, err := s.body.read(ctx, resp, int(min(int64(n), size)))
		if err != nil {
			return Object{}, nil, err
		}
		if int64(c.Len()) != min(int64(n), size) {
			return Object{}, nil, fmt.Errorf("%d bytes from byte 0, not %d: %w", c.Len(), min(int64(n), size), ErrShort)
		}
		return Object{Size: size}, c, nil
	case 200: // the server ignores Range: the whole file
		if err := s.keepWhole(ctx, url, resp); err != nil {
			return Object{}, nil, err
		}
		size := int64(s.whole.Length())
		return Object{Size: size, Held: size}, jsChunk{s.whole.Call("subarray", 0, min(int64(n), size))}, nil
	case 416: // no byte 0: an empty file
		return Object{Size: 0}, Bytes(nil), nil
	default:
		return Object{}, nil, statusError(resp)
	}
}

// Read gets n bytes of the URL from off with a Range request (or from the
// whole file, when the server sent it).
func (s *Fetch) Read(ctx context.Context, url string, off int64, n int) (Chunk, error) {
	if url == s.wholeURL {
		return s.fromWhole(off, n)
	}
	release()
	resp, err := s.get(ctx, url, off, n)
	if err != nil {
		return nil, err
	}
	switch status := resp.Get("status").Int(); status {
	case 206:
	case 200:
		if err := s.keepWhole(ctx, url, resp); err != nil {
			return nil, err
		}
		return s.fromWhole(off, n)
	case 416:
		return nil, fmt.Errorf("the server has no byte %d (416): %w", off, ErrShort)
	default:
		return nil, statusError(resp)
	}
	if start, _, err := contentRange(resp); err != nil {
		return nil, err
	} else if start != off {
		return nil, fmt.Errorf("asked for the bytes from %d, the server sent them from %d", off, start)
	}
	c, err := s.body.read(ctx, resp, n)
	if err != nil {
		return nil, err
	}
	if c.Len() != n {
		return nil, fmt.Errorf("%d bytes from byte %d, not %d: %w", c.Len(), off, n, ErrShort)
	}
	return c, nil
}

// Describe names the URL without its query, or the asset.
func (s *Fetch) Describe(url string) string {
	if s.assets != "" {
		return fmt.Sprintf("%s asset %q", s.assets, filePathOf(url))
	}
	return safeURL(url)
}

// Forget drops the whole file held, if any (after the load).
func (s *Fetch) Forget() { s.wholeURL, s.whole = "", js.Undefined() }

// keepWhole keeps the body of resp, a 200 to a Range request (the whole
// file), in place of the one held before; one the response says would not
// fit an isolate beside the model is refused unread.
func (s *Fetch) keepWhole(ctx context.Context, url string, resp js.Value) error {
	s.Forget()
	release()
	if length := resp.Get("headers").Call("get", "Content-Length"); !isNullish(length) {
		if l, err := strconv.ParseInt(length.String(), 10, 64); err == nil && l > DefaultBudget {
			_, _ = jspromise.Call(resp.Get("body"), "cancel")
			return fail(CodeTooLarge, "the server of %s ignores Range requests and would send all %s at once, more than an isolate holds beside the model: serve it from a server that honours Range, or from R2", s.Describe(url), mib(l))
		}
	}
	buffer, err := jspromise.AwaitCall(ctx, resp, "arrayBuffer")
	if err != nil {
		return fmt.Errorf("reading the response: %w", err)
	}
	s.wholeURL, s.whole = url, bytesOf(buffer).u8
	return nil
}

// fromWhole is n bytes from off of the whole file held.
func (s *Fetch) fromWhole(off int64, n int) (Chunk, error) {
	if size := int64(s.whole.Length()); off+int64(n) > size {
		return nil, fmt.Errorf("%d bytes from byte %d of %d: %w", n, off, size, ErrShort)
	}
	return jsChunk{s.whole.Call("subarray", off, off+int64(n))}, nil
}

// get fetches bytes [off, off+n) of url.
func (s *Fetch) get(ctx context.Context, url string, off int64, n int) (js.Value, error) {
	init := map[string]any{"headers": map[string]any{"Range": fmt.Sprintf("bytes=%d-%d", off, off+int64(n)-1)}}
	resp, err := s.fetch(ctx, url, init)
	if err != nil {
		return js.Undefined(), fmt.Errorf("fetch: %w", err)
	}
	return resp, nil
}

// contentRange reads a 206's Content-Range: "bytes START-END/SIZE".
func contentRange(resp js.Value) (start, size int64, err error) {
	h := resp.Get("headers").Call("get", "Content-Range")
	if isNullish(h) {
		return 0, 0, fmt.Errorf("the server answered 206 without a Content-Range")
	}
	text := h.String()
	spec, ok := strings.CutPrefix(text, "bytes ")
	rng, total, ok2 := strings.Cut(spec, "/")
	first, _, ok3 := strings.Cut(rng, "-")
	start, err1 := strconv.ParseInt(first, 10, 64)
	size, err2 := strconv.ParseInt(total, 10, 64)
	if !ok || !ok2 || !ok3 || err1 != nil || err2 != nil || start < 0 || size < 0 {
		return 0, 0, fmt.Errorf("the server's Content-Range %q does not say the file's size (bytes START-END/SIZE)", text)
	}
	return start, size, nil
}

// statusError is a response that is neither 206 nor 200: a 404 is
// ErrNotFound.
func statusError(resp js.Value) error {
	status := resp.Get("status").Int()
	if status == 404 || status == 410 {
		return fmt.Errorf("HTTP %d: %w", status, ErrNotFound)
	}
	return fmt.Errorf("HTTP %d %s", status, resp.Get("statusText").String())
}

// filePathOf is a URL's path.
func filePathOf(url string) string { p, _ := filePath(url); return p }

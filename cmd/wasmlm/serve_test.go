//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/cmd/internal/servecli"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// lockedBuffer is an io.Writer the server goroutine and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// servedAt waits for serve to announce its address on stderr and returns
// its base URL.
func servedAt(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	addrRE := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)/`)
	var base string
	require.Eventually(t, func() bool {
		m := addrRE.FindStringSubmatch(stderr.String())
		if m != nil {
			base = "http://" + m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "serve never announced its address: %s", stderr)
	return base
}

// TestServe: wasmlm serve on a free port answers the API and serves the web
// directory at /, logs each completion, and exits 0 when interrupted.
func TestServe(t *testing.T) {
	web := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(web, "index.html"), []byte("<h1>wasmlm</h1>"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(web, "models"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(web, "models", "m.gguf"), []byte("GGUF"), 0o644))
	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-web", web, "-slots", "2", "-kv-type", "f16"}, io.Discard, &stderr)
	}()

	base := servedAt(t, &stderr)

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "<h1>wasmlm</h1>", body)
	code, body = get("/models/m.gguf")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "GGUF", body)
	code, body = get("/models/")
	assert.Equal(t, http.StatusNotFound, code, "a directory is not listed")
	assert.NotContains(t, body, "m.gguf")
	code, body = get("/health")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ok"}`, body)
	code, body = get("/v1/models")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"id":"stories260K"`)
	assert.Contains(t, body, `"kv_type":"f16"`, "the slots' KV cache is -kv-type's")
	assert.Contains(t, stderr.String(), "f16 KV cache")
	code, body = get("/v1/nope")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, `"error"`)

	// DNS rebinding: the server's address under another name.
	req, err := http.NewRequest("GET", base+"/health", nil)
	require.NoError(t, err)
	req.Host = "rebound.example"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a name the server does not answer to")

	model, completed := greedyCompletion(t, base, 4)
	assert.Equal(t, "stories260K", model)
	assert.Equal(t, 4, completed)
	require.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), "/v1/completions: 5+4 tokens, length")
	}, 10*time.Second, 10*time.Millisecond, "the completion is logged: %s", &stderr)

	tokens := checkEmbeddings(t, base, `{"input": ["Once upon a time", "Lily"]}`, 2)
	require.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), fmt.Sprintf("/v1/embeddings: 2 texts, %d tokens; queued", tokens))
	}, 10*time.Second, 10*time.Millisecond, "the embeddings are logged: %s", &stderr)
	stopServe(t, interrupt, exit, &stderr)
}

// TestServeIsolated: with -isolate, the web directory's files come with
// COOP and COEP (a page served so is cross-origin isolated); without it,
// and on the API, they do not.
func TestServeIsolated(t *testing.T) {
	web := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(web, "index.html"), []byte("<h1>wasmlm</h1>"), 0o644))
	for _, isolate := range []bool{false, true} {
		t.Run(fmt.Sprint("isolate=", isolate), func(t *testing.T) {
			args := []string{"serve", "-addr", "127.0.0.1:0", "-web", web, "-slots", "1"}
			if isolate {
				args = append(args, "-isolate")
			}
			ctx, interrupt := context.WithCancel(context.Background())
			var stderr lockedBuffer
			exit := make(chan int, 1)
			go func() { exit <- run(ctx, args, io.Discard, &stderr) }()
			base := servedAt(t, &stderr)
			for _, path := range []string{"/", "/index.html", "/health"} {
				resp, err := http.Get(base + path)
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode, path)
				want := isolate && path != "/health"
				assert.Equal(t, want, resp.Header.Get("Cross-Origin-Opener-Policy") == "same-origin", "COOP of %s", path)
				assert.Equal(t, want, resp.Header.Get("Cross-Origin-Embedder-Policy") == "require-corp", "COEP of %s", path)
			}
			stopServe(t, interrupt, exit, &stderr)
		})
	}
}

// greedyCompletion asks serve at base for n tokens greedily after "Once
// upon a time" and returns the model the answer names and the tokens it
// counts.
func greedyCompletion(t *testing.T, base string, n int) (model string, tokens int) {
	t.Helper()
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": %d, "temperature": 0}`, n)))
	require.NoError(t, err)
	defer resp.Body.Close()
	var c struct {
		Model string `json:"model"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&c))
	return c.Model, c.Usage.CompletionTokens
}

// checkEmbeddings posts body to serve's /v1/embeddings and checks the
// answer: n vectors of 64 values (the width of the default model and of
// these tests' encoders). It returns the tokens it counted.
func checkEmbeddings(t *testing.T, base, body string, n int) int {
	t.Helper()
	resp, err := http.Post(base+"/v1/embeddings", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var e struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.Len(t, e.Data, n)
	for _, d := range e.Data {
		assert.Len(t, d.Embedding, 64)
	}
	return e.Usage.PromptTokens
}

// stopServe interrupts serve, as Ctrl-C does, and checks that it exits 0
// within its grace.
func stopServe(t *testing.T, interrupt context.CancelFunc, exit <-chan int, stderr *lockedBuffer) {
	t.Helper()
	interrupt()
	select {
	case code := <-exit:
		assert.Equal(t, exitOK, code, stderr.String())
	case <-time.After(servecli.DefaultShutdownGrace + servecli.CloseMargin + 5*time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeEmbeddingModel: serve starts with an embedding model, says so,
// serves its embeddings and refuses completions, saying what it does, and
// embeddings of more tokens than -max-embed-tokens.
func TestServeEmbeddingModel(t *testing.T) {
	bert := writeModel(t, t.TempDir(), modelgen.Spec{Arch: "bert", Shape: tinyBert, Type: tensor.Q8_0, Seed: 3})
	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-m", bert, "-addr", "127.0.0.1:0", "-web", "", "-slots", "1", "-max-embed-tokens", "40"}, io.Discard, &stderr)
	}()
	base := servedAt(t, &stderr)
	assert.Contains(t, stderr.String(), "serve: bert (context 64, an embedding model: no KV cache, 1 slot, queue 64, 17 per client)",
		"the default per-client share: the slot and a quarter of the queue")

	checkEmbeddings(t, base, `{"input": ["A cat sat on the mat.", "Stocks fell."]}`, 2)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, body := post("/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"code":"model_not_supported"`)
	assert.Contains(t, body, "it embeds text (POST /v1/embeddings)")
	status, body = post("/v1/embeddings", `{"input": ["A cat sat on the mat.", "Stocks fell.", "A cat sat on the mat.", "Stocks fell.", "A cat sat on the mat.", "Stocks fell."]}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"param":"input","code":"max_tokens_per_request"`)
	assert.Contains(t, body, "tokens, max 40 tokens per request")
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "/v1/embeddings: 2 texts, ") },
		10*time.Second, 10*time.Millisecond, "logged: %s", &stderr)
	stopServe(t, interrupt, exit, &stderr)
}

func TestServeFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing")
	for _, args := range [][]string{
		{"serve", "-web", missing},
		{"serve", "-slots", "0"},
		{"serve", "-queue", "-1"},
		{"serve", "-client-queue", "-1"},
		{"serve", "extra"},
		{"serve", "-allow-host", ""},
		{"serve", "-cors", "app.example"},
		{"serve", "-cors", "https://app.example/page"},
		{"serve", "-cors", "ftp://app.example"},
		{"serve", "-cors", "https://user@app.example"},
		{"serve", "-read-timeout", "-1s"},
		{"serve", "-write-timeout", "-1s"},
		{"serve", "-idle-timeout", "-1s"},
		{"serve", "-max-conns", "-1"},
		{"serve", "-max-embed-tokens", "-1"},
		{"serve", "-shutdown-grace", "-1s"},
	} {
		var stderr bytes.Buffer
		assert.Equal(t, exitUsage, run(context.Background(), args, io.Discard, &stderr), "%v: %s", args, &stderr)
	}
	dir, err := chooseWebDir(missing, false)
	assert.NoError(t, err, "a missing default web directory is not an error")
	assert.Empty(t, dir)
}

// TestLimitListener: with n connections open the next is
// not accepted until one of them closes (once, however often it is closed);
// closing the listener ends a waiting Accept.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := newLimitListener(inner, 2)
	accepted := make(chan net.Conn, 4)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()
	for range 4 {
		c, err := net.Dial("tcp", inner.Addr().String())
		require.NoError(t, err)
		defer c.Close()
	}
	next := func() net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("a waiting connection was not accepted once a place was free")
			return nil
		}
	}
	none := func() {
		t.Helper()
		select {
		case <-accepted:
			t.Fatal("a connection was accepted while two were open")
		case <-time.After(100 * time.Millisecond):
		}
	}
	first, second := next(), next()
	none()
	require.NoError(t, first.Close())
	assert.Error(t, first.Close())
	third := next()
	none()
	require.NoError(t, second.Close())
	require.NoError(t, next().Close())
	require.NoError(t, third.Close())
	require.NoError(t, ln.Close())
	assert.ErrorIs(t, <-acceptErr, net.ErrClosed)
}

// rawConn is a hand-driven keep-alive client connection, so that a test
// knows which connection each request goes on.
type rawConn struct {
	net.Conn
	rd *bufio.Reader
}

// connLiveness bounds how long a test waits for an answer or a close that
// must come: far less than the minute of idle timeout the tests set, so
// that only what they test can bring it about in time.
const connLiveness = 10 * time.Second

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr) // the kernel completes it, accepted or not
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, rd: bufio.NewReader(c)}
}

// send writes a GET of path.
func (c *rawConn) send(path string) error {
	_, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path)
	return err
}

// answer reads the answer to a request sent, which must be 200 and kept alive.
func (c *rawConn) answer() error {
	if err := c.SetReadDeadline(time.Now().Add(connLiveness)); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.rd, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && (resp.StatusCode != http.StatusOK || resp.Close) {
		err = fmt.Errorf("%s, close %t", resp.Status, resp.Close)
	}
	return err
}

// get sends a GET of path and reads its answer.
func (c *rawConn) get(path string) error {
	if err := c.send(path); err != nil {
		return err
	}
	return c.answer()
}

// closedByServer says whether the server has closed the connection (or
// does within connLiveness).
func (c *rawConn) closedByServer() bool {
	if err := c.SetReadDeadline(time.Now().Add(connLiveness)); err != nil {
		return false
	}
	_, err := c.rd.ReadByte()
	return err == io.EOF
}

// TestIdleConnectionsMakeRoom (-max-conns): when every place is taken, the
// connection idle longest is closed, so a client waiting in the backlog is
// served at once rather than after the idle timeout (a minute here, longer
// than the test waits); below the cap, idle connections are kept.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	// serve serves "ok" through a limitListener of maxConns places; a GET
	// of /wait says it has come in on entered, then waits for release to
	// close; each connection going idle is told on idled once the
	// listener has seen it.
	type server struct {
		addr           string
		entered, idled chan struct{}
		release        chan struct{}
	}
	serve := func(t *testing.T, maxConns int) server {
		inner, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ln := newLimitListener(inner, maxConns)
		s := server{addr: inner.Addr().String(), entered: make(chan struct{}, 8), idled: make(chan struct{}, 64), release: make(chan struct{})}
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/wait" {
					s.entered <- struct{}{}
					<-s.release
				}
				io.WriteString(w, "ok")
			}),
			IdleTimeout: time.Minute,
			ConnState: func(c net.Conn, state http.ConnState) {
				ln.ConnState(c, state)
				if state == http.StateIdle {
					s.idled <- struct{}{}
				}
			},
		}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return s
	}
	// get is c.get(path), after which the listener has seen c idle.
	get := func(t *testing.T, s server, c *rawConn, path string) error {
		t.Helper()
		if err := c.get(path); err != nil {
			return err
		}
		select {
		case <-s.idled:
		case <-time.After(connLiveness):
			t.Fatal("the connection was not seen idle")
		}
		return nil
	}

	t.Run("a new client", func(t *testing.T) {
		s := serve(t, 2)
		a := dialRaw(t, s.addr)
		require.NoError(t, get(t, s, a, "/"))
		b := dialRaw(t, s.addr)
		require.NoError(t, get(t, s, b, "/"), "b takes the last place: a, idle, is closed")
		assert.True(t, a.closedByServer())
		c := dialRaw(t, s.addr)
		require.NoError(t, get(t, s, c, "/"), "c is served, not kept in the backlog while b idles")
		assert.True(t, b.closedByServer())
	})

	t.Run("the longest idle, and only it", func(t *testing.T) {
		s := serve(t, 3)
		a, b := dialRaw(t, s.addr), dialRaw(t, s.addr)
		require.NoError(t, get(t, s, a, "/"))
		require.NoError(t, get(t, s, b, "/"))
		require.NoError(t, get(t, s, a, "/"), "below the cap, a was kept alive")
		c := dialRaw(t, s.addr)
		require.NoError(t, get(t, s, c, "/"), "c takes the last place: b, idle longest, is closed")
		assert.True(t, b.closedByServer())
		require.NoError(t, get(t, s, a, "/"), "a was kept alive")
		require.NoError(t, get(t, s, c, "/"), "c was kept alive")
	})

	t.Run("idle at the cap", func(t *testing.T) {
		s := serve(t, 2)
		a, b := dialRaw(t, s.addr), dialRaw(t, s.addr)
		require.NoError(t, a.send("/wait"))
		require.NoError(t, b.send("/wait"))
		for range 2 {
			select {
			case <-s.entered:
			case <-time.After(connLiveness):
				t.Fatal("a /wait did not come in")
			}
		}
		c := dialRaw(t, s.addr) // waits in the backlog: a and b hold the places
		require.NoError(t, c.send("/"))
		close(s.release)
		require.NoError(t, a.answer())
		require.NoError(t, b.answer())
		// The first of a and b to go idle does so at the cap and is
		// closed; the other too if c has taken the place by then.
		require.NoError(t, c.answer(), "a or b, idle at the cap, made room for c")
	})
}

// TestCapConns: -max-conns is lowered to (ulimit -n - fdReserve) /
// fdsPerConn, at least 1, and only when that is smaller; the flag's help and
// httpapi/README.md state that formula.
func TestCapConns(t *testing.T) {
	for _, tc := range []struct {
		maxConns int
		limit    uint64
		want     int
		why      string
	}{
		{256, 100, 42, "(100 - 16) / 2, not 100 / 2 - 16"},
		{256, 529, 256, "(529 - 16) / 2 = 256: no lower"},
		{256, 528, 256, "(528 - 16) / 2 = 256: no lower"},
		{256, 527, 255, "(527 - 16) / 2 = 255.5, rounded down"},
		{256, 20000, 256, "the limit is far above"},
		{256, 0, 256, "the limit is unknown"},
		{0, 100, 0, "no cap asked for"},
		{256, 17, 1, "(17 - 16) / 2 = 0: at least 1"},
		{256, 10, 1, "below the reserve: at least 1"},
	} {
		var log bytes.Buffer
		assert.Equal(t, tc.want, capConns(tc.maxConns, tc.limit, &log), "%d, %d: %s", tc.maxConns, tc.limit, tc.why)
		if tc.want != tc.maxConns {
			assert.Contains(t, log.String(), fmt.Sprintf("-max-conns %d lowered to %d", tc.maxConns, tc.want))
		} else {
			assert.Empty(t, log.String(), "nothing lowered, nothing said")
		}
	}

	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var limits servecli.ConnLimits
	limits.Register(fs)
	assert.Contains(t, fs.Lookup("max-conns").Usage, fmt.Sprintf("(open-file limit - %d) / %d", fdReserve, fdsPerConn))
	readme, err := os.ReadFile(filepath.Join("..", "..", "httpapi", "README.md"))
	require.NoError(t, err)
	formula := fmt.Sprintf("(`ulimit -n` − %d) / %d, at least 1", fdReserve, fdsPerConn)
	assert.True(t, strings.Contains(string(readme), formula), "httpapi/README.md states %s", formula)
}

// TestServeCORSHint: without -cors, serve says once at start-up that pages
// of other origins cannot call it and which flag allows them, and indeed
// answers such a page's request without Access-Control-Allow-Origin; with
// -cors it says nothing of it and allows that origin.
func TestServeCORSHint(t *testing.T) {
	for _, tc := range []struct {
		cors  []string
		hint  int
		allow string
	}{
		{nil, 1, ""},
		{[]string{"-cors", "http://app.example"}, 0, "http://app.example"},
	} {
		ctx, interrupt := context.WithCancel(context.Background())
		var stderr lockedBuffer
		exit := make(chan int, 1)
		go func() {
			exit <- run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-web", "", "-slots", "1"}, tc.cors...), io.Discard, &stderr)
		}()
		base := servedAt(t, &stderr)
		assert.Equal(t, tc.hint, strings.Count(stderr.String(), servecli.CORSOffHint+"\n"), stderr.String())
		req, err := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "http://app.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tc.allow, resp.Header.Get("Access-Control-Allow-Origin"))
		stopServe(t, interrupt, exit, &stderr)
	}
}

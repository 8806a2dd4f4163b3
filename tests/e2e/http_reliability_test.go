//go:build !js

package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The server's reliability suite: what docs/reliability.md's table
// says the server survives, against the real `wasmlm serve`. The numbers
// tried are these constants; TestHTTPReliabilityTable holds the table to them.
const (
	loadClients = 50 // streaming clients at once
	loadWaves   = 3
	loadTokens  = 64 // max_tokens of each stream
	loadSlots   = 2
	// loadClientQueue lets one client fill the default queue: the test's
	// clients share one address, which -client-queue's default would
	// count as one client and hold to a quarter of the queue.
	loadClientQueue = 64
	// loadRSSGrowth bounds the growth of the server's resident memory from
	// after the first wave to after the last: the first wave brings the
	// runtime's heap and goroutine stacks to their working size, and no later
	// wave may add more than a few MiB to it (the GC may run at other times).
	loadRSSGrowth = 4 << 20
)

// streamResult is what one streamed completion delivered.
type streamResult struct {
	texts, finishes, usages int
	done                    bool
}

// streamCompletion posts a streamed completion and checks every event: each
// data event a valid completion chunk, [DONE] last and once.
func streamCompletion(client *http.Client, base, path, body string) (streamResult, error) {
	var r streamResult
	resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		return r, fmt.Errorf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	rd := newSSEReader(resp.Body)
	for {
		ev, ok, err := rd.read()
		switch {
		case err != nil:
			return r, err
		case !ok && !r.done:
			return r, errors.New("the stream ended without [DONE]")
		case !ok:
			return r, nil
		case r.done:
			return r, fmt.Errorf("an event after [DONE]: %+v", ev)
		case ev.name != "":
			return r, fmt.Errorf("an %q event: %s", ev.name, ev.data)
		case ev.data == "[DONE]":
			r.done = true
			continue
		}
		var c struct {
			Choices []struct {
				Text         *string `json:"text"`
				FinishReason *string `json:"finish_reason"`
				Delta        *struct {
					Content *string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			return r, fmt.Errorf("an event that is not JSON: %q: %w", ev.data, err)
		}
		switch {
		case c.Usage != nil:
			r.usages++
		case len(c.Choices) != 1:
			return r, fmt.Errorf("%d choices: %s", len(c.Choices), ev.data)
		case c.Choices[0].FinishReason != nil:
			r.finishes++
		case c.Choices[0].Text != nil || (c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil):
			r.texts++
		}
	}
}

// TestHTTPServeUnderLoad: waves of concurrent streaming clients against
// `wasmlm serve` (2 slots and its default queue of 64, which their one
// address may fill, so that none is refused) each get a whole, well-formed stream, and the server's memory
// stays flat from wave to wave.
func TestHTTPServeUnderLoad(t *testing.T) {
	p := startServe(t, "-slots", fmt.Sprint(loadSlots), "-client-queue", fmt.Sprint(loadClientQueue))
	client := &http.Client{Timeout: 2 * time.Minute}
	var rss []int64
	for wave := range loadWaves {
		errs := make(chan error, loadClients)
		var wg sync.WaitGroup
		for i := range loadClients {
			wg.Go(func() {
				path, prompt := "/v1/completions", `"prompt": "Once upon a time"`
				if i%2 == 1 {
					path, prompt = "/v1/chat/completions", `"messages": [{"role": "user", "content": "Once upon a time"}]`
				}
				body := fmt.Sprintf(`{%s, "max_tokens": %d, "temperature": 0.8, "seed": %d, "stream": true, "stream_options": {"include_usage": %t}}`,
					prompt, loadTokens, wave*loadClients+i, i%4 < 2)
				r, err := streamCompletion(client, p.url, path, body)
				switch {
				case err != nil:
					errs <- fmt.Errorf("wave %d, client %d: %w", wave, i, err)
				case r.finishes != 1 || r.texts == 0 || r.usages != map[bool]int{true: 1, false: 0}[i%4 < 2]:
					errs <- fmt.Errorf("wave %d, client %d: %+v", wave, i, r)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if b, ok := p.rss(t); ok {
			rss = append(rss, b)
		}
	}
	if len(rss) == 0 {
		skipOrFail(t, "no /proc: the server's memory is not measured here")
	}
	t.Logf("RSS after each wave of %d streams: %v MiB", loadClients, mib(rss...))
	assert.LessOrEqual(t, rss[len(rss)-1]-rss[0], int64(loadRSSGrowth), "RSS growth from the first wave to the last")
}

// mib formats byte counts in MiB.
func mib(bs ...int64) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = fmt.Sprintf("%.1f", float64(b)/(1<<20))
	}
	return strings.Join(s, ", ")
}

// The stalled-upload attack: many clients send most of a
// maximal body and stall.
const (
	stalledUploads = 200
	stalledSlots   = 2
	stalledQueue   = 2
	stalledBody    = 1 << 20 // httpapi.DefaultMaxBodyBytes: each client declares a whole one
	stalledSent    = stalledBody - 1000
	// stalledRSSGrowth bounds the server's peak resident memory over its
	// memory at start: slots + queue bodies of 1 MiB (a few MiB with the
	// buffers they grow through and the garbage they leave), and 200
	// connections. Before the server admitted requests ahead of their bodies,
	// the same clients took it from 8 MiB to 234 MiB.
	stalledRSSGrowth = 32 << 20
)

// rawExchange is one hand-driven client connection: it writes a request
// and reads the answer at the same time, so that an answer sent before the
// server read the whole request is seen before the connection closes.
type rawExchange struct {
	status int    // the answer's status, 0 if none came
	code   string // its error code
	err    error  // why no answer came
}

// stallUpload sends the headers of a JSON POST declaring stalledBody bytes
// and stalledSent bytes of it, then stalls; it returns the server's answer.
func stallUpload(addr string, sent chan<- struct{}) rawExchange {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return rawExchange{err: err}
	}
	defer c.Close()
	go func() {
		defer func() { sent <- struct{}{} }()
		head := fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, stalledBody)
		body := `{"prompt": "` + strings.Repeat("a", stalledSent-12)
		_, _ = c.Write([]byte(head + body)) // fails once a refused request's connection is closed
	}()
	if err := c.SetReadDeadline(time.Now().Add(liveness)); err != nil {
		return rawExchange{err: err}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return rawExchange{err: err}
	}
	defer resp.Body.Close()
	var e struct {
		Error errorObject `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&e)
	return rawExchange{status: resp.StatusCode, code: deref(e.Error.Code), err: err}
}

// TestHTTPServeStalledUploads: 200 clients that
// send most of a 1 MiB body and stall leave `wasmlm serve -queue 2` with at
// most slots + queue bodies to hold: those beyond are refused (503) at once,
// their bodies unread, the server's memory stays within its bound, and the
// held ones are cut (408) when -read-timeout runs out; then the server
// serves again.
func TestHTTPServeStalledUploads(t *testing.T) {
	// The clients share one address: it may fill the queue (-client-queue).
	p := startServe(t, "-slots", fmt.Sprint(stalledSlots), "-queue", fmt.Sprint(stalledQueue), "-client-queue", fmt.Sprint(stalledQueue), "-read-timeout", "2s")
	start, ok := p.rss(t)
	if !ok {
		skipOrFail(t, "no /proc: the server's memory is not measured here")
	}
	results := make(chan rawExchange, stalledUploads)
	sent := make(chan struct{}, stalledUploads)
	for range stalledUploads {
		go func() { results <- stallUpload(p.addr, sent) }()
	}
	statuses := map[int]int{}
	for range stalledUploads {
		r := <-results
		require.NoError(t, r.err)
		statuses[r.status]++
		switch r.status {
		case http.StatusServiceUnavailable:
			assert.Equal(t, "server_overloaded", r.code)
		case http.StatusRequestTimeout:
			assert.Equal(t, "request_timeout", r.code)
		}
	}
	for range stalledUploads {
		<-sent
	}
	held := stalledSlots + stalledQueue
	assert.Equal(t, map[int]int{http.StatusServiceUnavailable: stalledUploads - held, http.StatusRequestTimeout: held}, statuses)
	peak := p.peakRSS(t)
	t.Logf("RSS %s MiB at start, %s MiB at the peak, with %d stalled uploads", mib(start), mib(peak), stalledUploads)
	assert.LessOrEqual(t, peak-start, int64(stalledRSSGrowth), "peak RSS growth")

	c := postCompletion(t, p.url, "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 5}`)
	assert.Equal(t, 5, c.Usage.CompletionTokens, "the server serves again")
}

// The idle-connection lock-out: connections kept alive and left
// idle, more than the server may hold.
const (
	idleMaxConns = 4
	idleConns    = 8 // kept-alive connections left idle, beyond them a new client
)

// TestHTTPServeIdleConnections: `wasmlm serve
// -max-conns 4 -idle-timeout 1s` holds no more than 4 connections however
// many clients connect; the idle ones are closed after a second, and the
// clients that waited in the backlog are then served, a new one too.
func TestHTTPServeIdleConnections(t *testing.T) {
	p := startServe(t, "-max-conns", fmt.Sprint(idleMaxConns), "-idle-timeout", "1s")
	if _, ok := p.sockets(t); !ok {
		skipOrFail(t, "no /proc: the server's connections are not counted here")
	}
	health := fmt.Sprintf("GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", p.addr)
	answered := make(chan error, idleConns+1)
	for range idleConns + 1 {
		c, err := net.Dial("tcp", p.addr) // the kernel completes it, accepted or not
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		go func() {
			answered <- func() error {
				if _, err := c.Write([]byte(health)); err != nil {
					return err
				}
				if err := c.SetReadDeadline(time.Now().Add(liveness)); err != nil {
					return err
				}
				rd := bufio.NewReader(c)
				resp, err := http.ReadResponse(rd, nil)
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return errors.New(resp.Status)
				}
				// Kept alive, then idle: the server closes it.
				if _, err := rd.ReadByte(); err != io.EOF {
					return fmt.Errorf("an idle connection got %v, not closed", err)
				}
				return nil
			}()
		}()
	}
	most := 0
	for range idleConns + 1 {
		for waiting := true; waiting; {
			select {
			case err := <-answered:
				require.NoError(t, err)
				waiting = false
			case <-time.After(20 * time.Millisecond):
			}
			n, _ := p.sockets(t)
			most = max(most, n)
		}
	}
	t.Logf("at most %d sockets open (the listener and %d connections)", most, most-1)
	assert.LessOrEqual(t, most, idleMaxConns+1, "the listener and -max-conns connections")
}

// Idle keep-alive connections at the cap: -max-conns of them, left idle,
// with an idle timeout far beyond what the test waits (liveness), so that
// only the server's making room, not the timeout, lets a new client in.
const (
	capMaxConns    = 2
	capIdleTimeout = time.Minute
)

// keptAlive is a client connection that sends GET /health and reads the
// answer, keeping the connection alive.
type keptAlive struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialKeptAlive(t *testing.T, addr string) *keptAlive {
	t.Helper()
	c, err := net.Dial("tcp", addr) // the kernel completes it, accepted or not
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &keptAlive{c: c, rd: bufio.NewReader(c)}
}

// health sends GET /health and reads its answer, which must be 200 and
// leave the connection open, within liveness.
func (k *keptAlive) health() error {
	if _, err := fmt.Fprintf(k.c, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", k.c.RemoteAddr()); err != nil {
		return err
	}
	if err := k.c.SetReadDeadline(time.Now().Add(liveness)); err != nil {
		return err
	}
	resp, err := http.ReadResponse(k.rd, nil)
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

// closedByServer says whether the server closes the connection within liveness.
func (k *keptAlive) closedByServer() bool {
	if err := k.c.SetReadDeadline(time.Now().Add(liveness)); err != nil {
		return false
	}
	_, err := k.rd.ReadByte()
	return err == io.EOF
}

// TestHTTPServeIdleAtTheCap: with `wasmlm serve -max-conns 2 -idle-timeout
// 1m`, clients that keep their connections alive and idle do not lock a new
// one out for the minute: when every place is taken, the connection idle
// longest is closed, so the new client is served (within liveness, a third
// of the idle timeout) and the idle ones find their connections closed.
func TestHTTPServeIdleAtTheCap(t *testing.T) {
	p := startServe(t, "-max-conns", fmt.Sprint(capMaxConns), "-idle-timeout", capIdleTimeout.String())
	require.Greater(t, capIdleTimeout, liveness, "only the fix, not the idle timeout, can serve the new client in time")
	idle := make([]*keptAlive, capMaxConns)
	for i := range idle {
		idle[i] = dialKeptAlive(t, p.addr)
		require.NoError(t, idle[i].health(), "idle client %d", i)
	}
	late := dialKeptAlive(t, p.addr)
	require.NoError(t, late.health(), "a new client, while %d others keep their connections idle", capMaxConns)
	// Every place taken, the connections that went idle first were closed:
	// the first clients', and of the last two (the server may record the
	// late client's answer as idle before the one before it: either is
	// then "idle longest") at least one, so no more than capMaxConns-1 stay.
	for i, k := range idle[:capMaxConns-1] {
		assert.True(t, k.closedByServer(), "idle client %d's connection closed to make room", i)
	}
	// A closed connection answers at once, an open one after liveness: the
	// first closed one ends the wait.
	closed := make(chan bool, 2)
	for _, k := range []*keptAlive{idle[capMaxConns-1], late} {
		go func() { closed <- k.closedByServer() }()
	}
	oneClosed := false
	for range 2 {
		if oneClosed = <-closed; oneClosed {
			break
		}
	}
	assert.True(t, oneClosed, "the last idle client's or the new client's connection closed to make room")
}

// headerLimit is the most a request line and headers may take: serve's
// MaxHeaderBytes, 32 KiB, and the 4096 bytes net/http adds to it.
const headerLimit = 32<<10 + 4096

// rawRequest sends req on a new connection and reads until the server
// closes it (within liveness): its whole answer, "" if none.
func rawRequest(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, req)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(liveness)))
	b, err := io.ReadAll(c)
	require.NoError(t, err, "the server did not close the connection")
	return string(b)
}

// TestHTTPServeHeaderLimits: what net/http, not the API, answers about
// headers, as httpapi/README.md says ("Some limits are answered by
// net/http"): a request line and headers of headerLimit bytes are read, one
// byte more gets a plain-text 431; headers still coming when -read-timeout
// runs out are cut with no answer or with a plain-text 400, never a JSON
// error object.
func TestHTTPServeHeaderLimits(t *testing.T) {
	p := startServe(t, "-read-timeout", "1s")
	padded := func(size int) string {
		head := fmt.Sprintf("GET /health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nX-Pad: ", p.addr)
		return head + strings.Repeat("a", size-len(head)-4) + "\r\n\r\n"
	}
	assert.True(t, strings.HasPrefix(rawRequest(t, p.addr, padded(headerLimit)), "HTTP/1.1 200 OK\r\n"))
	tooLarge := rawRequest(t, p.addr, padded(headerLimit+1))
	assert.True(t, strings.HasPrefix(tooLarge, "HTTP/1.1 431 Request Header Fields Too Large\r\n"), tooLarge)
	assert.Contains(t, tooLarge, "Content-Type: text/plain")

	// Cut at the read timeout: what has come parses (a whole header line),
	// so no answer; or it does not (a header line without its colon), so 400.
	assert.Empty(t, rawRequest(t, p.addr, fmt.Sprintf("GET /health HTTP/1.1\r\nHost: %s\r\n", p.addr)))
	badRequest := rawRequest(t, p.addr, fmt.Sprintf("GET /health HTTP/1.1\r\nHost: %s\r\nX-Pad", p.addr))
	assert.True(t, strings.HasPrefix(badRequest, "HTTP/1.1 400 Bad Request\r\n"), badRequest)
	assert.Contains(t, badRequest, "Content-Type: text/plain")
}

// TestHTTPReliabilityTable: the server's rows of docs/reliability.md's
// table state what the tests above try and bound.
func TestHTTPReliabilityTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "reliability.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut("\n"+string(readme), "\n"+reliabilityHeading("reliability.md")+"\n")
	require.True(t, ok, "docs/reliability.md has its Reliability title")
	section, _, _ = strings.Cut(section, "\n## ")

	byStatus := map[int]int{}
	for _, tc := range badRequests() {
		byStatus[tc.status]++
	}
	statuses := slices.SortedFunc(maps.Keys(byStatus), func(a, b int) int {
		return cmp.Or(byStatus[b]-byStatus[a], a-b) // most first
	})
	var counts []string
	for _, s := range statuses {
		counts = append(counts, fmt.Sprintf("%d × %d", byStatus[s], s))
	}
	held := stalledSlots + stalledQueue
	for _, want := range []string{
		fmt.Sprintf("%d streaming clients × %d waves", loadClients, loadWaves),
		fmt.Sprintf("(%d tokens each", loadTokens),
		fmt.Sprintf("`wasmlm serve -slots %d -client-queue %d`", loadSlots, loadClientQueue),
		fmt.Sprintf("growing under %d MiB", loadRSSGrowth>>20),
		fmt.Sprintf("**stalled uploads**: %d clients each send 1 MiB − %d bytes of a 1 MiB body", stalledUploads, stalledBody-stalledSent),
		fmt.Sprintf("against `-queue %d -client-queue %d`", stalledQueue, stalledQueue),
		fmt.Sprintf("%d refused at once", stalledUploads-held),
		fmt.Sprintf("the %d admitted", held),
		fmt.Sprintf("under +%d MiB", stalledRSSGrowth>>20),
		fmt.Sprintf("**megabyte bursts**: %d clients at once (`-slots %d -queue %d -client-queue %d`", burstClients, burstSlots, burstQueue, burstQueue),
		fmt.Sprintf("under +%d MiB; back under +%d MiB once idle", burstRSSGrowth>>20, burstRSSReturned>>20),
		fmt.Sprintf("key A sends %d streamed completions at once", fairBurst),
		fmt.Sprintf("`wasmlm serve -slots 1 -client-queue %d`", fairClientQueue),
		fmt.Sprintf("A's %d beyond its 1 + %d refused at once", fairBurst-1-fairClientQueue, fairClientQueue),
		fmt.Sprintf("before A's %d waiting ones", fairClientQueue),
		fmt.Sprintf("%d kept-alive clients against `-max-conns %d -idle-timeout 1s`", idleConns+1, idleMaxConns),
		fmt.Sprintf("at most %d connections held (%d sockets with the listener), idle ones closed, all %d served", idleMaxConns, idleMaxConns+1, idleConns+1),
		fmt.Sprintf("%d kept-alive clients left idle against `-max-conns %d -idle-timeout %dm`, then one more", capMaxConns, capMaxConns, int(capIdleTimeout.Minutes())),
		fmt.Sprintf("the end-to-end table's %d (%s)", len(badRequests()), strings.Join(counts, ", ")),
	} {
		assert.Contains(t, section, want)
	}
}

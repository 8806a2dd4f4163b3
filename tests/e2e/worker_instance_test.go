//go:build !js

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// The worker keeps one Go instance per isolate (cmd/worker's doc): these
// tests prove it through GET /health's "instance" object.

// instanceState is /health's "instance" object.
type instanceState struct {
	Ordinal  int  `json:"ordinal"`
	Requests int  `json:"requests"`
	Loads    int  `json:"loads"`
	InFlight int  `json:"in_flight"` // the requests but GET /health it serves now
	Live     *int `json:"live"`      // a test build's (wasmlm_testhooks) only
	// Completions are the requests that ended, by how ("done",
	// "dropped", "aborted", "failed"), and the tokens generated
	// ("generated_tokens").
	Completions map[string]int `json:"completions"`
}

// health reads the worker's /health.
func health(t testing.TB, base string) instanceState {
	t.Helper()
	a := send(t, "GET", base+"/health", "")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var h struct {
		Status   string         `json:"status"`
		Instance *instanceState `json:"instance"`
	}
	require.NoError(t, json.Unmarshal(a.body, &h), "%s", a.body)
	require.Equal(t, "ok", h.Status)
	require.NotNil(t, h.Instance, "/health's instance: %s", a.body)
	return *h.Instance
}

// TestWorkerReusesOneInstance: 200 sequential requests (GET /health,
// /v1/models, one-token completions) are all served by the isolate's first
// Go instance, which loaded its model once: /health's ordinal stays 1,
// loads 1, and its request count grows with every request.
func TestWorkerReusesOneInstance(t *testing.T) {
	base := edgeWorker(t).url
	first := health(t, base)
	assert.Equal(t, 1, first.Ordinal)
	assert.Equal(t, 1, first.Loads)
	last := first.Requests
	for i := range 200 {
		switch i % 4 {
		case 1:
			a := send(t, "GET", base+"/v1/models", "")
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		case 3:
			c := postCompletion(t, base, "/v1/completions", `{"prompt": "Once upon a time", "temperature": 0, "max_tokens": 1}`)
			require.Equal(t, 1, c.Usage.CompletionTokens)
		default:
			h := health(t, base)
			require.Equal(t, 1, h.Ordinal, "request %d: the first instance", i)
			require.Equal(t, 1, h.Loads, "request %d: the model loaded once", i)
			require.Greater(t, h.Requests, last, "request %d: the instance counts it", i)
			last = h.Requests
		}
	}
	end := health(t, base)
	assert.Equal(t, 1, end.Ordinal)
	assert.Equal(t, 1, end.Loads)
	assert.GreaterOrEqual(t, end.Requests, first.Requests+201, "every request served by the one instance")
}

// streamedChat posts a streamed chat completion as client (its
// CF-Connecting-IP: the worker's clients are addresses without keys) and
// returns the status and, for a 200, the text its chunks carry and whether
// the stream ended in [DONE]; for another status, the body.
func streamedChat(base, client, body string) (status int, text string, done bool, err error) {
	return streamedChatNotify(base, client, body, nil)
}

// streamedChatNotify is streamedChat calling first (when not nil) once the
// first chunk has arrived: the stream is then in flight.
func streamedChatNotify(base, client, body string, first func()) (status int, text string, done bool, err error) {
	req, err := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, "", false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("CF-Connecting-IP", client)
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return 0, "", false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), false, err
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if first != nil {
			first()
			first = nil
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return resp.StatusCode, text, done, fmt.Errorf("chunk %q: %w", data, err)
		}
		for _, ch := range c.Choices {
			text += ch.Delta.Content
		}
	}
	return resp.StatusCode, text, done, sc.Err()
}

// TestWorkerConcurrentStreams: 20 streamed chat completions sent at once
// (from four clients, as the queue's fairness sees them) all complete, each
// with the native server's greedy text, served by the one instance in turn.
func TestWorkerConcurrentStreams(t *testing.T) {
	base := edgeWorker(t).url
	const body = `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 64, "stream": true}`
	native := postCompletion(t, nativeServer(t).URL, "/v1/chat/completions",
		`{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 64}`)
	want := native.Choices[0].Message.Content
	require.NotEmpty(t, want)
	before := health(t, base)

	const n = 20
	type result struct {
		status int
		text   string
		done   bool
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var r result
			r.status, r.text, r.done, r.err = streamedChat(base, fmt.Sprintf("192.0.2.%d", i%4+1), body)
			results[i] = r
		})
	}
	wg.Wait()
	for i, r := range results {
		require.NoError(t, r.err, "stream %d", i)
		require.Equal(t, http.StatusOK, r.status, "stream %d: %s", i, r.text)
		assert.True(t, r.done, "stream %d ends in [DONE]", i)
		assert.Equal(t, want, r.text, "stream %d: the native server's greedy text", i)
	}
	after := health(t, base)
	assert.Equal(t, before.Ordinal, after.Ordinal, "the same instance")
	assert.Equal(t, 1, after.Loads)
}

// TestWorkerQueueFull: as wasmlm serve, the worker holds one generating
// request and httpapi.DefaultQueueSize waiting; requests beyond them are
// refused with 503 server_overloaded, the others all served. 80 long
// requests from eight clients (10 each: within a client's share of the
// queue) arrive together, so at least one finds the queue full.
func TestWorkerQueueFull(t *testing.T) {
	base := edgeWorker(t).url
	// 200 tokens each, with BOS and EOS banned so that none stops early.
	const body = `{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 200, "logit_bias": {"1": -100, "2": -100}, "stream": true}`
	const n = 80
	statuses := make([]int, n)
	bodies := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], bodies[i], _, errs[i] = streamedChat(base, fmt.Sprintf("198.51.100.%d", i%8+1), body)
		})
	}
	wg.Wait()
	served, refused := 0, 0
	for i := range n {
		require.NoError(t, errs[i], "request %d", i)
		switch statuses[i] {
		case http.StatusOK:
			served++
		case http.StatusServiceUnavailable:
			refused++
			e := openAIError(t, []byte(bodies[i]))
			assert.Equal(t, "server_overloaded", deref(e.Code), "request %d", i)
		default:
			t.Errorf("request %d: %d %s", i, statuses[i], bodies[i])
		}
	}
	t.Logf("%d served, %d refused with 503", served, refused)
	assert.Positive(t, refused, "requests beyond the queue are refused")
	assert.GreaterOrEqual(t, served, 1+64, "the generating request and a full queue are served")
	assert.Equal(t, 1, health(t, base).Loads)
}

// theHooksBuild is a test build of the worker (-tags wasmlm_testhooks: a
// route that panics, and /health's instance.live).
var theHooksBuild shared[string]

// hooksBuild returns the directory of the test build, built on first use.
func hooksBuild(t testing.TB) string {
	t.Helper()
	root := repoRoot(t)
	return theHooksBuild.get(t, func() (string, error) {
		dir, err := os.MkdirTemp("", "wasmlm-worker-hooks-")
		if err != nil {
			return "", err
		}
		if err := run(root, nil, "make", "-s", "worker", "WORKER_DIR="+dir, "WORKER_TAGS=wasmlm_simd,wasmlm_testhooks"); err != nil {
			removeAll(dir)
			return "", fmt.Errorf("building the test worker: %w", err)
		}
		atShutdown(func() { removeAll(dir) })
		return dir, nil
	})
}

// slowEdgeModel writes into dir, as name, a random-weight model whose greedy
// stream of 4000 tokens takes about 30 s in the worker on the 2-core build
// machine, not the default model's tens of milliseconds: 7 M parameters in
// Q8_0 (7.5 MB, under the 25 MiB of a static asset) with a context of
// 4096, BOS and EOS muted so that it never ends early.
func slowEdgeModel(t *testing.T, dir, name string) {
	t.Helper()
	b, err := modelgen.Build(modelgen.Spec{
		Shape: modelgen.Shape{Dim: 384, HiddenDim: 1024, Layers: 4, Heads: 6, KVHeads: 6, VocabSize: 512, ContextLength: 4096},
		Type:  tensor.Q8_0, MuteSpecial: true, Seed: 11,
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
}

// TestWorkerReplacesAnInstanceThatPanicked: a panic outside the API's
// recovery ends the Go program. The requests in flight are answered: the
// panicking one and one waiting in the queue with 500 worker_restarted, a
// stream that had started is cut before [DONE]. The next request is served
// by a fresh instance (ordinal 2, which loaded the model once and was the
// only live one), with the greedy text the first gave. The model is
// slowEdgeModel's, served as a static asset, so that the stream of 4000
// tokens is certain to be still running when the panic comes, about 0.1 s
// after its first chunk: the second request is sent once the stream is in
// flight and the panic once /health shows it reached the instance.
func TestWorkerReplacesAnInstanceThatPanicked(t *testing.T) {
	assets := t.TempDir()
	slowEdgeModel(t, assets, "slow.gguf")
	w := serveMiniflare(t, hooksBuild(t), nil, append(flags("--var", "WASMLM_MODEL_URL", "/slow.gguf"), "--assets", assets)...)
	first := health(t, w.url)
	require.Equal(t, 1, first.Ordinal)
	require.NotNil(t, first.Live, "the test build reports live instances")
	assert.Equal(t, 1, *first.Live)
	const short = `{"prompt": "Once upon a time", "temperature": 0, "max_tokens": 16}`
	want := postCompletion(t, w.url, "/v1/completions", short).Choices[0].Text

	// A long stream holds the slot; a second request waits behind it.
	type answer struct {
		status int
		body   string
		done   bool
		err    error
	}
	stream, queued, started := make(chan answer, 1), make(chan answer, 1), make(chan struct{})
	go func() {
		var a answer
		a.status, a.body, a.done, a.err = streamedChatNotify(w.url, "203.0.113.1",
			`{"messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 4000, "logit_bias": {"1": -100, "2": -100}, "stream": true}`,
			func() { close(started) })
		stream <- a
	}()
	select {
	case <-started:
	case a := <-stream:
		t.Fatalf("the stream ended before its first chunk: %d %s %v", a.status, a.body, a.err)
	case <-time.After(time.Minute):
		t.Fatal("no chunk of the stream within a minute")
	}
	streaming := time.Now()
	before := health(t, w.url).Requests
	go func() {
		req, _ := http.NewRequest("POST", w.url+"/v1/completions", strings.NewReader(short))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("CF-Connecting-IP", "203.0.113.2")
		var a answer
		resp, err := http.DefaultClient.Do(req)
		if a.err = err; err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			a.status, a.body, a.err = resp.StatusCode, string(b), err
		}
		queued <- a
	}()
	// The second request is in the instance (which counts a request as it
	// comes, /health's own included) once the count grew by more than the
	// /health requests that read it.
	for polls := 1; ; polls++ {
		if health(t, w.url).Requests > before+polls {
			break
		}
		require.Less(t, polls, 10000, "the second request did not reach the instance")
		time.Sleep(5 * time.Millisecond)
	}

	p := send(t, "GET", w.url+"/__wasmlm_test/panic", "")
	require.Equal(t, http.StatusInternalServerError, p.status, "%s", p.body)
	assert.Equal(t, "worker_restarted", deref(openAIError(t, p.body).Code))
	t.Logf("the panic came %v after the stream's first chunk", time.Since(streaming).Round(time.Millisecond))

	q, s := <-queued, <-stream
	require.NoError(t, q.err)
	require.Equal(t, http.StatusInternalServerError, q.status, "the queued request: %s", q.body)
	assert.Equal(t, "worker_restarted", deref(openAIError(t, []byte(q.body)).Code), "the queued request")
	assert.False(t, s.done, "the stream is cut before [DONE] (%d bytes of text)", len(s.body))
	if s.err == nil {
		assert.Equal(t, http.StatusOK, s.status, "%s", s.body)
	}
	t.Logf("the stream was cut after %d bytes of text (err %v)", len(s.body), s.err)

	next := health(t, w.url)
	assert.Equal(t, 2, next.Ordinal, "a fresh instance")
	assert.Equal(t, 1, next.Loads)
	assert.Equal(t, 1, next.Requests, "the fresh instance's first request")
	require.NotNil(t, next.Live)
	assert.Equal(t, 1, *next.Live, "the old instance was dropped before the fresh one started")
	assert.Equal(t, want, postCompletion(t, w.url, "/v1/completions", short).Choices[0].Text)
	assert.Equal(t, 2, health(t, w.url).Ordinal, "the fresh instance stays")
}

//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// serveSite serves web/dist at its root, as `make run` does, on an origin
// of its own (a Service Worker, once registered, stays with its origin in
// the profile), with a blank page and node_modules/openai, unmodified,
// under /__e2e__/openai/.
func serveSite(t *testing.T) *site {
	t.Helper()
	s := webSite(t)
	sdk := filepath.Join(repoRoot(t), "node_modules", "openai")
	needTool(t, filepath.Join(sdk, "index.mjs"), "npm ci installs it from package-lock.json")
	mux := http.NewServeMux()
	mux.Handle("/__e2e__/openai/", http.StripPrefix("/__e2e__/openai/", http.FileServer(http.Dir(sdk))))
	mux.HandleFunc(blankPage, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>serve</title></head><body></body></html>`)
	})
	mux.Handle("/", http.FileServer(http.Dir(s.dist)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &site{url: srv.URL, dist: s.dist, hits: map[string]int{}}
}

// nativeAPI answers a request with httpapi's handler over the engine, as
// `wasmlm serve` does: status and body.
func nativeAPI(t *testing.T, h http.Handler, method, path, body string) (int, string) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	b, err := io.ReadAll(w.Result().Body)
	require.NoError(t, err)
	return w.Code, string(b)
}

// sseText is the text of a stream's chunks (completions' text, chat's
// delta.content), joined.
func sseText(t *testing.T, body string) string {
	t.Helper()
	var out strings.Builder
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text  string
				Delta struct{ Content string }
			}
		}
		require.NoError(t, json.Unmarshal([]byte(data), &c), data)
		for _, ch := range c.Choices {
			out.WriteString(ch.Text + ch.Delta.Content)
		}
	}
	return out.String()
}

// TestBrowserServeOpenAIClient: web/README.md's snippet —
// WasmLM.load(null, { serve: true }), which runs wasmlm-serve.wasm,
// lm.serve({ scope: '/v1/' }) and the unmodified openai npm client with
// baseURL location.origin + '/v1' — in headless Chromium: models.list,
// a chat completion, streamed and not, a streamed completion, and a plain
// fetch of Server-Sent Events read chunk by chunk, each with the native
// handler's greedy text; an invalid request gets httpapi's own status and
// error object; a stream aborted half-way leaves the endpoint answering,
// and the page's own generate runs beside a served request. A model loaded
// without { serve: true } runs wasmlm.wasm, which has no endpoint: its
// serve rejects with serve_failed and registers no Service Worker.
func TestBrowserServeOpenAIClient(t *testing.T) {
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	native, err := httpapi.New(m, httpapi.Options{ModelName: models.DefaultName})
	require.NoError(t, err)

	const (
		chatBody   = `{"model":"stories260K","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":40,"temperature":0}`
		chatStream = `{"model":"stories260K","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":40,"temperature":0,"stream":true}`
		complBody  = `{"model":"stories260K","prompt":"The little dog","max_tokens":30,"temperature":0,"stream":true}`
		badBody    = `{"model":"stories260K","messages":[{"role":"user","content":"Hi"}],"temperature":-1}`
		hugeBody   = `{"model":"stories260K","prompt":"Hi","max_tokens":100000}`
		longBody   = `{"model":"stories260K","prompt":"Once upon a time","max_tokens":480,"temperature":0,"stream":true}`
	)
	status, body := nativeAPI(t, native, "POST", "/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, status, body)
	var chat struct {
		Choices []struct{ Message struct{ Content string } }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &chat))
	wantChat := chat.Choices[0].Message.Content
	_, body = nativeAPI(t, native, "POST", "/v1/completions", complBody)
	wantCompletion := sseText(t, body)
	status, body = nativeAPI(t, native, "POST", "/v1/completions", strings.Replace(longBody, `"stream":true`, `"stream":false`, 1))
	require.Equal(t, http.StatusOK, status, body)
	var long struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(body), &long))
	require.Greater(t, long.Usage.CompletionTokens, 300, "the stream to abort would run long")
	status, body = nativeAPI(t, native, "POST", "/v1/chat/completions", strings.Replace(chatBody, `"max_tokens":40`, `"max_tokens":200`, 1))
	require.Equal(t, http.StatusOK, status, body)
	require.NoError(t, json.Unmarshal([]byte(body), &chat))
	wantLongChat := chat.Choices[0].Message.Content
	require.NotEmpty(t, wantChat)
	require.NotEmpty(t, wantCompletion)
	type apiErr struct {
		Status int            `json:"status"`
		Error  map[string]any `json:"error"`
	}
	nativeErr := func(path, reqBody string) apiErr {
		status, body := nativeAPI(t, native, "POST", path, reqBody)
		var e apiErr
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		e.Status = status
		return e
	}

	s := serveSite(t)
	tb := openTab(t, s, blankPage, nil, chromedp.WithNewBrowserContext())
	tb.expect("the server responded with a status of 400") // the invalid requests, on purpose
	tb.expect("the server responded with a status of 503") // after close
	script := `(async () => {
		const { WasmLM } = await import('/wasmlm.js');
		const { default: OpenAI } = await import('/__e2e__/openai/index.mjs');
		const chatBody = ` + chatBody + `, complBody = ` + complBody + `;
		const out = {};
		// The worker's messages, counted: the chunks of served responses.
		let workerChunks = 0;
		const NativeWorker = globalThis.Worker;
		globalThis.Worker = class extends NativeWorker {
			constructor(...args) {
				super(...args);
				this.addEventListener('message', (e) => { if (e.data?.type === 'chunk' && e.data.chunk?.body) workerChunks++; });
			}
		};

		// A model loaded without { serve: true } runs wasmlm.wasm, which has
		// no endpoint: serve rejects at once, registering no Service Worker.
		const engines = () => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname).filter((p) => /^\/wasmlm(-serve)?\.wasm$/.test(p));
		const plain = await WasmLM.load();
		out.plainEngines = engines();
		try { await plain.serve(); out.plainServe = null; } catch (e) { out.plainServe = { code: e.code, message: e.message }; }
		out.plainRegistrations = (await navigator.serviceWorker.getRegistrations()).length;
		plain.unload();
		// WasmLM.serve serves the last model loaded with { serve: true }: none yet.
		try { await WasmLM.serve({ scope: '/v1/' }); out.noModel = null; } catch (e) { out.noModel = e.code; }

		// web/README.md's snippet.
		const lm = await WasmLM.load(null, { serve: true });
		out.engines = engines();
		const refusal = async (options) => {
			try { await lm.serve(options); return 'served'; } catch (e) { return e.code + (e.field ? ':' + e.field : ''); }
		};
		out.refusals = [
			await refusal({ scope: '/' }), // would answer every fetch of the site
			await refusal({ scope: '/__e2e__/' }), // holds the page itself
			await refusal({ serviceWorker: 'http://127.0.0.2:9/wasmlm.sw.js' }), // another origin
		];
		const server = await lm.serve({ scope: '/v1/', serviceWorker: '/wasmlm.sw.js' });
		// A second scope: the one Service Worker answers both.
		const second = await lm.serve({ scope: '/llm/', serviceWorker: '/wasmlm.sw.js' });
		out.both = [(await fetch('/v1/models')).status, (await fetch('/llm/models')).status, (await fetch('/llm/chat/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(chatBody) })).status];
		second.close();
		out.both.push((await fetch('/llm/models')).status);
		const client = new OpenAI({ baseURL: location.origin + '/v1', apiKey: 'unused', dangerouslyAllowBrowser: true, maxRetries: 0 });
		out.baseURL = server.baseURL === location.origin + '/v1';
		out.models = (await client.models.list()).data.map((m) => m.id);

		out.chat = (await client.chat.completions.create(chatBody)).choices[0].message.content;
		out.chatStream = '';
		out.chatChunks = 0;
		for await (const c of await client.chat.completions.create({ ...chatBody, stream: true })) {
			out.chatStream += c.choices[0]?.delta?.content ?? '';
			out.chatChunks++;
		}
		out.completion = '';
		for await (const c of await client.completions.create(complBody)) out.completion += c.choices[0]?.text ?? '';

		const apiError = async (call) => {
			try { await call(); return null; } catch (e) { return { status: e.status, error: e.error }; }
		};
		out.bad = await apiError(() => client.chat.completions.create(` + badBody + `));
		out.huge = await apiError(() => client.completions.create(` + hugeBody + `));

		// Abort a stream after three chunks (the SDK's stream then ends
		// quietly); the endpoint goes on answering.
		const ac = new AbortController();
		let seen = 0;
		const before = workerChunks;
		const st = await client.completions.create(` + longBody + `, { signal: ac.signal });
		for await (const c of st) if (++seen === 3) ac.abort();
		await new Promise((resolve) => setTimeout(resolve, 1000));
		out.abortSeen = seen;
		out.abortChunks = workerChunks - before;
		out.afterAbort = (await client.chat.completions.create(chatBody)).choices[0].message.content;

		// Plain fetch, Server-Sent Events read as they come.
		const res = await fetch('/v1/chat/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...chatBody, max_tokens: 200, stream: true }) });
		out.fetchType = res.headers.get('content-type');
		const reader = res.body.getReader();
		const dec = new TextDecoder();
		out.fetchBody = '';
		out.fetchReads = 0;
		for (;;) {
			const { value, done } = await reader.read();
			if (done) break;
			out.fetchReads++;
			out.fetchBody += dec.decode(value, { stream: true });
		}

		// The page's own call and a served one, at once: both answer.
		const [own, served] = await Promise.all([
			lm.generate('Once upon a time', { temperature: 0, maxTokens: 20 }),
			client.chat.completions.create(chatBody),
		]);
		out.own = own.text.length > 0;
		out.served = served.choices[0].message.content;

		// Not served any more: 503, an OpenAI error object.
		server.close();
		out.closed = await apiError(() => client.models.list());

		// WasmLM.serve, the static form: the same endpoint over the same model.
		const again = await WasmLM.serve({ scope: '/v1/' });
		out.staticModels = (await client.models.list()).data.map((m) => m.id);
		again.close();
		return out;
	})()`
	got := eval[struct {
		BaseURL      bool     `json:"baseURL"`
		Models       []string `json:"models"`
		Chat         string   `json:"chat"`
		ChatStream   string   `json:"chatStream"`
		ChatChunks   int      `json:"chatChunks"`
		Completion   string   `json:"completion"`
		Bad, Huge    *apiErr
		AbortSeen    int    `json:"abortSeen"`
		AbortChunks  int    `json:"abortChunks"`
		AfterAbort   string `json:"afterAbort"`
		FetchType    string `json:"fetchType"`
		FetchBody    string `json:"fetchBody"`
		FetchReads   int    `json:"fetchReads"`
		Own          bool   `json:"own"`
		Served       string `json:"served"`
		Closed       *apiErr
		PlainServe   *struct{ Code, Message string } `json:"plainServe"`
		PlainRegs    int                             `json:"plainRegistrations"`
		PlainEngines []string                        `json:"plainEngines"`
		Engines      []string                        `json:"engines"`
		NoModel      *string                         `json:"noModel"`
		Refusals     []string                        `json:"refusals"`
		Both         []int                           `json:"both"`
		StaticModels []string                        `json:"staticModels"`
	}](t, tb, script)

	if assert.NotNil(t, got.NoModel, "WasmLM.serve with no model loaded with { serve: true }") {
		assert.Equal(t, "serve_failed", *got.NoModel)
	}
	assert.Equal(t, got.Models, got.StaticModels, "WasmLM.serve serves the last model loaded with { serve: true }")
	assert.Equal(t, []string{"invalid_argument:scope", "invalid_argument:scope", "serve_failed"}, got.Refusals,
		"scope '/', a scope holding the page, a Service Worker of another origin")
	assert.Equal(t, []int{200, 200, 200, 503}, got.Both, "/v1/ and /llm/ served at once, then /llm/ closed")

	if assert.NotNil(t, got.PlainServe, "serve of a model loaded without { serve: true }") {
		assert.Equal(t, "serve_failed", got.PlainServe.Code)
		assert.Contains(t, got.PlainServe.Message, "load the model with { serve: true }")
	}
	assert.Zero(t, got.PlainRegs, "Service Workers registered by the refused serve")
	assert.Equal(t, []string{"/wasmlm.wasm"}, got.PlainEngines, "the engine a load without { serve: true } fetches")
	assert.Equal(t, []string{"/wasmlm.wasm", "/wasmlm-serve.wasm"}, got.Engines, "and then a load with it")

	assert.True(t, got.BaseURL)
	assert.Equal(t, []string{models.DefaultName}, got.Models)
	assert.Equal(t, wantChat, got.Chat)
	assert.Equal(t, wantChat, got.ChatStream)
	assert.Greater(t, got.ChatChunks, 10, "a chunk per token")
	assert.Equal(t, wantCompletion, got.Completion)
	for name, c := range map[string]struct {
		got  *apiErr
		want apiErr
	}{
		"temperature -1":    {got.Bad, nativeErr("/v1/chat/completions", badBody)},
		"max_tokens 100000": {got.Huge, nativeErr("/v1/completions", hugeBody)},
	} {
		if assert.NotNil(t, c.got, name) {
			assert.Equal(t, c.want, *c.got, name)
		}
	}
	t.Logf("the aborted stream: %d chunks read by the client, %d sent by the worker (of %d tokens unaborted)", got.AbortSeen, got.AbortChunks, long.Usage.CompletionTokens)
	assert.GreaterOrEqual(t, got.AbortSeen, 3)
	// The abort travels from the fetch to the Service Worker, the page and the
	// model's worker while it generates a token a millisecond or two: 36–197
	// tokens on this 2-core machine, depending on its load. That it stopped
	// before its end is what is asserted, not how soon (a timing).
	assert.Less(t, got.AbortChunks, long.Usage.CompletionTokens, "the abort reached the generation before its end")
	assert.Equal(t, wantChat, got.AfterAbort)
	assert.Equal(t, "text/event-stream", got.FetchType)
	assert.Equal(t, wantLongChat, sseText(t, got.FetchBody))
	t.Logf("plain fetch: %d reads", got.FetchReads)
	assert.True(t, strings.HasSuffix(got.FetchBody, "data: [DONE]\n\n"))
	assert.Greater(t, got.FetchReads, 1, "the events arrive as they are written, not as one body")
	assert.True(t, got.Own)
	assert.Equal(t, wantChat, got.Served)
	if assert.NotNil(t, got.Closed) {
		assert.Equal(t, http.StatusServiceUnavailable, got.Closed.Status)
		assert.Equal(t, "model_not_served", got.Closed.Error["code"])
	}
}

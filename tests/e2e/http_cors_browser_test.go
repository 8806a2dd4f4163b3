//go:build !js

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CORS tests (an allowed origin's calls, another origin's refusal) run
// the official openai SDK (node_modules/openai, its ESM build) in a page of
// headless Chromium, served by the test on 127.0.0.1 — another origin than
// the API's, another port — against `wasmlm serve` and the edge worker in
// workerd.

// sdkPage serves a blank page and node_modules/openai under /openai/.
func sdkPage(t *testing.T) string {
	t.Helper()
	sdk := filepath.Join(repoRoot(t), "node_modules", "openai")
	needTool(t, filepath.Join(sdk, "index.mjs"), "npm ci installs it from package-lock.json")
	mux := http.NewServeMux()
	mux.Handle("/openai/", http.StripPrefix("/openai/", http.FileServer(http.Dir(sdk))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>cors</title></head><body></body></html>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// corsTab is a tab of the shared Chromium showing the page at base + "/",
// a server of its own (openTab's console checks: errors and uncaught
// exceptions fail the test unless they contain one of expected).
func corsTab(t *testing.T, base string, expected ...string) context.Context {
	t.Helper()
	tb := openTab(t, &site{url: base}, "/", nil)
	for _, e := range expected {
		tb.expect(e)
	}
	return tb.ctx
}

// sdkResult is what the page's SDK calls gave.
type sdkResult struct {
	Models []string `json:"models"`
	Chat   struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"chat"`
	Stream struct {
		Text   string `json:"text"`
		Chunks int    `json:"chunks"`
	} `json:"stream"`
	Error *clientError `json:"error"`
}

// sdkScript calls the API at base with the openai SDK from the page: list
// the models, a chat completion, a streamed one, and one the server refuses.
func sdkScript(base string) string {
	return `(async () => {
		const { default: OpenAI } = await import('/openai/index.mjs');
		const client = new OpenAI({ baseURL: ` + "`" + base + "/v1`" + `, apiKey: 'unused', dangerouslyAllowBrowser: true, maxRetries: 0 });
		const messages = [{ role: 'user', content: 'Once upon a time' }];
		const out = {};
		out.models = (await client.models.list()).data.map((m) => m.id);
		const c = await client.chat.completions.create({ model: 'any', messages, max_tokens: 16, temperature: 0 });
		out.chat = { text: c.choices[0].message.content, finish_reason: c.choices[0].finish_reason };
		let text = '', chunks = 0;
		for await (const chunk of await client.chat.completions.create({ model: 'any', messages, max_tokens: 16, temperature: 0, stream: true })) {
			chunks++;
			text += chunk.choices[0]?.delta?.content ?? '';
		}
		out.stream = { text, chunks };
		try {
			await client.chat.completions.create({ model: 'any', messages, n: 2 });
		} catch (e) {
			out.error = { name: e.constructor.name, status: e.status ?? null, type: e.type ?? null, param: e.param ?? null, code: e.code ?? null };
		}
		return out;
	})()`
}

// checkSDKInBrowser runs sdkScript in a page at pageURL against base and
// checks what it got: the preflights (with the SDK's X-Stainless-* headers)
// passed, the answers and the error reached the page. The 400 is a console
// error the page expects.
func checkSDKInBrowser(t *testing.T, pageURL, base string) {
	ctx := corsTab(t, pageURL, "400 (Bad Request)")
	r, err := chromedp.Run(ctx, chromedp.Evaluate[sdkResult](sdkScript(base), chromedp.EvalAwaitPromise))
	require.NoError(t, err, "the openai SDK in the page")
	assert.Equal(t, []string{"stories260K"}, r.Models)
	assert.NotEmpty(t, r.Chat.Text)
	assert.Equal(t, "length", r.Chat.FinishReason)
	assert.Equal(t, r.Chat.Text, r.Stream.Text, "greedy: the streamed text is the same")
	assert.Greater(t, r.Stream.Chunks, 2)
	require.NotNil(t, r.Error, "n = 2 is refused")
	assert.Equal(t, "BadRequestError", r.Error.Name)
	assert.Equal(t, http.StatusBadRequest, r.Error.Status)
	assert.Equal(t, "n", deref(r.Error.Param))
}

// TestHTTPCORSOpenAISDKInChromium: the official openai
// SDK, in a page of another origin, calls `wasmlm serve -cors '*'`, and
// `wasmlm serve -cors ORIGIN` with the page's origin.
func TestHTTPCORSOpenAISDKInChromium(t *testing.T) {
	t.Run("any origin", func(t *testing.T) {
		checkSDKInBrowser(t, sdkPage(t), startServe(t, "-cors", "*").url)
	})
	t.Run("the page's origin", func(t *testing.T) {
		origin := sdkPage(t)
		checkSDKInBrowser(t, origin, startServe(t, "-cors", origin).url)
	})
}

// TestWorkerCORSOpenAISDKInChromium: the same against
// the edge worker in workerd, which allows every origin.
func TestWorkerCORSOpenAISDKInChromium(t *testing.T) {
	checkSDKInBrowser(t, sdkPage(t), edgeWorker(t).url)
}

// TestHTTPCrossOriginRequestsRefused: a page of another
// origin, against `wasmlm serve` without -cors, can start no generation:
// the request it may send without a preflight (text/plain; mode no-cors,
// whose answer it cannot read anyway) is refused with 415 before anything
// runs, and the browser sends no JSON one, whose preflight fails.
func TestHTTPCrossOriginRequestsRefused(t *testing.T) {
	p := startServe(t)
	ctx := corsTab(t, sdkPage(t), "blocked by CORS policy", "Failed to load resource")
	script := `(async () => {
		const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8 });
		const out = {};
		const plain = await fetch('` + p.url + `/v1/completions', { method: 'POST', body, mode: 'no-cors' });
		out.plain = plain.type;
		try {
			await fetch('` + p.url + `/v1/completions', { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
			out.json = 'sent';
		} catch (e) {
			out.json = e.name;
		}
		return out;
	})()`
	r, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](script, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, "opaque", r["plain"], "the text/plain request went out; its answer is hidden")
	assert.Equal(t, "TypeError", r["json"], "the JSON request failed its preflight")

	c := postCompletion(t, p.url, "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 3}`)
	assert.Equal(t, 3, c.Usage.CompletionTokens)
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "5+3 tokens") }, liveness, 10*time.Millisecond)
	assert.Equal(t, 1, strings.Count(p.stderr.String(), "/v1/completions"), "only the same-origin completion ran: %s", p.stderr)
}

// TestHTTPCORSWithKeysInChromium: with keys and -cors
// ORIGIN, the openai SDK in a page of that origin calls the API with its
// key (the preflights allow Authorization), and reads a wrong key's 401;
// a page of another origin cannot call it even with the right key.
func TestHTTPCORSWithKeysInChromium(t *testing.T) {
	allowed, other := sdkPage(t), sdkPage(t)
	p := startServe(t, "-cors", allowed, "-api-key", "sk-page")
	script := func(key string) string {
		return `(async () => {
			const { default: OpenAI } = await import('/openai/index.mjs');
			const client = new OpenAI({ baseURL: '` + p.url + `/v1', apiKey: '` + key + `', dangerouslyAllowBrowser: true, maxRetries: 0 });
			try {
				const c = await client.chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 4 });
				return { text: c.choices[0].message.content };
			} catch (e) {
				return { error: { name: e.constructor.name, status: e.status ?? null, code: e.code ?? null } };
			}
		})()`
	}
	type result struct {
		Text  string       `json:"text"`
		Error *clientError `json:"error"`
	}
	ctx := corsTab(t, allowed, "401 (Unauthorized)")
	r, err := chromedp.Run(ctx, chromedp.Evaluate[result](script("sk-page"), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Nil(t, r.Error)
	assert.NotEmpty(t, r.Text, "the allowed origin with the key")
	r, err = chromedp.Run(ctx, chromedp.Evaluate[result](script("sk-wrong"), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	if assert.NotNil(t, r.Error, "a wrong key") {
		assert.Equal(t, "AuthenticationError", r.Error.Name)
		assert.Equal(t, http.StatusUnauthorized, r.Error.Status)
		assert.Equal(t, "invalid_api_key", deref(r.Error.Code))
	}

	ctx = corsTab(t, other, "blocked by CORS policy", "Failed to load resource")
	r, err = chromedp.Run(ctx, chromedp.Evaluate[result](script("sk-page"), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	if assert.NotNil(t, r.Error, "another origin, even with the key") {
		assert.Equal(t, "APIConnectionError", r.Error.Name)
	}
	assert.Equal(t, 1, strings.Count(p.stderr.String(), "/v1/chat/completions"), "only the allowed page's request ran: %s", p.stderr)
}

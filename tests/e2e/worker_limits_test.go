//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// API keys and limits at the edge: the worker's API keys (the secret WASMLM_API_KEYS)
// and limits (the variables WASMLM_RATE_LIMIT, WASMLM_TOKEN_LIMIT,
// WASMLM_MAX_TOKENS, WASMLM_MAX_EMBED_TOKENS, and Cloudflare's Rate Limiting binding
// WASMLM_RATE_LIMITER), tested against the edge build in workerd. One
// workerd, started once per test binary beside the plain one, serves the
// build as several workers, each with its own env and isolate.

// The configured workers' env.
const (
	edgeSecret     = " sk-alpha , sk-beta,,sk-gamma ," // spaces trimmed, empty entries skipped
	edgeRateLimit  = 60                                // requests a minute per key: one a second regained
	edgeTokenLimit = 2400                              // tokens a minute per key: 40 a second regained
	edgeMaxTokens  = 64
	edgeMaxEmbed   = 40 // tokens an embeddings request may have evaluated
	standInLimit   = 3  // the binding's stand-in: 3 calls per key
	standInPeriod  = 2  // in windows of 2 s
)

var theConfiguredWorkerd shared[*workerdServer]

// configuredWorkers returns the workerd serving the configured workers,
// starting it on first use: "keyed" (the secret and the isolate's limits),
// "binding" (no keys; the rate limiter's stand-in), "embed-cap" (a cap on
// an embeddings request's tokens), "max-tokens-past-context" (a
// WASMLM_MAX_TOKENS beyond the context) and "bad-*", each misconfigured in
// one way.
func configuredWorkers(t testing.TB) *workerdServer {
	t.Helper()
	build := edgeWorker(t).build
	root := repoRoot(t)
	bin := workerdBinary(t, root)
	text := func(name string, v any) string { return fmt.Sprintf("(name = %q, text = %q)", name, fmt.Sprint(v)) }
	services := []edgeService{
		{name: "keyed", bindings: []string{
			text("WASMLM_API_KEYS", edgeSecret), text("WASMLM_RATE_LIMIT", edgeRateLimit),
			text("WASMLM_TOKEN_LIMIT", edgeTokenLimit), text("WASMLM_MAX_TOKENS", edgeMaxTokens),
		}},
		{name: "binding", bindings: []string{
			fmt.Sprintf(`(name = "WASMLM_RATE_LIMITER", wrapped = (moduleName = %q, innerBindings = [(name = "limit", json = "%d"), (name = "period", json = "%d")]))`,
				standInModule, standInLimit, standInPeriod),
			text("WASMLM_RATE_LIMIT_PERIOD", standInPeriod),
		}},
		{name: "embed-cap", bindings: []string{text("WASMLM_MAX_EMBED_TOKENS", edgeMaxEmbed)}},
		{name: "bad-keys", bindings: []string{text("WASMLM_API_KEYS", "sk-good, sk bad")}},
		{name: "bad-limit", bindings: []string{text("WASMLM_API_KEYS", "sk-good"), text("WASMLM_TOKEN_LIMIT", "lots")}},
		{name: "max-tokens-past-context", bindings: []string{text("WASMLM_MAX_TOKENS", 100000)}},
		{name: "bad-binding", bindings: []string{text("WASMLM_RATE_LIMITER", "on")}},
		{name: "bad-max-embed-tokens", bindings: []string{text("WASMLM_MAX_EMBED_TOKENS", "-3")}},
	}
	w := theConfiguredWorkerd.get(t, func() (*workerdServer, error) {
		s, stop, err := serveWorkerdServices(bin, build, filepath.Join(root, "tests", "e2e", "workerd_ratelimit.mjs"), services)
		if err != nil {
			return nil, err
		}
		atShutdown(stop)
		return s, nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("workerd output so far:\n%s", w.out)
		}
	})
	return w
}

// edgeAnswer is a response the tests read whole.
type edgeAnswer struct {
	status int
	header http.Header
	body   []byte
}

// send makes one request with headers (name, value pairs).
func send(t testing.TB, method, url, body string, headers ...string) edgeAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxTimeout(t), method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return edgeAnswer{resp.StatusCode, resp.Header, b}
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// keysClientResult is what worker_openai_keys.mjs prints.
type keysClientResult struct {
	ChatStream chatStream   `json:"chat_stream"`
	WrongKey   *clientError `json:"wrong_key"`
	NoKey      *clientError `json:"no_key"`
}

// TestWorkerKeys: with the secret set, the unmodified openai client streams
// a chat completion with a key of it (llama2.c's greedy text, cut at
// WASMLM_MAX_TOKENS) and gets AuthenticationError (401 invalid_api_key)
// with a wrong key or none; every key of the secret is accepted, as
// "Authorization: Bearer" or "x-api-key"; /health and CORS preflights stay
// open; a request beyond WASMLM_MAX_TOKENS is refused.
func TestWorkerKeys(t *testing.T) {
	base := configuredWorkers(t).urls["keyed"]
	const prompt = "Once upon a time"
	_, golden := goldenRun(t, prompt)
	var r keysClientResult
	runOpenAIScript(t, &r, "worker_openai_keys.mjs", base+"/v1", "sk-alpha", "sk-wrong", prompt, itoa(edgeMaxTokens))

	native := postCompletion(t, nativeServer(t).URL, "/v1/chat/completions",
		fmt.Sprintf(`{"messages": [{"role": "user", "content": %q}], "temperature": 0, "max_tokens": %d}`, prompt, edgeMaxTokens))
	assert.Equal(t, native.Choices[0].Message.Content, r.ChatStream.Text, "the native handler's text")
	assert.True(t, strings.HasPrefix(golden, r.ChatStream.Text), "llama2.c's greedy text, cut: %q", r.ChatStream.Text)
	assert.Equal(t, "assistant", r.ChatStream.Role)
	assert.Equal(t, "length", r.ChatStream.FinishReason)
	assert.Equal(t, edgeMaxTokens+3, r.ChatStream.Chunks, "role, a chunk per token, finish, usage")
	require.NotNil(t, r.ChatStream.Usage)
	assert.Equal(t, edgeMaxTokens, r.ChatStream.Usage.CompletionTokens)
	for _, c := range []struct {
		name    string
		err     *clientError
		message string
	}{
		{"wrong key", r.WrongKey, "Incorrect API key provided."},
		{"no key", r.NoKey, "You didn't provide an API key."},
	} {
		require.NotNil(t, c.err, c.name)
		assert.Equal(t, "AuthenticationError", c.err.Name, c.name)
		assert.Equal(t, http.StatusUnauthorized, c.err.Status, c.name)
		assert.Equal(t, "invalid_api_key", deref(c.err.Code), c.name)
		assert.Contains(t, c.err.Message, c.message, c.name)
	}

	for _, tc := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"no key", nil, http.StatusUnauthorized},
		{"wrong key", bearer("sk-wrong"), http.StatusUnauthorized},
		{"spaces around the key in the header", bearer(" sk-alpha "), http.StatusOK},
		{"the key and a comma", bearer("sk-alpha,"), http.StatusUnauthorized}, // the header reaches the handler as sent, commas and all
		{"second key", bearer("sk-beta"), http.StatusOK},
		{"third key, as x-api-key", []string{"x-api-key", "sk-gamma"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := send(t, "GET", base+"/v1/models", "", tc.headers...)
			require.Equal(t, tc.status, a.status, "%s", a.body)
			if tc.status == http.StatusUnauthorized {
				assert.Equal(t, "invalid_api_key", deref(openAIError(t, a.body).Code))
				assert.Equal(t, `Bearer realm="wasmlm"`, a.header.Get("WWW-Authenticate"))
			}
		})
	}
	assert.Equal(t, http.StatusOK, send(t, "GET", base+"/health", "").status, "/health needs no key")
	preflight := send(t, "OPTIONS", base+"/v1/chat/completions", "",
		"Origin", "https://app.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	assert.Equal(t, http.StatusNoContent, preflight.status, "a preflight carries no key")
	assert.Equal(t, "*", preflight.header.Get("Access-Control-Allow-Origin"))

	a := send(t, "POST", base+"/v1/completions", fmt.Sprintf(`{"prompt": "x", "max_tokens": %d}`, edgeMaxTokens+1), bearer("sk-alpha")...)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := openAIError(t, a.body)
	assert.Equal(t, "max_tokens", deref(e.Param))
	assert.Contains(t, e.Message, "limit of "+itoa(edgeMaxTokens))
}

// rateLimited checks that a is the 429 of limit ("requests" or "tokens")
// and returns its wait, from Retry-After-Ms.
func rateLimited(t testing.TB, a edgeAnswer, limit string) time.Duration {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, a.status, "%s", a.body)
	e := openAIError(t, a.body)
	assert.Equal(t, "rate_limit_exceeded", deref(e.Code))
	assert.Equal(t, limit, e.Type)
	ms, err := strconv.Atoi(a.header.Get("Retry-After-Ms"))
	require.NoError(t, err, "Retry-After-Ms %q", a.header.Get("Retry-After-Ms"))
	secs, err := strconv.Atoi(a.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", a.header.Get("Retry-After"))
	assert.Equal(t, (ms+999)/1000, secs, "Retry-After is Retry-After-Ms in whole seconds, rounded up")
	return time.Duration(ms) * time.Millisecond
}

// TestWorkerRequestLimit: WASMLM_RATE_LIMIT, counted in the isolate across
// the Go instances that serve its requests (each request has its own): a
// key's requests beyond a minute's are refused 429 with Retry-After; other
// keys are counted apart; the key regains one request a second (60 a
// minute), no more.
func TestWorkerRequestLimit(t *testing.T) {
	base := configuredWorkers(t).urls["keyed"]
	tokenize := func(key string) edgeAnswer {
		return send(t, "POST", base+"/tokenize", `{"content": "x"}`, bearer(key)...)
	}
	start := time.Now()
	var ok int
	var refused edgeAnswer
	for range 2 * edgeRateLimit {
		a := tokenize("sk-beta")
		if a.status != http.StatusOK {
			refused = a
			break
		}
		ok++
	}
	regained := int(time.Since(start).Seconds()*edgeRateLimit/60) + 1
	t.Logf("%d requests allowed, then refused (the bucket holds %d, and regained at most %d meanwhile)", ok, edgeRateLimit, regained)
	require.NotZero(t, refused.status, "no request refused")
	assert.LessOrEqual(t, ok, edgeRateLimit+regained)
	wait := rateLimited(t, refused, "requests")
	assert.LessOrEqual(t, wait, time.Minute/edgeRateLimit)
	assert.Contains(t, openAIError(t, refused.body).Message, "limit "+itoa(edgeRateLimit))

	assert.Equal(t, http.StatusOK, tokenize("sk-alpha").status, "another key")
	time.Sleep(wait)
	assert.Equal(t, http.StatusOK, tokenize("sk-beta").status, "regained after Retry-After-Ms")
	rateLimited(t, tokenize("sk-beta"), "requests")
}

// TestWorkerTokenLimit: WASMLM_TOKEN_LIMIT, counted in the isolate: each
// completion reserves its prompt and max_tokens, and keeps, once it ends,
// its prompt and completion tokens; a
// key that has used more than a minute's is refused 429 until time has
// paid the excess back.
func TestWorkerTokenLimit(t *testing.T) {
	base := configuredWorkers(t).urls["keyed"]
	body := fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": %d, "temperature": 0}`, edgeMaxTokens)
	complete := func() edgeAnswer { return send(t, "POST", base+"/v1/completions", body, bearer("sk-gamma")...) }
	var spent, ok int
	var refused edgeAnswer
	for range 2 * edgeTokenLimit / edgeMaxTokens {
		a := complete()
		if a.status != http.StatusOK {
			refused = a
			break
		}
		var c completion
		require.NoError(t, json.Unmarshal(a.body, &c), "%s", a.body)
		spent += c.Usage.PromptTokens + c.Usage.CompletionTokens
		ok++
	}
	t.Logf("%d completions allowed (%d tokens), then refused", ok, spent)
	require.NotZero(t, refused.status, "no completion refused")
	assert.Greater(t, spent, edgeTokenLimit, "refused only once the minute's tokens are used")
	wait := rateLimited(t, refused, "tokens")
	perRequest := spent / ok
	assert.LessOrEqual(t, wait, time.Duration(perRequest)*time.Minute/edgeTokenLimit, "at most one completion's tokens beyond")
	assert.Contains(t, openAIError(t, refused.body).Message, "limit "+itoa(edgeTokenLimit))

	time.Sleep(wait)
	assert.Equal(t, http.StatusOK, complete().status, "paid back after Retry-After-Ms")
}

// TestWorkerRateLimiterBinding: with a binding WASMLM_RATE_LIMITER (here
// the local stand-in, 3 calls a key in windows of 2 s), each request is
// first the binding's to allow; without keys the binding's key is the
// client's CF-Connecting-IP address; a refusal is 429 with Retry-After =
// WASMLM_RATE_LIMIT_PERIOD; the next window allows again.
func TestWorkerRateLimiterBinding(t *testing.T) {
	base := configuredWorkers(t).urls["binding"]
	tokenize := func(ip string) edgeAnswer {
		return send(t, "POST", base+"/tokenize", `{"content": "x"}`, "CF-Connecting-IP", ip)
	}
	// Start at the beginning of the stand-in's window (windows start at
	// multiples of the period since the epoch, by the same clock).
	period := standInPeriod * time.Second
	time.Sleep(period - time.Duration(time.Now().UnixNano())%period + 20*time.Millisecond)
	start := time.Now()
	for i := range standInLimit {
		a := tokenize("2001:db8::a")
		require.Equal(t, http.StatusOK, a.status, "request %d: %s", i, a.body)
	}
	refused := tokenize("2001:db8::a")
	require.Less(t, time.Since(start), period, "the requests took a whole window: the count means nothing")
	wait := rateLimited(t, refused, "requests")
	assert.Equal(t, period, wait, "the binding's period")
	assert.Equal(t, "Rate limit reached on requests. Please try again in 2s.", openAIError(t, refused.body).Message)
	assert.Equal(t, http.StatusOK, tokenize("2001:db8::b").status, "another address")
	assert.Equal(t, http.StatusOK, send(t, "GET", base+"/v1/models", "", "CF-Connecting-IP", "2001:db8::a").status, "a GET is not limited")

	time.Sleep(wait)
	assert.Equal(t, http.StatusOK, tokenize("2001:db8::a").status, "the next window")
}

// TestWorkerEmbedTokenCap: WASMLM_MAX_EMBED_TOKENS caps the tokens of an
// embeddings request: one within it is served, one beyond it is a 400
// max_tokens_per_request naming input, with the count and the cap.
func TestWorkerEmbedTokenCap(t *testing.T) {
	base := configuredWorkers(t).urls["embed-cap"]
	a := send(t, "POST", base+"/v1/embeddings", `{"input": "Once upon a time"}`)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = send(t, "POST", base+"/v1/embeddings", `{"input": ["Once upon a time there was a little girl named Lily.", "She loved to play outside in the sun with her dog.", "One day they went to the park."]}`)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := openAIError(t, a.body)
	assert.Equal(t, "input", deref(e.Param))
	assert.Equal(t, "max_tokens_per_request", deref(e.Code))
	assert.Contains(t, e.Message, fmt.Sprintf("tokens, max %d tokens per request", edgeMaxEmbed))
}

// TestWorkerMaxTokensPastTheContext: a WASMLM_MAX_TOKENS beyond the
// context the model is served with (stories260K: 512 tokens) is capped at
// the context, and /health says so; requests within it are served, one
// beyond it is refused naming the cap.
func TestWorkerMaxTokensPastTheContext(t *testing.T) {
	base := configuredWorkers(t).urls["max-tokens-past-context"]
	a := send(t, "GET", base+"/health", "")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var h struct {
		Instance struct {
			Notice string `json:"notice"`
		} `json:"instance"`
	}
	require.NoError(t, json.Unmarshal(a.body, &h), "%s", a.body)
	assert.Equal(t, "WASMLM_MAX_TOKENS = 100000 exceeds the context of 512 tokens the model is served with: max_tokens is capped at 512 (WASMLM_CONTEXT_SHIFT=true lets a reply run past the context)", h.Instance.Notice)
	a = send(t, "POST", base+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}`)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	a = send(t, "POST", base+"/v1/completions", `{"prompt": "x", "max_tokens": 513}`)
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := openAIError(t, a.body)
	assert.Equal(t, "max_tokens", deref(e.Param))
	assert.Contains(t, e.Message, "limit of 512")
}

// TestWorkerMaxTokensPastTheContextWithAShift: without WASMLM_MAX_TOKENS,
// a request that shifts its context may ask for more tokens than the
// context (512) holds, and gets the completion the native server gives;
// without the shift the same max_tokens is refused as too long for the
// context, as natively.
func TestWorkerMaxTokensPastTheContextWithAShift(t *testing.T) {
	// Greedy, never ending on BOS or EOS: the generation runs to max_tokens.
	const greedy = `"prompt": "Once upon a time", "max_tokens": 600, "temperature": 0, "logit_bias": {"1": -100, "2": -100}`
	type completion struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	var got [2]completion
	for i, base := range []string{edgeWorker(t).url, nativeServer(t).URL} {
		a := send(t, "POST", base+"/v1/completions", `{`+greedy+`, "context_shift": true}`)
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		require.NoError(t, json.Unmarshal(a.body, &got[i]))
		a = send(t, "POST", base+"/v1/completions", `{`+greedy+`}`)
		require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
		e := openAIError(t, a.body)
		assert.Equal(t, "max_tokens", deref(e.Param))
		assert.Contains(t, e.Message, "maximum context length is 512 tokens")
	}
	assert.Equal(t, 600, got[0].Usage["completion_tokens"])
	assert.Positive(t, got[0].Usage["context_shifts"])
	assert.Equal(t, got[1], got[0], "the edge's completion is the native server's")
}

// TestWorkerMisconfigured: a malformed secret or variable makes the worker
// answer every request, /health too, with a 500 error object naming it,
// rather than serve open or unlimited; the secret is never quoted.
func TestWorkerMisconfigured(t *testing.T) {
	w := configuredWorkers(t)
	for _, tc := range []struct {
		service string
		message string
	}{
		{"bad-keys", "the secret WASMLM_API_KEYS is malformed: key 2 "},
		{"bad-limit", `WASMLM_TOKEN_LIMIT = "lots"`},
		{"bad-binding", "WASMLM_RATE_LIMITER: not a Rate Limiting binding"},
		{"bad-max-embed-tokens", `WASMLM_MAX_EMBED_TOKENS = "-3"`},
	} {
		t.Run(tc.service, func(t *testing.T) {
			for _, a := range []edgeAnswer{
				send(t, "GET", w.urls[tc.service]+"/health", ""),
				send(t, "POST", w.urls[tc.service]+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, bearer("sk-good")...),
			} {
				require.Equal(t, http.StatusInternalServerError, a.status, "%s", a.body)
				e := openAIError(t, a.body)
				assert.Equal(t, "server_error", e.Type)
				assert.Equal(t, "worker_misconfigured", deref(e.Code))
				assert.Contains(t, e.Message, tc.message)
				assert.NotContains(t, e.Message, "sk-")
			}
		})
	}
}

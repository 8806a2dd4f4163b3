//go:build !js

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keysRateLimit is the requests per minute the keys tests allow a key: a
// burst of that many, then one every 60/keysRateLimit seconds, which the
// openai client's retries wait for.
const keysRateLimit = 30

// openAIKeysResult is what openai_keys_client.mjs prints.
type openAIKeysResult struct {
	Stream    chatStream   `json:"stream"`
	WrongKey  *clientError `json:"wrong_key"`
	NoKey     *clientError `json:"no_key"`
	Allowed   int          `json:"allowed"`
	Limited   *clientError `json:"limited"`
	Recovered struct {
		OK       bool         `json:"ok"`
		Error    *clientError `json:"error"`
		WaitedMS int          `json:"waited_ms"`
	} `json:"recovered"`
}

// runOpenAIKeysClient runs openai_keys_client.mjs against baseURL (ending
// in /v1).
func runOpenAIKeysClient(t *testing.T, baseURL, key, wrongKey string, rpm int) openAIKeysResult {
	t.Helper()
	var r openAIKeysResult
	runOpenAIScript(t, &r, "openai_keys_client.mjs", baseURL, key, wrongKey, itoa(rpm))
	return r
}

// checkOpenAIKeysClient checks what the openai client met against a server
// with keys and a rate limit of rpm: its stream with the right key, 401s
// for a wrong and a missing key, the burst it was allowed, the 429 after
// it, and the retry that waited as told and went through.
func checkOpenAIKeysClient(t *testing.T, r openAIKeysResult, rpm int) {
	t.Helper()
	assert.NotEmpty(t, r.Stream.Text)
	assert.Positive(t, r.Stream.Chunks)
	assert.Equal(t, "length", r.Stream.FinishReason)
	for name, e := range map[string]*clientError{"wrong key": r.WrongKey, "no key": r.NoKey} {
		if assert.NotNil(t, e, name) {
			assert.Equal(t, "AuthenticationError", e.Name, name)
			assert.Equal(t, http.StatusUnauthorized, e.Status, name)
			assert.Equal(t, "invalid_api_key", deref(e.Code), name)
		}
	}
	assert.Equal(t, rpm-1, r.Allowed, "the minute's requests, the stream among them")
	if assert.NotNil(t, r.Limited) {
		assert.Equal(t, "RateLimitError", r.Limited.Name)
		assert.Equal(t, http.StatusTooManyRequests, r.Limited.Status)
		assert.Equal(t, "rate_limit_exceeded", deref(r.Limited.Code))
		assert.Equal(t, "requests", r.Limited.Type)
		assert.Equal(t, itoa(60/rpm), deref(r.Limited.RetryAfter))
		assert.NotEmpty(t, deref(r.Limited.RetryAfterMS))
	}
	assert.True(t, r.Recovered.OK, "the client's retry went through: %+v", r.Recovered.Error)
	t.Logf("the client's retry waited %d ms", r.Recovered.WaitedMS)
}

// modelsStatus is the status of a GET /v1/models from the server at url
// with key ("": no Authorization header).
func modelsStatus(t *testing.T, url, key string) int {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/v1/models", nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPServeAPIKeys: `wasmlm serve -api-key-file F
// -rate-limit 30` serves the unmodified openai client with a right key;
// refuses a wrong and a missing key with 401 before any work (no
// completion logged); re-reads the file on SIGHUP, so a revoked key is
// refused at once and a new one works; and answers a client beyond its
// limit 429 with Retry-After, which the client's retries wait out.
func TestHTTPServeAPIKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("# the test's keys\nsk-test-one\nsk-test-two\n"), 0o600))
	p := startServe(t, "-api-key-file", file, "-rate-limit", itoa(keysRateLimit))

	r := runOpenAIKeysClient(t, p.url+"/v1", "sk-test-one", "sk-test-wrong", keysRateLimit)
	checkOpenAIKeysClient(t, r, keysRateLimit)
	completions := strings.Count(p.stderr.String(), "\n/v1/chat/completions")
	assert.Equal(t, 1+r.Allowed+1, completions, "the refused requests ran nothing:\n%s", p.stderr)

	post := func(key string) *http.Response {
		req, err := http.NewRequest("POST", p.url+"/tokenize", strings.NewReader(`{"content": "x"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	assert.Equal(t, http.StatusOK, post("sk-test-two").StatusCode, "the other key has its own limit")

	require.NoError(t, os.WriteFile(file, []byte("sk-test-two\nsk-test-three\n"), 0o600))
	p.signal(t, syscall.SIGHUP)
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "serve: SIGHUP: 2 API keys") },
		liveness, 10*time.Millisecond, "the key file re-read")
	assert.Equal(t, http.StatusUnauthorized, post("sk-test-one").StatusCode, "revoked")
	assert.Equal(t, http.StatusOK, post("sk-test-three").StatusCode, "added")
	assert.Equal(t, http.StatusOK, post("sk-test-two").StatusCode, "kept")

	require.NoError(t, os.WriteFile(file, []byte("sk two with spaces\n"), 0o600))
	p.signal(t, syscall.SIGHUP)
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "keeping the 2 API keys held: ") },
		liveness, 10*time.Millisecond, "a bad key file leaves the keys as they were")
	assert.Equal(t, http.StatusOK, post("sk-test-three").StatusCode)

	resp, err := http.Get(p.url + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "/health needs no key")
}

// TestHTTPServeHangupWithoutKeyFile: a SIGHUP meant as a reload
// does not end a server that has no key file to re-read (the signal's
// default): it says so and serves on. The start-up line says who may use
// the API and the process to signal.
func TestHTTPServeHangupWithoutKeyFile(t *testing.T) {
	p := startServe(t, "-api-key", "sk-only", "-rate-limit", "5")
	assert.Contains(t, p.stderr.String(), fmt.Sprintf("1 API key accepted, 5 requests/min per key; pid %d", p.cmd.Process.Pid))
	p.signal(t, syscall.SIGHUP)
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "serve: SIGHUP: no -api-key-file to re-read") },
		liveness, 10*time.Millisecond)
	resp, err := http.Get(p.url + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "still serving")
}

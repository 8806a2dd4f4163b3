//go:build !js

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The npm package's command line, `npx wasmlm serve` (web/wasmlm-cli.js):
// installed from the packed package, it serves the API from Node.js with
// the serving wasm build, and answers as the Go CLI's `wasmlm serve` does.

// nativeOnlyFlags are the Go CLI's serve flags the npm package's serve does
// not have (cmd/wasmlm's own: a web page and its isolation, threads,
// llama2.c tokenizers, saved slots).
var nativeOnlyFlags = []string{"isolate", "slot-save-path", "threads", "tokenizer", "web"}

// nodeUsage are the serve flags Node.js honours otherwise than the Go CLI,
// and what their usage says of it in the npm package's serve -h.
var nodeUsage = map[string]string{
	"max-conns":     "in Node.js those beyond it are reset",
	"write-timeout": "not applied in Node.js",
	"api-key-file":  "re-read on SIGHUP (sent to the node process",
}

// npmServe starts the installed package's `wasmlm serve` in app on a free
// port of 127.0.0.1, with args.
func npmServe(t *testing.T, app string, args ...string) *serveProcess {
	t.Helper()
	return startServer(t, npmServeCmd(app, args...))
}

// npmServeCmd is the installed package's `wasmlm serve` in app, on a free
// port of 127.0.0.1, with args.
func npmServeCmd(app string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(app, "node_modules", ".bin", "wasmlm"), append([]string{"serve", "-addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = app
	return cmd
}

// exited runs a command that exits by itself, and returns its exit code,
// standard output and standard error.
func exited(t *testing.T, dir string, name string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil {
		require.True(t, errors.As(err, &ee), "%s %v: %v", name, args, err)
		return ee.ExitCode(), out.String(), errOut.String()
	}
	return 0, out.String(), errOut.String()
}

// flagNames are the flags a -h output lists.
func flagNames(usage string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(usage, -1) {
		names = append(names, m[1])
	}
	return names
}

// TestNPMServeCommandLine: npx wasmlm says which commands it has and
// refuses others; serve's flags are the Go CLI's (but its native-only
// ones), with the same usage lines but for those Node.js honours otherwise
// (-max-conns, -write-timeout, -api-key-file), which say what it does; a
// wrong one, or an address that cannot be listened on, gets the Go CLI's
// message and exit code; a native-only flag's error says whose it is; a
// model URL that cannot be fetched is named with why, without JavaScript's
// words.
func TestNPMServeCommandLine(t *testing.T) {
	app := npmApp(t, nil)
	bin := filepath.Join(app, "node_modules", ".bin", "wasmlm")

	code, stdout, _ := exited(t, app, "npx", "--offline", "wasmlm", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "  serve      serve the OpenAI-compatible HTTP API")
	assert.Contains(t, stdout, "The npm package has serve only")
	code, _, stderr := exited(t, app, bin, "generate")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `wasmlm: unknown command "generate"`)
	assert.Contains(t, stderr, "serve")
	code, _, stderr = exited(t, app, bin)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: wasmlm <command> [flags]")

	_, _, nativeHelp := exited(t, app, serveBinary(t), "serve", "-h")
	code, _, npmHelp := exited(t, app, bin, "serve", "-h")
	assert.Equal(t, 0, code)
	want := slices.DeleteFunc(flagNames(nativeHelp), func(name string) bool { return slices.Contains(nativeOnlyFlags, name) })
	assert.Equal(t, want, flagNames(npmHelp), "the npm package's serve flags are the Go CLI's, but %v", nativeOnlyFlags)
	for _, name := range want {
		if name == "m" {
			continue // its own: a path or a URL, the package's default model
		}
		usage := regexp.MustCompile(`(?m)^  -` + name + `\b.*\n(?:    \t.*\n)*`)
		nativeUsage, npmUsage := usage.FindString(nativeHelp), usage.FindString(npmHelp)
		if phrase, ok := nodeUsage[name]; ok { // what it does in Node.js, said in place of the Go CLI's words
			assert.Contains(t, npmUsage, phrase, "-%s", name)
			assert.NotContains(t, nativeUsage, phrase, "-%s", name)
			assert.Equal(t, strings.SplitN(nativeUsage, "\n", 2)[0], strings.SplitN(npmUsage, "\n", 2)[0], "-%s: its name and type", name)
			continue
		}
		if name == "slots" { // its default is the cores' (at most 4): WebAssembly has one thread
			assert.Contains(t, npmUsage, "(default 1)")
			nativeUsage, npmUsage = regexp.MustCompile(`\(default \d\)`).ReplaceAllString(nativeUsage, ""), strings.Replace(npmUsage, "(default 1)", "", 1)
		}
		assert.Equal(t, nativeUsage, npmUsage, "-%s", name)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	for _, args := range [][]string{
		{"-addr", "127.0.0.1:99999"},
		{"-addr", "127.0.0.1"},
		{"-addr", taken.Addr().String()},
		{"-slots", "0"},
		{"-cors", "app.example"},
		{"-api-key", "sk bad"},
		{"-allow-host", ""},
		{"-ctx", "x"},
		{"extra"},
	} {
		nativeCode, _, nativeErr := exited(t, app, serveBinary(t), append([]string{"serve", "-web", ""}, args...)...)
		code, _, stderr := exited(t, app, bin, append([]string{"serve"}, args...)...)
		assert.Equal(t, nativeCode, code, "%v", args)
		if strings.Contains(nativeErr, "Usage of serve") { // a flag the flag package refused: its line, then the usage
			nativeErr, stderr = strings.SplitN(nativeErr, "\n", 2)[0], strings.SplitN(stderr, "\n", 2)[0]
		}
		assert.Equal(t, nativeErr, stderr, "%v", args)
	}

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := closed.Addr().String() // nothing listens there once closed
	require.NoError(t, closed.Close())
	for _, tc := range []struct {
		args []string
		code int
		line string // stderr's first line
	}{
		{[]string{"-m", "http://" + refused + "/x.gguf"}, 1, "serve: fetching http://" + refused + "/x.gguf: connect ECONNREFUSED " + refused},
		{[]string{"-m", notFound.URL + "/nope.gguf"}, 1, "serve: fetching " + notFound.URL + "/nope.gguf: HTTP 404 Not Found"},
		{[]string{"-web", "x"}, 2, "flag provided but not defined: -web (-web, -isolate, -threads, -tokenizer and -slot-save-path are the Go CLI's only)"},
		{[]string{"-threads", "2"}, 2, "flag provided but not defined: -threads (-web, -isolate, -threads, -tokenizer and -slot-save-path are the Go CLI's only)"},
	} {
		code, _, stderr := exited(t, app, bin, append([]string{"serve"}, tc.args...)...)
		assert.Equal(t, tc.code, code, "%v", tc.args)
		assert.Equal(t, tc.line, strings.SplitN(stderr, "\n", 2)[0], "%v", tc.args)
	}
	code, _, stderr = exited(t, app, bin, "serve", "-m", filepath.Join(app, "missing.gguf"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "serve: open "+filepath.Join(app, "missing.gguf"))
}

// TestNPMServeHangup: npx wasmlm serve -api-key-file F re-reads the file
// on SIGHUP, as the Go CLI's serve does: it serves on, a revoked key is
// refused and a new one works. Its start-up line says no page can call it
// without -cors (it serves none).
func TestNPMServeHangup(t *testing.T) {
	app := npmApp(t, nil)
	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("sk-npm-one\n"), 0o600))
	p := npmServe(t, app, "-api-key-file", file)
	assert.Contains(t, p.stderr.String(), "serve: CORS is off: no web page can call this server (it serves none of its own")
	assert.Contains(t, p.stderr.String(), fmt.Sprintf("pid %d\n", p.cmd.Process.Pid), "the pid to signal is node's")
	status := func(key string) int { return modelsStatus(t, p.url, key) }
	require.Equal(t, http.StatusOK, status("sk-npm-one"))
	require.Equal(t, http.StatusUnauthorized, status("sk-npm-two"))

	require.NoError(t, os.WriteFile(file, []byte("sk-npm-two\n"), 0o600))
	p.signal(t, syscall.SIGHUP)
	require.Eventually(t, func() bool {
		return strings.Contains(p.stderr.String(), "serve: SIGHUP: 1 API key (0 from -api-key, the rest from "+file+")")
	},
		liveness, 10*time.Millisecond, "the key file re-read: %s", p.stderr)
	assert.Equal(t, http.StatusUnauthorized, status("sk-npm-one"), "revoked")
	assert.Equal(t, http.StatusOK, status("sk-npm-two"), "added")
}

// TestNPMServeOpenAIClient: the openai client gets from npx wasmlm serve
// what it gets from the Go CLI's serve with the same flags and the default
// model: the same greedy completions and chat completions, streamed and
// not, the same models, the same errors (a -max-tokens limit); with
// -api-key and -rate-limit, the same refusals of a wrong key and of no
// key, and the same rate limit.
func TestNPMServeOpenAIClient(t *testing.T) {
	app := npmApp(t, nil)
	const prompt = "Once upon a time"
	maxTokens, golden := goldenRun(t, prompt)
	limit := []string{"-max-tokens", itoa(maxTokens)}

	started := time.Now()
	npm := npmServe(t, app, limit...)
	npmStart := time.Since(started)
	started = time.Now()
	native := startServe(t, limit...)
	t.Logf("start-up: npx wasmlm serve %v, the Go CLI's %v", npmStart.Round(time.Millisecond), time.Since(started).Round(time.Millisecond))

	var got, want clientResult
	runOpenAIScript(t, &got, "worker_openai_client.mjs", npm.url+"/v1", prompt, itoa(maxTokens))
	runOpenAIScript(t, &want, "worker_openai_client.mjs", native.url+"/v1", prompt, itoa(maxTokens))
	assert.Equal(t, want, got, "what the openai client got from the Go CLI's serve and from the npm package's")
	assert.Equal(t, golden, got.Completion.Text, "llama2.c's greedy text")
	assert.Equal(t, []string{"stories260K"}, got.Models)
	if assert.NotNil(t, got.StreamError) {
		assert.Contains(t, got.StreamError.Message, "max_tokens", "the -max-tokens limit")
	}
	logOverhead(t, npm.url, native.url)

	// A rate that refills a request only every 6 s, so that the burst is
	// the same however long its requests take in WebAssembly.
	const rpm = 10
	keyed := []string{"-api-key", "sk-npm-good", "-rate-limit", itoa(rpm)}
	npmKeys := runOpenAIKeysClient(t, npmServe(t, app, keyed...).url+"/v1", "sk-npm-good", "sk-npm-wrong", rpm)
	nativeKeys := runOpenAIKeysClient(t, startServe(t, keyed...).url+"/v1", "sk-npm-good", "sk-npm-wrong", rpm)
	checkOpenAIKeysClient(t, nativeKeys, rpm)
	assert.Equal(t, nativeKeys.Stream, npmKeys.Stream)
	assert.Equal(t, nativeKeys.WrongKey, npmKeys.WrongKey)
	assert.Equal(t, nativeKeys.NoKey, npmKeys.NoKey)
	assert.Equal(t, nativeKeys.Allowed, npmKeys.Allowed, "the burst -rate-limit allows")
	if assert.NotNil(t, npmKeys.Limited) && assert.NotNil(t, nativeKeys.Limited) {
		// Retry-After is the time to the next request's refill: when it
		// comes depends on how long the burst took.
		npmKeys.Limited.RetryAfter, npmKeys.Limited.RetryAfterMS = nativeKeys.Limited.RetryAfter, nativeKeys.Limited.RetryAfterMS
		npmKeys.Limited.Message = nativeKeys.Limited.Message
		assert.Equal(t, nativeKeys.Limited, npmKeys.Limited)
	}
	assert.True(t, npmKeys.Recovered.OK, "the client's retry went through: %+v", npmKeys.Recovered.Error)
}

// logOverhead logs what a request costs each server: a GET /v1/models and
// a one-token completion, the best of ten each (a measurement, not a test).
func logOverhead(t *testing.T, npmURL, nativeURL string) {
	best := func(url, method, body string) time.Duration {
		var fastest time.Duration
		for range 10 {
			req, err := http.NewRequest(method, url, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			if d := time.Since(start); fastest == 0 || d < fastest {
				fastest = d
			}
		}
		return fastest
	}
	one := `{"prompt": "Once upon a time", "max_tokens": 1, "temperature": 0}`
	t.Logf("GET /v1/models: npm %v, native %v; a one-token completion: npm %v, native %v (best of 10)",
		best(npmURL+"/v1/models", "GET", ""), best(nativeURL+"/v1/models", "GET", ""),
		best(npmURL+"/v1/completions", "POST", one), best(nativeURL+"/v1/completions", "POST", one))
}

// TestNPMServeAbortAndStop: npx wasmlm serve loads a model named
// hf:owner/repo/file.gguf from HF_ENDPOINT (a local stand-in for the Hub),
// streams each token as it is generated, stops a generation whose client
// closed the connection (the log says abort, long before its max_tokens), and
// on SIGTERM stops and exits 0.
func TestNPMServeAbortAndStop(t *testing.T) {
	app := npmApp(t, nil)
	dir := filepath.Dir(slowModel(t))
	hub := httptest.NewServer(http.StripPrefix("/acme/slow-GGUF/resolve/v1/", http.FileServer(http.Dir(dir))))
	t.Cleanup(hub.Close)
	cmd := npmServeCmd(app, "-m", "hf:acme/slow-GGUF/slow.gguf@v1")
	cmd.Env = append(os.Environ(), "HF_ENDPOINT="+hub.URL)
	p := startServer(t, cmd)
	assert.Contains(t, p.stderr.String(), "serve: slow (context 1024,", "the model's name is its file's")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", p.url+"/v1/completions",
		strings.NewReader(`{"prompt": "Once upon a time", "max_tokens": 900, "temperature": 0, "stream": true}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %s", resp.Status, b)
	}
	events := newSSEReader(resp.Body)
	for range 3 { // the first tokens arrive while the rest are still to come
		ev, ok := events.next(t)
		require.True(t, ok)
		require.NotEqual(t, "[DONE]", ev.data)
	}
	cancel()
	resp.Body.Close()
	aborted := regexp.MustCompile(`/v1/completions \(stream\): \d+\+(\d+) tokens, abort;`)
	deadline := time.Now().Add(liveness)
	for aborted.FindStringSubmatch(p.stderr.String()) == nil {
		require.True(t, time.Now().Before(deadline), "the generation was not stopped: %s", p.stderr)
		time.Sleep(20 * time.Millisecond)
	}
	n, err := strconv.Atoi(aborted.FindStringSubmatch(p.stderr.String())[1])
	require.NoError(t, err)
	assert.Less(t, n, 900, "stopped before its max_tokens")
	t.Logf("stopped after %d of 900 tokens", n)

	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 0, p.exitCode(t, liveness))
	assert.Contains(t, p.stderr.String(), "serve: stopping: accepting no more connections")
	assert.True(t, strings.HasSuffix(p.stderr.String(), "serve: stopped\n"), "%s", p.stderr)
	assert.True(t, p.refusesConnections())
}

//go:build !js

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// The worker in miniflare, Cloudflare's local simulator (npm miniflare: its
// own workerd with a local R2 bucket, which bare workerd lacks), started by
// tools/worker-run.mjs, the script `make worker-run` runs.

// miniflareServer is tools/worker-run.mjs serving an edge build.
type miniflareServer struct {
	url   string      // http://127.0.0.1:PORT, without a trailing slash
	out   *syncBuffer // the script's and miniflare's messages
	stdin io.Writer   // the script's commands (--stdin)
	acks  chan string // its answers to them
	pid   int         // the script's process: miniflare's workerd is its descendant
}

// put puts the file at path in the bucket MODEL_BUCKET as key, while the
// worker runs (its isolate stays).
func (s *miniflareServer) put(t testing.TB, key, path string) {
	t.Helper()
	_, err := fmt.Fprintf(s.stdin, "put %s=%s\n", key, path)
	require.NoError(t, err)
	select {
	case ack := <-s.acks:
		require.Equal(t, "worker-run: put "+key, ack)
	case <-time.After(time.Minute):
		t.Fatalf("tools/worker-run.mjs did not put %s:\n%s", key, s.out)
	}
}

// serveMiniflare starts tools/worker-run.mjs serving build on a free port,
// with env added to the environment (its WASMLM_* variables become the
// worker's) and args (--model FILE, --put KEY=FILE, --var NAME=VALUE,
// --r2 DIR, --assets DIR), and waits until it serves. The test's cleanup stops it by
// closing its stdin (--stdin), which also stops it when the test binary
// dies: miniflare's workerd outlives a node killed outright.
func serveMiniflare(t testing.TB, build string, env []string, args ...string) *miniflareServer {
	t.Helper()
	root := repoRoot(t)
	needTool(t, filepath.Join(root, "node_modules", "miniflare", "package.json"), "npm ci installs it from package-lock.json")
	node := needTool(t, "node", "Debian package nodejs")
	cmd := exec.Command(node, append([]string{filepath.Join(root, "tools", "worker-run.mjs"), "--build", build, "--port", "0", "--stdin"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	s := &miniflareServer{out: &syncBuffer{}, acks: make(chan string, 1)}
	cmd.Stderr = s.out
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	s.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s.pid = cmd.Process.Pid
	exited := make(chan struct{})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if u, ok := strings.CutPrefix(line, "wasmlm edge worker: "); ok {
				urls <- strings.TrimSuffix(u, "/")
			}
			if strings.HasPrefix(line, "worker-run: put ") || strings.HasPrefix(line, "worker-run: error: ") {
				s.acks <- line
			}
			_, _ = fmt.Fprintln(s.out, line)
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("worker-run output:\n%s", s.out)
		}
	})
	select {
	case s.url = <-urls:
	case <-exited:
		t.Fatalf("tools/worker-run.mjs exited:\n%s", s.out)
	case <-time.After(2 * time.Minute):
		t.Fatalf("tools/worker-run.mjs did not serve within 2 minutes:\n%s", s.out)
	}
	return s
}

// TestWorkerRunServesAModelFromLocalR2: what `make worker-run
// MODEL=path/to/model.gguf` runs puts the file in the local R2 bucket
// MODEL_BUCKET and sets WASMLM_MODEL to its key; the worker loads it from
// there, once, names it as wasmlm serve names a file, and answers with the
// native server's greedy text.
func TestWorkerRunServesAModelFromLocalR2(t *testing.T) {
	root := repoRoot(t)
	mf := serveMiniflare(t, edgeWorker(t).build, nil, "--model", filepath.Join(root, "models", "stories260K-F16.gguf"))
	const body = `{"prompt": "Once upon a time", "temperature": 0, "max_tokens": 32}`
	got := postCompletion(t, mf.url, "/v1/completions", body)
	want := postCompletion(t, nativeServer(t).URL, "/v1/completions", body)
	assert.Equal(t, want.Choices[0].Text, got.Choices[0].Text, "the native server's greedy text")
	assert.Equal(t, "stories260K-F16", got.Model, "the object's name, as wasmlm serve names a file")
	h := health(t, mf.url)
	assert.Equal(t, 1, h.Ordinal)
	assert.Equal(t, 1, h.Loads)
}

// TestWorkerRunPutsTheModelBeforeServing: tools/worker-run.mjs puts the
// --model file in the bucket before the worker listens, so no request finds
// the bucket without it. A client asks /v1/models every few milliseconds
// from the script's start: every answer it gets, before the ready line and
// after, names the model (none is a 500 model_not_found), and the first
// completion after the ready line is the model's. The model is 13 MB of
// F32 weights, whose put takes a second or more: the client would see the
// empty bucket meanwhile if the worker listened first. A second run on the
// same bucket directory finds the file there and does not put it again.
func TestWorkerRunPutsTheModelBeforeServing(t *testing.T) {
	b, err := modelgen.Build(modelgen.Spec{
		Shape: modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 4, Heads: 4, KVHeads: 4, VocabSize: 512, ContextLength: 256},
		Type:  tensor.F32, MuteSpecial: true, Seed: 5,
	})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "wide.gguf")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	addr, err := freeAddr()
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)

	type answer struct {
		status int
		body   string
	}
	var answers []answer
	stop, polled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(polled)
		client := &http.Client{Timeout: time.Minute}
		for {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := client.Get("http://" + addr + "/v1/models")
			if err != nil { // nothing listens yet
				time.Sleep(5 * time.Millisecond)
				continue
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				answers = append(answers, answer{resp.StatusCode, string(body)})
			}
		}
	}()
	r2 := t.TempDir()
	start := time.Now()
	mf := serveMiniflare(t, edgeWorker(t).build, nil, "--model", path, "--r2", r2, "--port", port)
	ready := time.Since(start)
	c := postCompletion(t, mf.url, "/v1/completions", `{"prompt": "Once upon a time", "temperature": 0, "max_tokens": 8}`)
	close(stop)
	<-polled
	assert.Equal(t, "wide", c.Model, "the first completion after the ready line is the model's")
	t.Logf("ready after %v; %d answers to the polling client", ready.Round(time.Millisecond), len(answers))
	for i, a := range answers {
		require.Equal(t, http.StatusOK, a.status, "answer %d: %s", i, a.body)
		assert.Contains(t, a.body, `"id":"wide"`, "answer %d", i)
	}
	assert.Contains(t, mf.out.String(), "worker-run: put "+path+" in MODEL_BUCKET as wide.gguf")

	again := serveMiniflare(t, edgeWorker(t).build, nil, "--model", path, "--r2", r2)
	assert.Equal(t, "wide", servedModel(t, again.url))
	assert.Contains(t, again.out.String(), "worker-run: MODEL_BUCKET already holds "+path+" as wide.gguf")
}

// TestWorkerRunTakesKeysFromTheEnvironment: the script `make worker-run`
// runs passes the WASMLM_* variables of its environment to the worker, so a
// developer can try keys and limits locally: WASMLM_API_KEYS set, a request
// without the key is refused and one with it served.
func TestWorkerRunTakesKeysFromTheEnvironment(t *testing.T) {
	mf := serveMiniflare(t, edgeWorker(t).build, []string{"WASMLM_API_KEYS=sk-from-env"})
	models := func(key string) int { return modelsStatus(t, mf.url, key) }
	assert.Equal(t, http.StatusUnauthorized, models(""))
	assert.Equal(t, http.StatusUnauthorized, models("sk-wrong"))
	assert.Equal(t, http.StatusOK, models("sk-from-env"))
}

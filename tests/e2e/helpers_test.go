//go:build !js

// Package e2e holds wasmlm's end-to-end tests: the browser build driven in
// headless Chromium (browser_*_test.go) and the edge-worker build
// (worker_*_test.go). Each suite starts what it needs (a browser, a server,
// a build) once per test binary, lazily, on its first test, and registers
// its teardown with atShutdown; TestMain runs those after the tests.
package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// shutdowns are the teardowns registered with atShutdown, run in reverse
// order by TestMain.
var shutdowns struct {
	sync.Mutex
	fns []func()
}

// atShutdown registers fn to run when every test of the binary has run.
func atShutdown(fn func()) {
	shutdowns.Lock()
	defer shutdowns.Unlock()
	shutdowns.fns = append(shutdowns.fns, fn)
}

func TestMain(m *testing.M) {
	code := m.Run()
	shutdowns.Lock()
	fns := shutdowns.fns
	shutdowns.fns = nil
	shutdowns.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
	os.Exit(code)
}

// shared is a resource the tests of a binary share, started by the first
// test that asks for it. A start that failed fails every test that asks.
type shared[T any] struct {
	once sync.Once
	v    T
	err  error
}

// get returns the resource, starting it with start on first use.
func (s *shared[T]) get(t testing.TB, start func() (T, error)) T {
	t.Helper()
	s.once.Do(func() { s.v, s.err = start() })
	require.NoError(t, s.err)
	return s.v
}

// repoRoot is the directory of the module's go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err, "go env GOMOD")
	mod := string(out[:len(out)-1])
	require.NotEmpty(t, mod, "not inside the wasmlm module")
	return filepath.Dir(mod)
}

// artifactPath is where a test writes a file a person may want to look at
// (screenshots): tests/e2e/artifacts/, which git ignores.
func artifactPath(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "tests", "e2e", "artifacts")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return filepath.Join(dir, name)
}

// run runs a command in dir, returning its combined output in the error.
func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}

// jsonString renders v as JSON, to embed Go values in JavaScript source.
func jsonString(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// runOpenAIScript runs script, one of this directory's Node.js programs
// that drive the openai npm client (the version package-lock.json pins),
// with args, for at most two minutes; it decodes the one JSON object the
// script prints into v and returns it as printed.
func runOpenAIScript(t testing.TB, v any, script string, args ...string) []byte {
	t.Helper()
	root := repoRoot(t)
	node := needTool(t, "node", "Debian package nodejs")
	needTool(t, filepath.Join(root, "node_modules", "openai", "package.json"), "npm ci installs it from package-lock.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(root, "tests", "e2e", script)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "node %s: %s", script, stderr.String())
	require.NoError(t, json.Unmarshal(out, v), "%s", out)
	return out
}

// gzipSize is the size of b gzipped at gzip's default level, as servers and
// Cloudflare's size limits count it.
func gzipSize(t testing.TB, b []byte) int {
	t.Helper()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return gz.Len()
}

// removeAll removes a temporary directory. A failure leaves files behind,
// which is worth a line on stderr but fails no test.
func removeAll(dir string) {
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: removing %s: %v\n", dir, err)
	}
}

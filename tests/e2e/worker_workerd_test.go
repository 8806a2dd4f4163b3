//go:build !js

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/models"
)

// workerBuildEnv names a ready edge build (make worker's build/worker/) for
// the tests to load; without it they run make worker into a temporary
// directory.
const workerBuildEnv = "WASMLM_WORKER_BUILD"

// workerFiles are what make worker writes (workers-assets-gen's glue,
// cmd/worker/worker.mjs over its entry, web/simd.js, the SIMD kernels and
// the Go build), with the module kind workerd loads each as (worker.mjs and
// runtime.mjs import them by these names).
var workerFiles = []struct{ name, kind string }{
	{"worker.mjs", "esModule"},
	{"runtime.mjs", "esModule"},
	{"wasm_exec.js", "esModule"},
	{"simd.js", "esModule"},
	{"simd.wasm", "wasm"},
	{"simd-relaxed.wasm", "wasm"},
	{"app.wasm", "wasm"},
}

// needTool returns the path of a tool the edge tests need. A missing tool
// skips the test on a developer's machine but fails it in CI (CI set), where
// .ci/run installs everything.
func needTool(t testing.TB, path, install string) string {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if p, err := exec.LookPath(path); err == nil {
		return p
	}
	skipOrFail(t, fmt.Sprintf("%s is missing (%s); skipping the edge-worker tests", path, install))
	return ""
}

// skipOrFail skips a test that cannot run here (a missing tool, no /proc)
// on a developer's machine, and fails it in CI (CI set), where .ci/run
// provides everything, so that nothing is silently left untested.
func skipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// workerSourcesDigest reads the worker's sources. Reading them makes go
// test's result cache depend on them, which it would not otherwise: the test
// binary does not import package main.
func workerSourcesDigest(root string) (string, error) {
	var srcs []string
	err := filepath.WalkDir(filepath.Join(root, "cmd", "worker"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			srcs = append(srcs, path)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	srcs = append(srcs, filepath.Join(root, "web", "simd.js"), filepath.Join(root, "internal", "simdgen", "kernels.wasm"),
		filepath.Join(root, "internal", "simdgen", "kernels-relaxed.wasm"))
	sum := sha256.New()
	for _, f := range srcs {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		sum.Write(b)
	}
	return fmt.Sprintf("%x", sum.Sum(nil)[:6]), nil
}

// buildWorker returns a directory holding the edge build, and a cleanup for
// a directory it made.
func buildWorker(root string) (dir string, cleanup func(), err error) {
	if _, err := workerSourcesDigest(root); err != nil {
		return "", nil, err
	}
	if dir := os.Getenv(workerBuildEnv); dir != "" {
		for _, f := range workerFiles {
			if _, err := os.ReadFile(filepath.Join(dir, f.name)); err != nil {
				return "", nil, fmt.Errorf("%s=%s is not a worker build (make worker): %w", workerBuildEnv, dir, err)
			}
		}
		return dir, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "wasmlm-worker-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { removeAll(dir) }
	if err := run(root, nil, "make", "-s", "worker", "WORKER_DIR="+dir); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building the worker (make worker): %w", err)
	}
	return dir, cleanup, nil
}

// edgeService is one worker of a workerd configuration: the edge build with
// its env, on a socket of its own. Each is an isolate of its own too.
type edgeService struct {
	name     string
	bindings []string // the env: Worker.Binding values, e.g. (name = "WASMLM_RATE_LIMIT", text = "60")
	addr     string   // where it listens (serveWorkerd picks a free port)
}

// standInModule is the workerd extension module playing Cloudflare's Rate
// Limiting binding (see workerd_ratelimit.mjs), for a wrapped binding's
// moduleName.
const standInModule = "wasmlm-test:ratelimit"

// workerdConfig is a workerd configuration serving the build at buildRel
// (relative to the configuration file: workerd embeds relative paths only)
// as services, with the rate limiter's stand-in at standInRel (likewise
// relative; "": none) as an extension.
func workerdConfig(buildRel, standInRel string, services []edgeService) string {
	var mods strings.Builder
	for _, f := range workerFiles {
		fmt.Fprintf(&mods, "    (name = %q, %s = embed %q),\n", f.name, f.kind, filepath.ToSlash(filepath.Join(buildRel, f.name)))
	}
	var cfg, workers strings.Builder
	cfg.WriteString("using Workerd = import \"/workerd/workerd.capnp\";\n\nconst config :Workerd.Config = (\n  services = [\n")
	for i, s := range services {
		fmt.Fprintf(&cfg, "    (name = %q, worker = .worker%d),\n", s.name, i)
		fmt.Fprintf(&workers, "\nconst worker%d :Workerd.Worker = (\n  modules = [\n%s  ],\n  bindings = [%s],\n  compatibilityDate = \"2025-06-01\",\n  compatibilityFlags = [\"enable_request_signal\"],\n);\n",
			i, mods.String(), strings.Join(s.bindings, ", "))
	}
	cfg.WriteString("  ],\n  sockets = [\n")
	for _, s := range services {
		fmt.Fprintf(&cfg, "    (name = %q, address = %q, http = (), service = %q),\n", s.name, s.addr, s.name)
	}
	cfg.WriteString("  ],\n")
	if standInRel != "" {
		fmt.Fprintf(&cfg, "  extensions = [(modules = [(name = %q, internal = true, esModule = embed %q)])],\n", standInModule, filepath.ToSlash(standInRel))
	}
	cfg.WriteString(");\n")
	return cfg.String() + workers.String()
}

// freeAddr returns a 127.0.0.1 address with a port nobody listens on.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// syncBuffer collects a child process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// workerdServer is workerd serving the edge build.
type workerdServer struct {
	build string            // the edge build it serves
	url   string            // http://127.0.0.1:PORT: the first service's
	urls  map[string]string // each service's, by name
	first time.Duration     // from start to the first answer: module compile plus one cold Go instance
	out   *syncBuffer       // workerd's output, for failure messages
}

// theWorkerd is the workerd of this test binary, started by the first test
// that needs it and stopped by TestMain after the last.
var theWorkerd shared[*workerdServer]

// edgeWorker returns the running workerd, starting it on first use.
func edgeWorker(t testing.TB) *workerdServer {
	t.Helper()
	root := repoRoot(t)
	bin := workerdBinary(t, root)
	w := theWorkerd.get(t, func() (*workerdServer, error) { return startWorkerd(root, bin) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("workerd output so far:\n%s", w.out)
		}
	})
	return w
}

// workerdBinary is the workerd executable that npm ci installed. The bin
// link node_modules/.bin/workerd is that executable only when the workerd
// package's postinstall ran (it hard-links the binary over the package's
// Node launcher): the launcher starts workerd as its child, which neither
// Kill nor the death signal reaches and which keeps the output pipes open,
// so a run with --ignore-scripts would hang at the end and leave workerd
// serving. The package's main export names the executable in both cases.
func workerdBinary(t testing.TB, root string) string {
	t.Helper()
	needTool(t, filepath.Join(root, "node_modules", ".bin", "workerd"), "npm ci installs it from package-lock.json")
	node := needTool(t, "node", "Debian package nodejs")
	cmd := exec.Command(node, "-p", `require("workerd").default`)
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "finding the workerd executable")
	return strings.TrimSpace(string(out))
}

// startWorkerd builds the worker and serves it with workerd until the test
// binary ends.
func startWorkerd(root, bin string) (*workerdServer, error) {
	build, cleanBuild, err := buildWorker(root)
	if err != nil {
		return nil, err
	}
	s, stop, err := serveWorkerd(bin, build)
	if err != nil {
		cleanBuild()
		return nil, err
	}
	atShutdown(func() { stop(); cleanBuild() })
	return s, nil
}

// serveWorkerd writes a configuration serving build on a free port, starts
// workerd and waits for its first answer; stop ends it.
func serveWorkerd(bin, build string) (s *workerdServer, stop func(), err error) {
	return serveWorkerdServices(bin, build, "", []edgeService{{name: "wasmlm"}})
}

// serveWorkerdServices is serveWorkerd for services, each on a free port,
// with the rate limiter's stand-in at standIn ("": none); it waits for the
// first service's GET /health to answer 200.
func serveWorkerdServices(bin, build, standIn string, services []edgeService) (s *workerdServer, stop func(), err error) {
	cfgDir, err := os.MkdirTemp("", "wasmlm-workerd-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { removeAll(cfgDir) }
	rel, err := filepath.Rel(cfgDir, build)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	standInRel := ""
	if standIn != "" {
		if standInRel, err = filepath.Rel(cfgDir, standIn); err != nil {
			cleanup()
			return nil, nil, err
		}
	}
	s = &workerdServer{build: build, urls: map[string]string{}, out: &syncBuffer{}}
	services = slices.Clone(services)
	for i := range services {
		if services[i].addr, err = freeAddr(); err != nil {
			cleanup()
			return nil, nil, err
		}
		s.urls[services[i].name] = "http://" + services[i].addr
	}
	s.url = s.urls[services[0].name]
	addr := services[0].addr
	cfg := filepath.Join(cfgDir, "workerd.capnp")
	if err := os.WriteFile(cfg, []byte(workerdConfig(rel, standInRel, services)), 0o644); err != nil {
		cleanup()
		return nil, nil, err
	}

	cmd := exec.Command(bin, "serve", cfg, "--verbose")
	cmd.Stdout, cmd.Stderr = s.out, s.out
	setDeathSignal(cmd)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Kill() // it may have exited; Wait reports how it ended
		<-exited
		cleanup()
	}

	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			cleanup()
			return nil, nil, fmt.Errorf("workerd exited: %v\n%s", err, s.out)
		default:
		}
		resp, err := client.Get(s.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				stop()
				return nil, nil, fmt.Errorf("workerd: GET /health: %s\n%s", resp.Status, s.out)
			}
			s.first = time.Since(start)
			return s, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, fmt.Errorf("workerd did not answer on %s: %v\n%s", addr, err, s.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nativeServer serves httpapi.Handler with the embedded default model, named
// as cmd/worker names it, over a real connection. (It keeps the default
// queue: unlike a worker instance it serves every request of a test.)
func nativeServer(t testing.TB) *httptest.Server {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	h, err := httpapi.New(m, httpapi.Options{ModelName: models.DefaultName, AllowOrigin: "*"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// ctxTimeout is a context for one request to a test server.
func ctxTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

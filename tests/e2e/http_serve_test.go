//go:build !js

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// The server tests (http_*_test.go) that need the real `wasmlm serve` — its
// signals, its listener, its memory — build it once per test binary and run
// it as a child process on 127.0.0.1.

// liveness bounds how long a test waits for what a limit it configured
// short (a timeout of a second or less, a signal) must bring about: it
// proves that something happens, not how fast.
const liveness = 20 * time.Second

var theServeBinary shared[string]

// serveBinary is cmd/wasmlm, built into a temporary directory on first use.
func serveBinary(t testing.TB) string {
	t.Helper()
	root := repoRoot(t)
	return theServeBinary.get(t, func() (string, error) {
		dir, err := os.MkdirTemp("", "wasmlm-serve-")
		if err != nil {
			return "", err
		}
		atShutdown(func() { removeAll(dir) })
		bin := filepath.Join(dir, "wasmlm")
		if err := run(root, nil, "go", "build", "-o", bin, "./cmd/wasmlm"); err != nil {
			return "", err
		}
		return bin, nil
	})
}

var theSlowModel shared[string]

// slowModel is a random-weight model of stories15M's layers with a
// 1024-token context and a 4096-token vocabulary (29 MB): a greedy stream
// of its whole context takes seconds (about 6 s at the 160 tokens/s of the
// 2-core build machine), long enough to signal a server in its middle. BOS
// and EOS are muted, so a greedy completion runs to its max_tokens.
func slowModel(t testing.TB) string {
	t.Helper()
	return theSlowModel.get(t, func() (string, error) {
		b, err := modelgen.Build(modelgen.Spec{
			Shape:       modelgen.Shape{Dim: 288, HiddenDim: 768, Layers: 6, Heads: 6, KVHeads: 6, VocabSize: 4096, ContextLength: 1024},
			MuteSpecial: true, Seed: 1,
		})
		if err != nil {
			return "", err
		}
		dir, err := os.MkdirTemp("", "wasmlm-slow-model-")
		if err != nil {
			return "", err
		}
		atShutdown(func() { removeAll(dir) })
		path := filepath.Join(dir, "slow.gguf")
		return path, os.WriteFile(path, b, 0o644)
	})
}

// serveProcess is a running `wasmlm serve`.
type serveProcess struct {
	cmd    *exec.Cmd
	addr   string // 127.0.0.1:PORT
	url    string // http://127.0.0.1:PORT
	stderr *syncBuffer
	exited chan struct{} // closed when it has exited; then err holds Wait's result
	err    error
}

// serveAddrRE finds the address in serve's start-up line.
var serveAddrRE = regexp.MustCompile(`on http://(127\.0\.0\.1:\d+)/`)

// startServe starts `wasmlm serve` on a free port of 127.0.0.1, without a
// web page, with args, and waits for its start-up line. The test's cleanup
// kills it if it is still running.
func startServe(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	return startServer(t, exec.Command(serveBinary(t), append([]string{"serve", "-addr", "127.0.0.1:0", "-web", ""}, args...)...))
}

// startServer starts cmd, a `wasmlm serve` (the Go CLI's or the npm
// package's), and waits for its start-up line. The test's cleanup kills it
// if it is still running.
func startServer(t *testing.T, cmd *exec.Cmd) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	setDeathSignal(cmd)
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("wasmlm serve's output:\n%s", p.stderr)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := serveAddrRE.FindStringSubmatch(p.stderr.String()); m != nil {
			p.addr, p.url = m[1], "http://"+m[1]
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("wasmlm serve exited: %v\n%s", p.err, p.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "wasmlm serve did not start: %s", p.stderr)
	}
}

// signal sends sig to the server.
func (p *serveProcess) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
}

// exitCode waits (at most limit) for the server to exit and returns its
// exit code.
func (p *serveProcess) exitCode(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(limit):
		t.Fatalf("wasmlm serve did not exit within %v", limit)
	}
	if p.err != nil {
		ee, ok := p.err.(*exec.ExitError)
		require.True(t, ok, "wasmlm serve: %v", p.err)
		return ee.ExitCode()
	}
	return 0
}

// refusesConnections reports whether nothing listens on the server's
// address any more.
func (p *serveProcess) refusesConnections() bool {
	c, err := net.DialTimeout("tcp", p.addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// rss is the server's resident memory, in bytes, from /proc (Linux); ok is
// false elsewhere.
func (p *serveProcess) rss(t *testing.T) (bytes int64, ok bool) {
	t.Helper()
	return p.status(t, "VmRSS")
}

// peakRSS is the most resident memory the server has had.
func (p *serveProcess) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, ok := p.status(t, "VmHWM")
	require.True(t, ok, "no /proc")
	return b
}

// resetPeakRSS makes peakRSS start again from the present resident memory
// (Linux's clear_refs; ok is false where it cannot).
func (p *serveProcess) resetPeakRSS() (ok bool) {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.cmd.Process.Pid), []byte("5"), 0) == nil
}

// status reads a size (in kB there) from /proc/PID/status.
func (p *serveProcess) status(t *testing.T, field string) (bytes int64, ok bool) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if rest, found := strings.CutPrefix(sc.Text(), field+":"); found {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err, "%s: %q", field, rest)
			return kb << 10, true
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, p.cmd.Process.Pid)
	return 0, false
}

// sockets counts the server's open sockets (its listener among them), from
// /proc (Linux); ok is false elsewhere.
func (p *serveProcess) sockets(t *testing.T) (n int, ok bool) {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n, true
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string // "" for data events
	data string
}

// sseReader reads a stream's events one at a time.
type sseReader struct{ rd *bufio.Reader }

func newSSEReader(r io.Reader) *sseReader { return &sseReader{rd: bufio.NewReader(r)} }

// next returns the next event; ok is false at the end of the stream, which
// must come between events.
func (s *sseReader) next(t testing.TB) (ev sseEvent, ok bool) {
	t.Helper()
	ev, ok, err := s.read()
	require.NoError(t, err)
	return ev, ok
}

// read is next for a goroutine: it returns what fails.
func (s *sseReader) read() (ev sseEvent, ok bool, err error) {
	started := false
	for {
		line, err := s.rd.ReadString('\n')
		switch {
		case errors.Is(err, io.EOF) && line == "" && started:
			return ev, false, errors.New("the stream ends inside an event")
		case errors.Is(err, io.EOF) && line == "":
			return ev, false, nil
		case err != nil:
			return ev, false, fmt.Errorf("reading the stream: %w", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && started:
			return ev, true, nil
		case strings.HasPrefix(line, "event: "):
			ev.name, started = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: ") && ev.data != "":
			return ev, false, fmt.Errorf("two data lines in an event: %q", line)
		case strings.HasPrefix(line, "data: "):
			ev.data, started = strings.TrimPrefix(line, "data: "), true
		default:
			return ev, false, fmt.Errorf("unexpected SSE line %q", line)
		}
	}
}

// rest reads the remaining events.
func (s *sseReader) rest(t testing.TB) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for {
		ev, ok := s.next(t)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

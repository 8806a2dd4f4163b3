//go:build !js

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/headless"
)

// buildProg builds testdata/prog for GOOS=js GOARCH=wasm.
func buildProg(t *testing.T) string {
	t.Helper()
	if _, err := headless.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin := filepath.Join(t.TempDir(), "prog.wasm")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/prog")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building testdata/prog: %s", out)
	return bin
}

// TestRun runs a program in the browser for each way a run can end: its
// output on the right stream in order, its exit code, and a clear failure
// (exit code 1, a line on stderr) where it has none.
func TestRun(t *testing.T) {
	bin := buildProg(t)
	t.Setenv("WASMLM_PROG", "passed")
	t.Setenv("HOME", filepath.Join(t.TempDir(), "home")) // set here, not passed to the binary
	notWasm := filepath.Join(t.TempDir(), "text")
	require.NoError(t, os.WriteFile(notWasm, []byte("not a module"), 0o755))
	cases := []struct {
		name      string
		args      []string
		code      int
		stdout    string // all of it, or (stderrHas) a part of stderr
		stderr    string
		stderrHas string
	}{
		{name: "echo", args: []string{bin, "echo", "-test.v", "a b"}, code: 0,
			stdout: "args -test.v a b\nenv WASMLM_PROG=passed WASMLM_WASMBROWSER=1\nHOME=\"\"\nno newline", stderr: "to stderr\n"},
		{name: "files", args: []string{bin, "files"}, code: 0, stdout: "wd wasmbrowser\n" +
			"read \"// Command prog is what the runner's tests run in the browser: its first\" <nil>\n" +
			"entry prog true\nreaddir <nil>\nreadat \"Command\" <nil>\nsize true true\n" +
			"missing true\noutside true\nwrite true\n"},
		{name: "gpu", args: []string{bin, "gpu"}, code: 0, stdout: "navigator.gpu: true\n"},
		{name: "exit", args: []string{bin, "exit"}, code: 3, stdout: "exiting with 3\n"},
		{name: "panic", args: []string{bin, "panic"}, code: 2, stderrHas: "panic: boom"},
		{name: "hang", args: []string{"-timeout", "2s", bin, "hang"}, code: 1, stderrHas: "took longer than 2s"},
		{name: "worker closes", args: []string{"-timeout", "2s", bin, "close"}, code: 1, stderrHas: "took longer than 2s"},
		{name: "start timeout", args: []string{"-start-timeout", "1ns", bin, "echo"}, code: 1, stderrHas: "did not start the binary within 1ns"},
		{name: "throw", args: []string{bin, "throw"}, code: 1, stderrHas: "thrown in the worker"},
		{name: "not WebAssembly", args: []string{notWasm, "-test.v"}, code: 1, stderrHas: "instantiating the test binary"},
		{name: "no binary", args: []string{filepath.Join(t.TempDir(), "missing")}, code: 1, stderrHas: "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			require.Equal(t, c.code, code, "exit code; stderr: %s", stderr.String())
			if c.stderrHas != "" {
				require.Contains(t, stderr.String(), c.stderrHas)
				return
			}
			require.Equal(t, c.stdout, stdout.String())
			require.Equal(t, c.stderr, stderr.String())
		})
	}
}

// TestDefaultTimeout: the binary's -test.timeout plus a minute, in each
// spelling go test and people use; 30 minutes without one or with 0.
func TestDefaultTimeout(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"go test's":      {[]string{"-test.paniconexit0", "-test.timeout=10m0s"}, "11m0s"},
		"separate value": {[]string{"-test.timeout", "30s", "-test.v"}, "1m30s"},
		"two dashes":     {[]string{"--test.timeout=2m"}, "3m0s"},
		"none":           {[]string{"-test.v"}, "30m0s"},
		"zero":           {[]string{"-test.timeout=0"}, "30m0s"},
		"an argument's":  {[]string{"-test.run", "test.timeout=5s"}, "30m0s"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, c.want, defaultTimeout(c.args).String())
		})
	}
}

// TestEnv: WASMLM_*, CI, GODEBUG and GOTRACEBACK cross, nothing else, and
// the binary learns it runs in the browser.
func TestEnv(t *testing.T) {
	got := testEnv([]string{"WASMLM_MODEL=x", "CI=true", "HOME=home", "GOCACHE=cache", "GODEBUG=a=1", "GOTRACEBACK=all", "WASMLM=no", "BAD"})
	require.Equal(t, map[string]string{"WASMLM_MODEL": "x", "CI": "true", "GODEBUG": "a=1", "GOTRACEBACK": "all", "WASMLM_WASMBROWSER": "1"}, got)
}

// TestCrashedPage: a page whose renderer dies while the binary runs ends
// the run at once, saying so.
func TestCrashedPage(t *testing.T) {
	bin := buildProg(t)
	var stdout, stderr bytes.Buffer
	code, err := runInBrowser(context.Background(), job{
		binary: bin, args: []string{"hang"}, env: map[string]string{}, dir: t.TempDir(),
		stdout: &stdout, stderr: &stderr, timeout: time.Minute, startTimeout: time.Minute,
		onStart: func(tab context.Context) {
			chromedp.Do(tab, chromedp.Navigate("chrome://crash"))
		},
	})
	require.ErrorContains(t, err, "crashed", "exit code %d", code)
}

// TestSIMD: WASMLM_SIMD gives the binary the kernel imports of each kind
// (the program runs with them), and a missing module or an unknown kind
// ends the run with a clear failure.
func TestSIMD(t *testing.T) {
	bin := buildProg(t)
	cases := []struct {
		simd, relaxed string
		code          int
		stderrHas     string
	}{
		{simd: "simd128", code: 3},
		{simd: "relaxed", code: 3},
		{simd: "off", code: 3},
		{simd: "relaxed", relaxed: filepath.Join(t.TempDir(), "missing.wasm"), code: 1, stderrHas: "the relaxed SIMD kernels are unavailable"},
		{simd: "avx", code: 1, stderrHas: "WASMLM_SIMD must be simd128, relaxed or off"},
	}
	for _, c := range cases {
		t.Run(c.simd+c.relaxed, func(t *testing.T) {
			t.Setenv("WASMLM_SIMD", c.simd)
			t.Setenv("WASMLM_SIMD_RELAXED_WASM", c.relaxed)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{bin, "exit"}, &stdout, &stderr)
			require.Equal(t, c.code, code, "exit code; stderr: %s", stderr.String())
			if c.code == 3 { // the program's own
				require.Equal(t, "exiting with 3\n", stdout.String())
				return
			}
			require.Contains(t, stderr.String(), c.stderrHas)
		})
	}
}

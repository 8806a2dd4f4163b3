//go:build !js

// Command wasmbrowser runs a GOOS=js GOARCH=wasm test binary in a dedicated
// Web Worker of headless Chromium with WebGPU (SwiftShader's adapter), as
// `go test -exec` wants it:
//
//	go build -o build/wasmbrowser ./tools/wasmbrowser
//	GOOS=js GOARCH=wasm go test -exec="$PWD/build/wasmbrowser" ./webgpu/
//
// It serves the binary, Go's wasm_exec.js and a page that starts the worker
// on 127.0.0.1 (a random port; a secure context, so navigator.gpu exists),
// runs the binary there with its arguments (-test.v, -test.run, …) and the
// environment variables WASMLM_*, CI, GODEBUG and GOTRACEBACK, adding
// WASMLM_WASMBROWSER=1 (a test that needs WebGPU fails if it finds none
// here, and skips where the variable is unset, as under Node), in the
// runner's working directory, with read-only access to the files of the
// module around it (testdata, fuzz seed corpora; writes fail), copies its
// stdout and stderr to its own as they are written, and exits with its
// exit code. A binary that cannot start, a worker or page that dies, or a
// run past the timeout ends it with exit code 1 and a line saying so on
// stderr.
//
// WASMLM_SIMD=simd128, relaxed or off gives the binary the SIMD kernels'
// imports, as tools/wasm_exec_simd.sh does under Node (for builds with
// -tags wasmlm_simd): internal/simdgen/kernels.wasm (or WASMLM_SIMD_WASM),
// with relaxed internal/simdgen/kernels-relaxed.wasm (or
// WASMLM_SIMD_RELAXED_WASM) where Chromium has relaxed SIMD, or with off
// the stubs, through web/simd.js:
//
//	WASMLM_SIMD=relaxed GOOS=js GOARCH=wasm go test -tags wasmlm_simd -exec="$PWD/build/wasmbrowser" ./engine/tensor/
//
// Flags, before the binary's path:
//
//	-check           say whether Chromium is here (exit 0) or not (exit 1), and run nothing
//	-timeout d       the longest a run may take (default: the binary's -test.timeout plus a minute; 30 minutes without one)
//	-start-timeout d the longest Chromium may take to start the binary (default 2 minutes)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wasmlm/wasmlm/internal/headless"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("wasmbrowser", flag.ContinueOnError)
	flags.SetOutput(stderr)
	check := flags.Bool("check", false, "say whether Chromium is here (exit 0) or not (exit 1), and run nothing")
	timeout := flags.Duration("timeout", 0, "the longest a run may take (0: the binary's -test.timeout plus a minute; 30 minutes without one)")
	startTimeout := flags.Duration("start-timeout", 2*time.Minute, "the longest Chromium may take to start the binary")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: wasmbrowser [flags] BINARY [ARGS...]\n\nRuns a GOOS=js GOARCH=wasm test binary in a Web Worker of headless Chromium with WebGPU.")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *check {
		path, err := headless.Path()
		if err == nil {
			path, err = exec.LookPath(path) // CHROME_PATH too must name a program
		}
		if err != nil {
			fmt.Fprintln(stderr, "wasmbrowser:", err)
			return 1
		}
		fmt.Fprintln(stdout, path)
		return 0
	}
	if flags.NArg() == 0 {
		flags.Usage()
		return 2
	}
	binary, binArgs := flags.Arg(0), flags.Args()[1:]
	if *timeout <= 0 {
		*timeout = defaultTimeout(binArgs)
	}
	dir, err := os.Getwd()
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, "wasmbrowser:", err)
		return 1
	}
	root := moduleRoot(dir)
	simd := os.Getenv("WASMLM_SIMD")
	switch simd {
	case "", "simd128", "relaxed", "off":
	default:
		fmt.Fprintf(stderr, "wasmbrowser: WASMLM_SIMD must be simd128, relaxed or off, got %q\n", simd)
		return 1
	}
	code, err := runInBrowser(ctx, job{
		binary:       binary,
		args:         binArgs,
		env:          testEnv(os.Environ()),
		dir:          dir,
		root:         root,
		simd:         simd,
		kernels:      envOr("WASMLM_SIMD_WASM", filepath.Join(root, "internal", "simdgen", "kernels.wasm")),
		relaxed:      envOr("WASMLM_SIMD_RELAXED_WASM", filepath.Join(root, "internal", "simdgen", "kernels-relaxed.wasm")),
		stdout:       stdout,
		stderr:       stderr,
		timeout:      *timeout,
		startTimeout: *startTimeout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "wasmbrowser: %s: %v\n", binary, err)
		return 1
	}
	return code
}

// envOr is the environment variable name's value, or def where it is unset
// or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// defaultTimeout is the binary's -test.timeout plus a minute (the binary
// then fails on its own, printing its goroutines, before the runner gives
// up), or 30 minutes where it has none.
func defaultTimeout(args []string) time.Duration {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "test.timeout" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if d, err := time.ParseDuration(value); err == nil && d > 0 {
			return d + time.Minute
		}
	}
	return 30 * time.Minute
}

// testEnv is the environment the binary gets: the variables of environ
// whose names start with WASMLM_, and CI, GODEBUG and GOTRACEBACK, plus
// WASMLM_WASMBROWSER=1. Nothing else crosses: the worker has no file
// system, and Go's command line and environment together must fit in a
// few kilobytes of the module's memory.
func testEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "WASMLM_"), name == "CI", name == "GODEBUG", name == "GOTRACEBACK":
			env[name] = value
		}
	}
	env["WASMLM_WASMBROWSER"] = "1"
	return env
}

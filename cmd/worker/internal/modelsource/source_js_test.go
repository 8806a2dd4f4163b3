package modelsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// rangeServer starts testdata/rangeserver (go run, natively: a wasm
// program cannot listen) on the files of dir and returns its base URL.
func rangeServer(t *testing.T, dir string) string {
	t.Helper()
	env := js.Global().Get("Object").Call("assign", map[string]any{}, js.Global().Get("process").Get("env"))
	for _, k := range []string{"GOOS", "GOARCH", "GOWASM"} {
		js.Global().Get("Reflect").Call("deleteProperty", env, k)
	}
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	child := js.Global().Call("require", "child_process").Call("spawn", "go",
		[]any{"run", "./testdata/rangeserver", dir},
		map[string]any{"cwd": cwd, "env": env, "stdio": []any{"pipe", "pipe", "inherit"}})
	t.Cleanup(func() { child.Get("stdin").Call("end") })
	line := make(chan string, 1)
	var out strings.Builder
	onData := js.FuncOf(func(_ js.Value, args []js.Value) any {
		out.WriteString(args[0].Call("toString").String())
		if s, _, ok := strings.Cut(out.String(), "\n"); ok {
			select {
			case line <- s:
			default:
			}
		}
		return nil
	})
	t.Cleanup(onData.Release)
	child.Get("stdout").Call("on", "data", onData)
	select {
	case u := <-line:
		return u
	case <-time.After(3 * time.Minute):
		t.Fatal("rangeserver did not start")
	}
	return ""
}

// testFiles writes the default model whole, truncated, and as a split set
// of 3 into a directory, and returns it with the parts.
func testFiles(t *testing.T) (dir string, parts [][]byte) {
	t.Helper()
	dir = t.TempDir()
	whole := models.Default()
	parts, err := modelgen.Split(whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("m.gguf", whole)
	write("truncated.gguf", whole[:len(whole)-1000])
	for i, p := range parts {
		write(filepath.Base(gguf.SplitPath("s", i+1, 3)), p)
	}
	return dir, parts
}

// TestFetch reads models over HTTP from a real server in Node's fetch:
// ranged in small chunks, a split set with its parts' digests, a server
// that ignores Range, and each failure with its code.
func TestFetch(t *testing.T) {
	dir, parts := testFiles(t)
	base := rangeServer(t, dir)
	direct, err := engine.LoadGGUF(slices.Clone(models.Default()))
	if err != nil {
		t.Fatal(err)
	}
	want := greedy(t, direct)
	var sums []string
	for _, p := range parts {
		sums = append(sums, digest(p))
	}
	small := Options{HeaderBytes: 4096, ChunkBytes: 64 << 10}
	withSums := small
	withSums.SHA256 = sums
	for _, tc := range []struct {
		name, path string
		opts       Options
	}{
		{"ranged", "/ranged/m.gguf", small},
		{"ranged whole file in one read", "/ranged/m.gguf?token=1", Options{SHA256: []string{digest(models.Default())}}},
		{"split set", "/ranged/s-00001-of-00003.gguf", withSums},
		{"server ignoring Range", "/whole/m.gguf", small},
		{"split set from a server ignoring Range", "/whole/s-00001-of-00003.gguf", withSums},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load(context.Background(), NewFetch(), base+tc.path, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := greedy(t, m); got != want {
				t.Errorf("generates %q, the file loaded directly %q", got, want)
			}
		})
	}
	for _, tc := range []struct {
		name, path, code string
		opts             Options
		says             string
	}{
		{"missing", "/ranged/nope.gguf", CodeNotFound, small, "404"},
		{"missing part", "/ranged/s-00001-of-00004.gguf", CodeNotFound, small, "404"},
		{"truncated", "/ranged/truncated.gguf", CodeLoadFailed, small, "truncated"},
		{"checksum", "/ranged/m.gguf", CodeChecksumMismatch, Options{SHA256: []string{strings.Repeat("0", 64)}}, strings.Repeat("0", 64)},
		{"whole file over the budget", "/whole/m.gguf", CodeTooLarge, Options{Budget: defaultTotal(t) + 1}, "held in JavaScript"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), NewFetch(), base+tc.path, tc.opts)
			var e *Error
			if !errors.As(err, &e) || e.Code() != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Load: %v, want a %s error saying %q", err, tc.code, tc.says)
			}
			if strings.Contains(err.Error(), "token=") {
				t.Errorf("%q quotes the URL's query", err)
			}
		})
	}
}

// TestFromEnv: the variables choose the source; the assets binding's fetch
// serves a split set by path; a bucket is needed for WASMLM_MODEL; none
// set is the default (ok false).
func TestFromEnv(t *testing.T) {
	dir, _ := testFiles(t)
	base := rangeServer(t, dir)
	// An assets binding's stand-in: its fetch forwards the path to the server.
	forward := js.FuncOf(func(_ js.Value, args []js.Value) any {
		u := js.Global().Get("URL").New(args[0])
		return js.Global().Call("fetch", base+"/ranged"+u.Get("pathname").String(), args[1])
	})
	defer forward.Release()
	assets := js.Global().Get("Object").New()
	assets.Set("fetch", forward)
	bindings := map[string]js.Value{AssetsBinding: assets}
	binding := func(name string) js.Value {
		if b, ok := bindings[name]; ok {
			return b
		}
		return js.Undefined()
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		wantName string
		wantOK   bool
		wantCode string
	}{
		{"nothing set", nil, "", false, ""},
		{"URL", map[string]string{EnvURL: base + "/ranged/m.gguf", EnvSHA256: digest(models.Default())}, "m", true, ""},
		{"assets", map[string]string{EnvURL: "/s-00001-of-00003.gguf"}, "s", true, ""},
		{"no bucket", map[string]string{EnvModel: "m.gguf"}, "", false, CodeMisconfigured},
		{"bad digest", map[string]string{EnvURL: base + "/ranged/m.gguf", EnvSHA256: "abc"}, "", false, CodeMisconfigured},
		{"digest alone", map[string]string{EnvSHA256: digest(models.Default())}, "", false, CodeMisconfigured},
		{"not a URL", map[string]string{EnvURL: "ftp://x/m.gguf"}, "", false, CodeMisconfigured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(n string) (string, error) { return tc.env[n], nil }
			m, name, ok, err := FromEnv(getenv, binding, engine.SessionOptions{})
			var e *Error
			switch {
			case tc.wantCode != "":
				if !errors.As(err, &e) || e.Code() != tc.wantCode {
					t.Fatalf("FromEnv: %v, want a %s error", err, tc.wantCode)
				}
			case err != nil:
				t.Fatal(err)
			case ok != tc.wantOK || name != tc.wantName || (m != nil) != ok:
				t.Errorf("FromEnv = %v, %q, %v; want a model %v named %q", m != nil, name, ok, tc.wantOK, tc.wantName)
			}
		})
	}
	// A URL that is not http(s) is quoted, without its user information or query.
	getenv := func(n string) (string, error) { return map[string]string{EnvURL: "ftp://u:pw@x/m.gguf?t=s"}[n], nil }
	if _, _, _, err := FromEnv(getenv, binding, engine.SessionOptions{}); err == nil ||
		!strings.Contains(err.Error(), `"ftp://x/m.gguf"`) || strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "t=s") {
		t.Errorf("FromEnv with an ftp URL: %v; want the URL quoted without its user information or query", err)
	}
}

// TestR2 reads through a stand-in of an R2 bucket binding (head, and get
// with a range, as Cloudflare's binding answers them): the calls the
// worker makes, the bytes it copies. Miniflare's real local R2 is in
// tests/e2e.
func TestR2(t *testing.T) {
	whole := models.Default()
	var gets int
	head := js.FuncOf(func(_ js.Value, args []js.Value) any {
		if args[0].String() != "models/m.gguf" {
			return js.Global().Get("Promise").Call("resolve", js.Null())
		}
		return js.Global().Get("Promise").Call("resolve", map[string]any{"size": len(whole)})
	})
	defer head.Release()
	get := js.FuncOf(func(_ js.Value, args []js.Value) any {
		gets++
		r := args[1].Get("range")
		off, n := r.Get("offset").Int(), r.Get("length").Int()
		u8 := js.Global().Get("Uint8Array").New(n)
		js.CopyBytesToJS(u8, whole[off:off+n])
		body := js.Global().Get("Object").New()
		body.Set("arrayBuffer", js.FuncOf(func(js.Value, []js.Value) any { // released with the test binary
			return js.Global().Get("Promise").Call("resolve", u8.Get("buffer"))
		}))
		return js.Global().Get("Promise").Call("resolve", body)
	})
	defer get.Release()
	bucket := js.Global().Get("Object").New()
	bucket.Set("head", head)
	bucket.Set("get", get)
	m, err := Load(context.Background(), NewR2(bucket, BucketBinding), "models/m.gguf", Options{HeaderBytes: 64 << 10, ChunkBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := engine.LoadGGUF(slices.Clone(whole))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := greedy(t, m), greedy(t, direct); got != want {
		t.Errorf("generates %q, the file loaded directly %q", got, want)
	}
	if want := (len(whole) + (64 << 10) - 1) / (64 << 10); gets != want {
		t.Errorf("%d ranged gets, want %d (the header, then 64 KiB chunks, %d bytes)", gets, want, len(whole))
	}
	_, err = Load(context.Background(), NewR2(bucket, BucketBinding), "models/nope.gguf", Options{})
	var e *Error
	if !errors.As(err, &e) || e.Code() != CodeNotFound || !strings.Contains(err.Error(), `MODEL_BUCKET object "models/nope.gguf"`) {
		t.Errorf("Load of a missing key: %v, want %s naming it", err, CodeNotFound)
	}
}

// defaultTotal is what the default model takes by the budget's estimate.
func defaultTotal(t *testing.T) int64 {
	t.Helper()
	f, err := gguf.ParseHeader(models.Default(), int64(len(models.Default())))
	if err != nil {
		t.Fatal(err)
	}
	h, err := engine.ReadHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	m, _, _, err := estimate(h, int64(len(models.Default())), 0, engine.KVAuto)
	if err != nil {
		t.Fatal(err)
	}
	return m.Total
}

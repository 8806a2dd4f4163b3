package modelsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// memStore is a Store of files in Go memory that counts the bytes read.
type memStore struct {
	files map[string][]byte
	read  int // bytes handed out
}

func (m *memStore) Open(_ context.Context, name string, n int) (Object, Chunk, error) {
	b, ok := m.files[name]
	if !ok {
		return Object{}, nil, fmt.Errorf("no file %q: %w", name, ErrNotFound)
	}
	n = min(n, len(b))
	m.read += n
	return Object{Size: int64(len(b))}, Bytes(b[:n]), nil
}

func (m *memStore) Read(_ context.Context, name string, off int64, n int) (Chunk, error) {
	b, ok := m.files[name]
	if !ok {
		return nil, fmt.Errorf("no file %q: %w", name, ErrNotFound)
	}
	if off+int64(n) > int64(len(b)) {
		return nil, fmt.Errorf("%d bytes from %d of %d: %w", n, off, len(b), ErrShort)
	}
	m.read += n
	return Bytes(b[off : off+int64(n)]), nil
}

func (m *memStore) Describe(name string) string { return fmt.Sprintf("file %q", name) }

// greedy is the model's greedy continuation of a prompt: what tells two
// loads of the same file apart if their bytes differ.
func greedy(t *testing.T, m *engine.Model) string {
	t.Helper()
	s, err := m.NewSession(engine.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.GenerateOptions{MaxTokens: 24} // zero Sampling: greedy
	r, err := s.Generate(context.Background(), "Once upon a time", opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r.Text
}

func digest(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestLoad reads the default model whole and as a split set, in chunks
// smaller than its tensors and headers read in several steps, with and
// without digests: the model generates what the file loaded directly does.
func TestLoad(t *testing.T) {
	whole := models.Default()
	direct, err := engine.LoadGGUF(slices.Clone(whole))
	if err != nil {
		t.Fatal(err)
	}
	want := greedy(t, direct)
	parts, err := modelgen.Split(whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"m/whole.gguf": whole}
	var sums []string
	for i, p := range parts {
		files[gguf.SplitPath("m/split", i+1, 3)] = p
		sums = append(sums, strings.ToUpper(digest(p)))
	}
	for _, tc := range []struct {
		name, key string
		opts      Options
	}{
		{"whole", "m/whole.gguf", Options{}},
		{"whole in small reads", "m/whole.gguf", Options{HeaderBytes: 1000, ChunkBytes: 4096, SHA256: []string{digest(whole)}}},
		{"split", gguf.SplitPath("m/split", 1, 3), Options{}},
		{"split in small reads, digests", gguf.SplitPath("m/split", 1, 3), Options{HeaderBytes: 999, ChunkBytes: 5000, SHA256: sums}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &memStore{files: files}
			m, err := Load(context.Background(), s, tc.key, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := greedy(t, m); got != want {
				t.Errorf("generates %q, the file loaded directly %q", got, want)
			}
		})
	}
}

// TestLoadFailures: each failure is an *Error with its code, naming the
// file and the cause, before the engine sees a byte it cannot take.
func TestLoadFailures(t *testing.T) {
	whole := models.Default()
	parts, err := modelgen.Split(whole, 2)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := slices.Clone(whole)
	copy(corrupt[8:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // the tensor count
	files := map[string][]byte{
		"whole.gguf":            whole,
		"truncated.gguf":        whole[:len(whole)-100],
		"header.gguf":           whole[:2000],
		"corrupt.gguf":          corrupt,
		"text.gguf":             []byte("<html>not a model</html>"),
		"s-00001-of-00002.gguf": parts[0], // its second part is missing
	}
	for _, tc := range []struct {
		name, key, code string
		opts            Options
		says            []string
	}{
		{"missing", "nope.gguf", CodeNotFound, Options{}, []string{`"nope.gguf"`, "not found"}},
		{"missing part", "s-00001-of-00002.gguf", CodeNotFound, Options{}, []string{`"s-00002-of-00002.gguf"`}},
		{"later part named", "s-00002-of-00002.gguf", CodeMisconfigured, Options{}, []string{"part 2", "s-00001-of-00002.gguf"}},
		{"truncated", "truncated.gguf", CodeLoadFailed, Options{}, []string{`"truncated.gguf"`, "truncated"}},
		{"header only", "header.gguf", CodeLoadFailed, Options{}, []string{"truncated"}},
		{"corrupt", "corrupt.gguf", CodeLoadFailed, Options{}, []string{`"corrupt.gguf"`}},
		{"not GGUF", "text.gguf", CodeLoadFailed, Options{}, []string{`"text.gguf"`, "not a GGUF model"}},
		{"checksum", "whole.gguf", CodeChecksumMismatch, Options{SHA256: []string{strings.Repeat("ab", 32)}}, []string{digest(whole), strings.Repeat("ab", 32)}},
		{"digests per part", "whole.gguf", CodeMisconfigured, Options{SHA256: []string{"a", "b"}}, []string{"2 SHA-256 digests", "1 files"}},
		{"context", "whole.gguf", CodeMisconfigured, Options{ContextLength: 1 << 20}, []string{"1048576"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), &memStore{files: files}, tc.key, tc.opts)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Load: %v, want an *Error", err)
			}
			if e.Code() != tc.code {
				t.Errorf("code %s, want %s (%v)", e.Code(), tc.code, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
		})
	}
}

// TestTooLargeReadsNoWeights: a model whose header says it cannot fit is
// refused with every number named, having read only the header.
func TestTooLargeReadsNoWeights(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{Shape: modelgen.Shape{Dim: 256, HiddenDim: 768, Layers: 4, Heads: 4, KVHeads: 4, VocabSize: 512, ContextLength: 2048}, Type: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseHeader(data, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	s := &memStore{files: map[string][]byte{"big.gguf": data}}
	_, refused := Load(context.Background(), s, "big.gguf", Options{Budget: 8 << 20, HeaderBytes: 64 << 10})
	var e *Error
	if !errors.As(refused, &e) || e.Code() != CodeTooLarge {
		t.Fatalf("Load: %v, want a %s error", refused, CodeTooLarge)
	}
	if s.read > 2*f.HeaderSize+(64<<10) {
		t.Errorf("read %d bytes before refusing; the header is %d", s.read, f.HeaderSize)
	}
	h, err := engine.ReadHeader(f)
	if err != nil {
		t.Fatal(err)
	}
	m := engine.EstimateMemory(h.Config(), int64(len(data)), 2048, engine.KVF32) // KVAuto under 100M parameters
	for _, n := range []int64{m.Total, m.Weights, m.KVCache, m.Scratch, IsolateBytes, 8 << 20} {
		if s := mib(n); !strings.Contains(refused.Error(), s) {
			t.Errorf("%q does not name %s", refused, s)
		}
	}
	if !strings.Contains(refused.Error(), "2048 positions, F32") {
		t.Errorf("%q does not name the context", refused)
	}
}

func TestPartNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"models/m.gguf", []string{"models/m.gguf"}},
		{"m-00001-of-00002.gguf", []string{"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"}},
		{"https://h.example/a/m-00001-of-00002.gguf?sig=x-00001-of-00002.gguf", []string{
			"https://h.example/a/m-00001-of-00002.gguf?sig=x-00001-of-00002.gguf",
			"https://h.example/a/m-00002-of-00002.gguf?sig=x-00001-of-00002.gguf"}},
	} {
		got, err := partNames(tc.name)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("partNames(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for name, want := range map[string]string{
		"m-00002-of-00003.gguf": "m-00002-of-00003.gguf names part 2 of a split model: name its first part, m-00001-of-00003.gguf",
		"https://u:pw@h.example/a/m-00002-of-00003.gguf?token=secret": "https://h.example/a/m-00002-of-00003.gguf names part 2 of a split model: name its first part, https://h.example/a/m-00001-of-00003.gguf",
		"https://h.example/a/m-00001-of-00300.gguf?token=secret":      "https://h.example/a/m-00001-of-00300.gguf says the model is in 300 parts; at most 256 are read",
	} {
		if _, err := partNames(name); err == nil || err.Error() != want {
			t.Errorf("partNames(%q): %v; want the error %q (no query, no user information)", name, err, want)
		}
	}
	for name, want := range map[string]string{
		"models/bge-small-q8_0.gguf": "bge-small-q8_0", "a/m-00001-of-00003.gguf": "m",
		"https://h.example/x/tiny.gguf?token=1": "tiny",
	} {
		if got := ServedName(name); got != want {
			t.Errorf("ServedName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestRetryReusesMemory: a load that failed after the model's buffer was
// filled (a wrong digest) leaves that buffer to the collector, and the
// next load's buffer takes its memory: the heap does not hold two models'
// worth (in WebAssembly, memory that grows never shrinks).
func TestRetryReusesMemory(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{Shape: modelgen.Shape{Dim: 512, HiddenDim: 1024, Layers: 8, Heads: 8, KVHeads: 8, VocabSize: 512, ContextLength: 256}, Type: tensor.Q8_0, Fast: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	s := &memStore{files: map[string][]byte{"m.gguf": data}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = Load(context.Background(), s, "m.gguf", Options{SHA256: []string{strings.Repeat("0", 64)}})
	var e *Error
	if !errors.As(err, &e) || e.Code() != CodeChecksumMismatch {
		t.Fatalf("Load with a wrong digest: %v", err)
	}
	m, err := Load(context.Background(), s, "m.gguf", Options{SHA256: []string{digest(data)}})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapSys) - int64(before.HeapSys)
	t.Logf("model %d bytes; heap grew %d bytes over the two loads", len(data), grown)
	if grown > int64(len(data))*3/2 {
		t.Errorf("the heap grew %d bytes over two loads of a %d-byte model: the failed load's buffer was not reused", grown, len(data))
	}
	runtime.KeepAlive(m)
}

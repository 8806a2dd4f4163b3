package engine

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// benchModels are the shapes the benchmarks run: the embedded default model
// and random-weight models of llama2.c's stories15M shape in each of the
// benchmark's tensor types (internal/modelgen writes them).
func benchModels(b *testing.B) []struct {
	name  string
	model *Model
} {
	b.Helper()
	out := []struct {
		name  string
		model *Model
	}{{"stories260K", loadStories260K(b)}}
	specs, err := modelgen.BenchModels("stories15M")
	require.NoError(b, err)
	for _, s := range specs {
		m, err := Load(testmodel.GGUF(b, s.Spec), LoadOptions{})
		require.NoError(b, err)
		out = append(out, struct {
			name  string
			model *Model
		}{s.Name, m})
	}
	return out
}

// BenchmarkDecodeStep measures one forward pass with logits (one generated
// token) at a mid-context position.
func BenchmarkDecodeStep(b *testing.B) {
	for _, bm := range benchModels(b) {
		b.Run(bm.name, func(b *testing.B) { benchDecodeStep(b, bm.model) })
	}
}

// benchDecodeStep measures m's forward pass with logits at the middle of
// a session's context.
func benchDecodeStep(b *testing.B, m *Model) {
	s := newSession(b, m)
	half := s.context / 2
	for pos := range half {
		require.NoError(b, s.forward(1, pos, false))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.forward(1, half, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkGenerate128 measures a whole greedy generation of 128 tokens from
// BOS, sampling and streaming included.
func BenchmarkGenerate128(b *testing.B) {
	for _, bm := range benchModels(b) {
		b.Run(bm.name, func(b *testing.B) {
			s := newSession(b, bm.model)
			opts := GenerateOptions{MaxTokens: 128}
			b.ReportAllocs()
			b.ResetTimer()
			tokens := 0
			for i := 0; i < b.N; i++ {
				s.Reset()
				res, err := s.GenerateTokens(context.Background(), []int{1}, opts, func(Token) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				tokens += len(res.Tokens)
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

var scanShape = flag.String("scan-shape", "stories15M", "BenchmarkScanWeights: the shape of its random-weight models (stories15M, stories110M)")

// BenchmarkScanWeights measures what the engine chose not to do at load:
// scan every matrix for NaN and infinities (scanMatricesFinite), beside
// Load itself, the decoding of every layer matrix that a generation whose
// final hidden state is not finite does once to name the tensor (find),
// and a decode step at position 0, for the benchmark's models of the
// -scan-shape shape. docs/models.md quotes it for stories110M:
//
//	go test ./engine/ -run '^$' -bench ScanWeights -args -scan-shape=stories110M
func BenchmarkScanWeights(b *testing.B) {
	specs, err := modelgen.BenchModels(*scanShape)
	require.NoError(b, err)
	for _, sp := range specs {
		data := testmodel.GGUF(b, sp.Spec)
		m, err := Load(data, LoadOptions{})
		require.NoError(b, err)
		b.Run(sp.Name+"/load", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Load(data, LoadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sp.Name+"/scan", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if !scanMatricesFinite(m) {
					b.Fatal("a healthy model's scan found a non-finite value")
				}
			}
		})
		// What a generation that meets a non-finite value in its final
		// hidden state does once to name the tensor: decode every layer's
		// matrices (nonFiniteCause).
		b.Run(sp.Name+"/find", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				m.weights.nonFinite = nonFiniteScan{}
				if f, ok := m.nonFiniteCause(finiteGuard{what: guardFinalState}, 0); ok {
					b.Fatalf("a healthy model holds a non-finite value: %v", f)
				}
			}
		})
		b.Run(sp.Name+"/decode-step", func(b *testing.B) {
			s := newSession(b, m)
			for b.Loop() {
				if err := s.forward(1, 0, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// scanMatricesFinite reports whether every matrix of m is free of NaN and
// infinities, as a load-time scan would check: every element of the float
// types, the fp16 scales (and mins) of every quantized block, whose codes
// are integers. Tied matrices are scanned once.
func scanMatricesFinite(m *Model) bool {
	ok := true
	seen := map[*tensor.Matrix]bool{}
	m.arch.walk(m.config.Layers, func(t tensorRef) {
		if !t.isMatrix() || *t.matrixIn(m.weights) == nil || seen[*t.matrixIn(m.weights)] {
			return
		}
		mat := *t.matrixIn(m.weights)
		seen[mat] = true
		ok = ok && matrixFinite(mat)
	})
	return ok
}

// halfOffsets are, per quantized type, the block size in bytes and the
// offsets of its fp16 fields (ggml-common.h's block structs).
var halfOffsets = map[tensor.Type]struct {
	blockBytes int
	offsets    []int
}{
	tensor.Q4_0: {18, []int{0}}, tensor.Q4_1: {20, []int{0, 2}}, tensor.Q5_0: {22, []int{0}}, tensor.Q5_1: {24, []int{0, 2}},
	tensor.Q8_0: {34, []int{0}}, tensor.Q2_K: {84, []int{80, 82}}, tensor.Q3_K: {110, []int{108}},
	tensor.Q4_K: {144, []int{0, 2}}, tensor.Q5_K: {176, []int{0, 2}}, tensor.Q6_K: {210, []int{208}},
}

// matrixFinite reports whether mat holds no NaN and no infinity.
func matrixFinite(mat *tensor.Matrix) bool {
	switch mat.Type {
	case tensor.F32:
		return allFinite(tensor.Float32s(mat.Data))
	case tensor.F16, tensor.BF16:
		exp := uint16(0x7c00) // fp16: five exponent bits
		if mat.Type == tensor.BF16 {
			exp = 0x7f80
		}
		for i := 0; i+2 <= len(mat.Data); i += 2 {
			if binary.LittleEndian.Uint16(mat.Data[i:])&exp == exp {
				return false
			}
		}
		return true
	}
	h, ok := halfOffsets[mat.Type]
	if !ok {
		panic("matrixFinite: no layout for " + mat.Type.String())
	}
	for b := 0; b+h.blockBytes <= len(mat.Data); b += h.blockBytes {
		for _, o := range h.offsets {
			if binary.LittleEndian.Uint16(mat.Data[b+o:])&0x7c00 == 0x7c00 {
				return false
			}
		}
	}
	return true
}

var promptBench = modelgen.PromptBenchFlags("BenchmarkPromptBlock")

// BenchmarkPromptBlock measures prompt evaluation (prefill) with blocks of
// 1 (token by token, as a decode step evaluates), 8, 16, 32 and 64 tokens, on a
// random-weight model of -prompt-shape in -prompt-type, and reports prompt
// tokens per second. For TinyLlama-1.1B's shape:
//
//	go test ./engine/ -run '^$' -bench PromptBlock -benchtime 2x -args -prompt-shape=tinyllama
func BenchmarkPromptBlock(b *testing.B) {
	spec, prompt, err := promptBench()
	require.NoError(b, err)
	m, err := Load(testmodel.GGUF(b, spec), LoadOptions{})
	require.NoError(b, err)
	for _, block := range []int{1, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("block-%d", block), func(b *testing.B) {
			s, err := m.NewSession(SessionOptions{PromptBlock: block, ContextLength: len(prompt) + 1})
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				s.Reset()
				if _, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 1}, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "prompt-tokens/s")
		})
	}
}

// BenchmarkAttention measures attention for one token over -attention-ctx
// cached positions in every layer, from an F32 and an F16 KV cache,
// reporting milliseconds a token: in TinyLlama-1.1B's shape (22 layers, 32
// query heads of 64 sharing 4 key/value heads: 88 and 44 MiB of cache at
// 2048 positions) and stories110M's (12 layers of 12 heads of 64, one
// key/value head each), each larger than any cache of the CPU, as in a real
// decoding step.
func BenchmarkAttention(b *testing.B) {
	positions := *attentionContext
	for _, shape := range []struct {
		name string
		c    Config
	}{
		{"tinyllama", Config{Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4}},
		{"stories110M", Config{Dim: 768, Layers: 12, Heads: 12, KVHeads: 12}},
	} {
		c := shape.c
		rng := rand.New(rand.NewPCG(5, 5))
		for _, kv := range []KVType{KVF32, KVF16} {
			b.Run(shape.name+"/"+kv.String(), func(b *testing.B) {
				s := &Session{
					model: &Model{config: c},
					kv:    newKVCache(c, kv, c.KVDim(), positions),
					state: &runState{attnScratch: attnScratch{scores: make([]float32, positions)}},
				}
				s.state.allocF16(c, c.Dim, c.KVDim(), positions, 1)
				k, v := make([]float32, c.KVDim()), make([]float32, c.KVDim())
				for l := range c.Layers {
					for pos := range positions {
						for i := range k {
							k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
						}
						s.kv.store(l, pos, k, v)
					}
				}
				q, out := make([]float32, c.Dim), make([]float32, c.Dim)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					for l := range c.Layers {
						s.attention(out, q, l, positions-1)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/token")
			})
		}
	}
}

var attentionContext = flag.Int("attention-ctx", 1024, "BenchmarkAttention: the cached positions attended over")

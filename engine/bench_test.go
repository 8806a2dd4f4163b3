package engine

import (
	"context"
	"testing"
)

// benchModels are the shapes the benchmarks run: the embedded default model
// and a random-weight model of llama2.c's stories15M shape.
func benchModels(b *testing.B) []struct {
	name  string
	model *Model
} {
	b.Helper()
	m15, err := LoadLlama2C(llama2cCheckpoint(stories15MShape, true, 15, 0.02), syntheticTokenizerBin(stories15MShape.VocabSize))
	if err != nil {
		b.Fatal(err)
	}
	return []struct {
		name  string
		model *Model
	}{
		{"stories260K", loadStories260K(b)},
		{"stories15M-shape", m15},
	}
}

// BenchmarkDecodeStep measures one forward pass with logits (one generated
// token) at a mid-context position.
func BenchmarkDecodeStep(b *testing.B) {
	for _, bm := range benchModels(b) {
		b.Run(bm.name, func(b *testing.B) {
			s := newSession(b, bm.model)
			half := s.context / 2
			for pos := range half {
				s.forward(1, pos, false)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.forward(1, half, true)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
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

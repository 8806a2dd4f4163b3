package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/modelgen"
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
		m, err := Load(buildGGUF(b, s.Spec), LoadOptions{})
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
		b.Run(bm.name, func(b *testing.B) {
			s := newSession(b, bm.model)
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

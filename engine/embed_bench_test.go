package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// BenchmarkEmbed measures Session.Embed as the hosts call it (the
// embedding benchmark of tools/benchrun -mode embed, natively): random-weight models
// of the MiniLM-L6 and BGE-base shapes in F16 and Q8_0, texts of 32 and
// 256 tokens ([CLS] and [SEP] included: modelgen.EmbedTexts), one and
// sixteen to a call, on one thread and two. Each model is built when its
// sub-benchmark runs (-bench 'Embed/minilm' builds MiniLM's only).
//
//	go test -run '^$' -bench 'Embed/minilm-l6-F16/32x16/t1' -cpuprofile cpu.out ./engine/
func BenchmarkEmbed(b *testing.B) {
	for _, shape := range []string{"minilm-l6", "bge-base"} {
		for _, typ := range []tensor.Type{tensor.F16, tensor.Q8_0} {
			b.Run(shape+"-"+typ.String(), func(b *testing.B) {
				sh, err := modelgen.ShapeByName(shape)
				require.NoError(b, err)
				m, err := Load(testmodel.GGUF(b, modelgen.Spec{Arch: modelgen.ArchOf(shape), Shape: sh, Type: typ, Seed: 1}), LoadOptions{})
				require.NoError(b, err)
				for _, spec := range [][2]int{{32, 1}, {32, 16}, {256, 1}, {256, 16}} {
					tokens, batch := spec[0], spec[1]
					texts, err := modelgen.EmbedTexts(tokens, batch)
					require.NoError(b, err)
					for _, threads := range []int{1, 2} {
						b.Run(fmt.Sprintf("%dx%d/t%d", tokens, batch, threads), func(b *testing.B) {
							s, err := m.NewSession(SessionOptions{Threads: threads})
							require.NoError(b, err)
							embs, err := s.Embed(context.Background(), texts, EmbedOptions{}) // and warms up
							require.NoError(b, err)
							require.Equal(b, tokens, embs[0].Tokens, "the texts' length, [CLS] and [SEP] included")
							for b.Loop() {
								if _, err := s.Embed(context.Background(), texts, EmbedOptions{}); err != nil {
									b.Fatal(err)
								}
							}
							sec := b.Elapsed().Seconds()
							b.ReportMetric(float64(batch*b.N)/sec, "embeddings/s")
							b.ReportMetric(float64(tokens*batch*b.N)/sec, "tokens/s")
						})
					}
				}
			})
		}
	}
}

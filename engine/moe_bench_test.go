package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// moeBenchModels are a mixture of experts of a small model's proportions
// (Qwen3-30B-A3B's: 8 of 128 experts, here 8 of 64, each a third as wide
// as the residual stream) and, for comparison, a dense qwen3 model whose
// feed-forward is as wide as the chosen experts together: per token both
// read about the same bytes, the MoE file being many times larger.
func moeBenchModels(b *testing.B) []struct {
	name  string
	model *Model
} {
	b.Helper()
	sh := modelgen.Shape{Dim: 512, HiddenDim: 1536, Layers: 4, Heads: 8, KVHeads: 2, HeadDim: 64, VocabSize: 4096, ContextLength: 512}
	var out []struct {
		name  string
		model *Model
	}
	for _, typ := range []tensor.Type{tensor.Q8_0, tensor.Q4_K} {
		moe := moeSpec(sh, 64, 8, 256, typ, 31)
		dense := modelgen.Spec{Arch: "qwen3", Shape: sh, Type: typ, Seed: 31, Std: 0.1, SeparateOutput: true}
		dense.HiddenDim = 8 * 256
		for _, sp := range []modelgen.Spec{moe, dense} {
			m, err := Load(testmodel.GGUF(b, sp), LoadOptions{})
			require.NoError(b, err)
			out = append(out, struct {
				name  string
				model *Model
			}{fmt.Sprintf("%s-%v", sp.Arch, typ), m})
		}
	}
	return out
}

// tokenBytes is the bytes of weights one decoding step of m reads: every
// matrix of the attention and the classifier, and for a mixture of
// experts the router and used experts' gate, up and down of each layer
// (the experts' views are of equal size), or the dense feed-forward.
func tokenBytes(m *Model) int64 {
	w := m.weights
	n := int64(len(w.Output.Data))
	for l := range w.Layers {
		lw := &w.Layers[l]
		for _, mat := range []*tensor.Matrix{lw.Wq, lw.Wk, lw.Wv, lw.Wo, lw.WGate, lw.WUp, lw.WDown, lw.Router} {
			if mat != nil {
				n += int64(len(mat.Data))
			}
		}
		if len(lw.experts) > 0 {
			e := lw.experts[0]
			n += int64(m.config.Layer(l).MoE.Used) * int64(len(e.gate.Data)+len(e.up.Data)+len(e.down.Data))
		}
	}
	return n
}

// BenchmarkMoEDecodeStep measures one forward pass with logits at a
// mid-context position of a mixture of experts and of a dense model that
// reads as many bytes per token, each reporting the bytes of weights a
// token reads (weight-bytes/token) beside the file's (file-bytes): a
// token reads only its chosen experts.
func BenchmarkMoEDecodeStep(b *testing.B) {
	for _, bm := range moeBenchModels(b) {
		b.Run(bm.name, func(b *testing.B) {
			benchDecodeStep(b, bm.model)
			b.ReportMetric(float64(tokenBytes(bm.model)), "weight-bytes/token")
			b.ReportMetric(float64(bm.model.FileSize()), "file-bytes")
		})
	}
}

// BenchmarkMoEPromptBlock measures a 32-token prompt of the mixture of
// experts evaluated token by token and as one block grouped by expert
// (each chosen expert's matrices read once for the block's tokens routed
// to it).
func BenchmarkMoEPromptBlock(b *testing.B) {
	prompt := make([]int, 32)
	for i := range prompt {
		prompt[i] = 3 + (i*37)%4000
	}
	for _, bm := range moeBenchModels(b) {
		if bm.model.Architecture() != "qwen3moe" {
			continue
		}
		for _, block := range []int{1, 32} {
			b.Run(fmt.Sprintf("%s/block=%d", bm.name, block), func(b *testing.B) {
				s, err := bm.model.NewSession(SessionOptions{PromptBlock: block})
				require.NoError(b, err)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for at := 0; at < len(prompt); at += block {
						if err := s.forwardBlock(prompt[at:at+block], at, at+block == len(prompt)); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}

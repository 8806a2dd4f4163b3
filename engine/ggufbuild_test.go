package engine

import (
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// specOf is the modelgen spec of a random-weight model of family arch with
// c's hyper-parameters, F32 weights drawn from N(0, std²) with seed.
func specOf(arch string, c Config, seed uint64, std float64) modelgen.Spec {
	return modelgen.Spec{
		Arch: arch,
		Shape: modelgen.Shape{
			Dim: c.Dim, HiddenDim: c.HiddenDim, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
			VocabSize: c.VocabSize, ContextLength: c.ContextLength,
		},
		RopeTheta: c.RopeTheta, NormEps: c.NormEps, Type: tensor.F32, Seed: seed, Std: std,
	}
}

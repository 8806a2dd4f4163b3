package modelgen_test

import (
	"errors"
	"testing"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// FuzzBuild: Build never panics, and whatever it accepts the engine loads
// with the spec's shape; what it refuses is an ErrSpec. Sizes are kept
// small so each input builds in milliseconds. Seeds: testdata/fuzz/FuzzBuild.
func FuzzBuild(f *testing.F) {
	f.Fuzz(func(t *testing.T, dim, hidden, layers, heads, kvHeads, vocab, ctx int, typ uint32, separate bool, arch string) {
		if dim*vocab > 1<<20 || dim*hidden > 1<<20 || layers > 4 || ctx > 1<<12 || dim*vocab < 0 || dim*hidden < 0 {
			t.Skip("too large to build quickly")
		}
		sp := modelgen.Spec{
			Arch:  arch,
			Shape: modelgen.Shape{Dim: dim, HiddenDim: hidden, Layers: layers, Heads: heads, KVHeads: kvHeads, VocabSize: vocab, ContextLength: ctx},
			Type:  tensor.Type(typ), SeparateOutput: separate, Seed: 1,
		}
		data, err := modelgen.Build(sp)
		if err != nil {
			if !errors.Is(err, modelgen.ErrSpec) {
				t.Fatalf("error is not an ErrSpec: %v", err)
			}
			return
		}
		m, err := engine.Load(data, engine.LoadOptions{})
		if err != nil {
			t.Fatalf("Build accepted %+v, the engine does not: %v", sp, err)
		}
		c := m.Config()
		if c.Dim != dim || c.HiddenDim != hidden || c.Layers != layers || c.Heads != heads || c.KVHeads != kvHeads || c.VocabSize != vocab || c.ContextLength != ctx {
			t.Fatalf("loaded %+v from %+v", c, sp)
		}
	})
}

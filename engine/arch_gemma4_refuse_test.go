//go:build !js

package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// TestGemma4Refusals: what the engine does not run of gemma4 is refused
// with the reason, and files llama.cpp refuses are refused.
func TestGemma4Refusals(t *testing.T) {
	data := loadedWholeOnCPU(t, gemma4Spec(tensor.F32), "layer 0 runs on the CPU only")

	// A per-tensor scale of an NVFP4 or FP8 file, which llama.cpp
	// multiplies the product by, is refused by name.
	scaled := rebuiltGGUF(t, data, func(b *gguf.Builder, ti gguf.TensorInfo) bool {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
		if ti.Name == "blk.2.attn_q.weight" {
			b.AddTensor("blk.2.attn_q.scale", tensor.F32, []uint64{1}, []byte{0, 0, 0x80, 0x3f}) // float32 1
		}
		return true
	})
	_, err := Load(scaled, LoadOptions{})
	assert.ErrorIs(t, err, ErrUnsupported)
	assert.ErrorContains(t, err, "blk.2.attn_q.scale")

	for _, tt := range []struct {
		name string
		set  map[string]gguf.Value
		drop string
		want error
	}{
		{"fewer than 2 layers with caches of their own", map[string]gguf.Value{"gemma4.attention.shared_kv_layers": gguf.ValueOf(uint32(8))}, "", ErrFormat},
		{"a shared layer reading a layer of another kind", map[string]gguf.Value{"gemma4.attention.shared_kv_layers": gguf.ValueOf(uint32(4))}, "", ErrUnsupported},
		{"no per-layer embedding length", nil, "gemma4.embedding_length_per_layer_input", ErrFormat},
		{"a sliding pattern of the wrong length", map[string]gguf.Value{"gemma4.attention.sliding_window_pattern": gguf.ArrayOf([]bool{true, false})}, "", ErrFormat},
		{"partial rotation of the sliding layers", map[string]gguf.Value{"gemma4.rope.dimension_count_swa": gguf.ValueOf(uint32(8))}, "", ErrUnsupported},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(withKeys(t, data, tt.set, tt.drop), LoadOptions{})
			assert.ErrorIs(t, err, tt.want)
		})
	}
}

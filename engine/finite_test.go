package engine

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

var (
	nan    = float32(math.NaN())
	posInf = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
)

// rebuiltGGUF writes data again with the GGUF builder: its metadata, and
// each tensor as it was unless add, given the builder, adds its own
// version and returns true.
func rebuiltGGUF(t *testing.T, data []byte, add func(b *gguf.Builder, ti gguf.TensorInfo) bool) []byte {
	t.Helper()
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors() {
		if !add(b, ti) {
			b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
		}
	}
	out, err := b.Bytes()
	require.NoError(t, err)
	return out
}

// editedGGUF is data with tensor name's bytes copied and changed by edit.
func editedGGUF(t *testing.T, data []byte, name string, edit func(ti gguf.TensorInfo, b []byte)) []byte {
	t.Helper()
	found := false
	out := rebuiltGGUF(t, data, func(b *gguf.Builder, ti gguf.TensorInfo) bool {
		if ti.Name != name {
			return false
		}
		d := append([]byte(nil), ti.Data...)
		edit(ti, d)
		b.AddTensor(ti.Name, ti.Type, ti.Dims, d)
		found = true
		return true
	})
	require.True(t, found, "no tensor %s", name)
	return out
}

// half is the fp16 bits of v, NaN or an infinity.
func half(v float32) uint16 {
	switch {
	case v != v:
		return 0x7e00
	case math.IsInf(float64(v), 1):
		return 0x7c00
	case math.IsInf(float64(v), -1):
		return 0xfc00
	}
	panic("half: only NaN and the infinities")
}

// setValue sets the element (row, col) of an F32 or F16 tensor to v; for a
// quantized tensor it sets the fp16 at offset within the block holding
// that element (offset 0: the scale d of every type here; 2: Q4_K's dmin).
func setValue(row, col, offset int, v float32) func(ti gguf.TensorInfo, b []byte) {
	return func(ti gguf.TensorInfo, b []byte) {
		rowBytes, err := tensor.RowBytes(ti.Type, int(ti.Dims[0]))
		if err != nil {
			panic(err)
		}
		r := b[row*rowBytes : (row+1)*rowBytes]
		switch ti.Type {
		case tensor.F32:
			binary.LittleEndian.PutUint32(r[4*col:], math.Float32bits(v))
		case tensor.F16:
			binary.LittleEndian.PutUint16(r[2*col:], half(v))
		default:
			bs, err := tensor.BlockSize(ti.Type)
			if err != nil {
				panic(err)
			}
			blockBytes := rowBytes / (int(ti.Dims[0]) / bs)
			binary.LittleEndian.PutUint16(r[col/bs*blockBytes+offset:], half(v))
		}
	}
}

// finiteSpec is a tiny random model of family arch whose matrices are
// stored as typ; its output is tied to the token embedding if tied.
func finiteSpec(arch string, typ tensor.Type, tied bool) modelgen.Spec {
	sp := specOf(arch, tinyShape, 3, 0.1)
	sp.Type, sp.SeparateOutput = typ, !tied
	return sp
}

// TestNonFiniteVectorsFailLoad: a NaN or an infinity in a norm, a bias or
// the rope factors, stored as F32 or F16, fails the load, naming the tensor.
func TestNonFiniteVectorsFailLoad(t *testing.T) {
	llama := buildGGUF(t, finiteSpec("llama", tensor.F32, false))
	qwen2 := buildGGUF(t, finiteSpec("qwen2", tensor.Q8_0, false))
	withFactors := finiteSpec("llama", tensor.F32, true)
	withFactors.RopeFreqFactors = []float32{1, 1, 2, 2}
	factors := buildGGUF(t, withFactors)
	// blk.1.attn_norm.weight stored as F16, as some converters write
	// norms, with v at element 5.
	f16Norm := func(v float32) []byte {
		return rebuiltGGUF(t, llama, func(b *gguf.Builder, ti gguf.TensorInfo) bool {
			if ti.Name != "blk.1.attn_norm.weight" {
				return false
			}
			norm := tensor.Float32s(ti.Data)
			data := make([]byte, 2*len(norm))
			require.NoError(t, tensor.Quantize(tensor.F16, data, norm))
			binary.LittleEndian.PutUint16(data[2*5:], half(v))
			b.AddTensor(ti.Name, tensor.F16, ti.Dims, data)
			return true
		})
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"NaN attention norm", editedGGUF(t, llama, "blk.0.attn_norm.weight", setValue(0, 3, 0, nan)),
			"tensor blk.0.attn_norm.weight holds NaN at element 3"},
		{"infinite output norm", editedGGUF(t, llama, "output_norm.weight", setValue(0, 63, 0, posInf)),
			"tensor output_norm.weight holds +Inf at element 63"},
		{"infinite feed-forward norm", editedGGUF(t, llama, "blk.1.ffn_norm.weight", setValue(0, 0, 0, negInf)),
			"tensor blk.1.ffn_norm.weight holds -Inf at element 0"},
		{"infinite bias", editedGGUF(t, qwen2, "blk.1.attn_v.bias", setValue(0, 2, 0, negInf)),
			"tensor blk.1.attn_v.bias holds -Inf at element 2"},
		{"NaN rope factor", editedGGUF(t, factors, "rope_freqs.weight", setValue(0, 1, 0, nan)),
			"tensor rope_freqs.weight holds NaN at element 1"},
		{"F16 norm with an infinity", f16Norm(posInf), "tensor blk.1.attn_norm.weight holds +Inf at element 5"},
		{"F16 norm with a NaN", f16Norm(nan), "tensor blk.1.attn_norm.weight holds NaN at element 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load(tt.data, LoadOptions{})
			require.Error(t, err)
			assert.Nil(t, m)
			assert.ErrorIs(t, err, ErrFormat)
			assert.Equal(t, CodeInvalidModel, CodeOf(err))
			assert.Contains(t, err.Error(), "the model's weights are not finite: "+tt.want)
		})
	}

	// A llama2.c checkpoint: its vectors are checked the same way (and
	// named as the engine names them).
	c := Config{Dim: 16, HiddenDim: 24, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 8}
	ckpt := llama2cCheckpoint(c, true, 1, 0.1)
	dim, hid, kv, L := c.Dim, c.HiddenDim, c.KVDim(), c.Layers
	finalNorm := 28 + 4*(c.VocabSize*dim+L*(2*dim+2*dim*dim+2*dim*kv+3*dim*hid))
	binary.LittleEndian.PutUint32(ckpt[finalNorm+4*7:], math.Float32bits(nan))
	_, err := LoadLlama2C(ckpt, syntheticTokenizerBin(300))
	require.Error(t, err)
	assert.Equal(t, CodeInvalidModel, CodeOf(err))
	assert.Contains(t, err.Error(), "tensor output_norm.weight holds NaN at element 7")
}

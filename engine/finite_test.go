package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

var (
	nan    = float32(math.NaN())
	posInf = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
)

// TestAllFinite checks allFinite against firstNonFinite, its plain
// reference, with NaN and both infinities at every position of vectors of
// every length up to 9 (so through each of the four sums and the tail),
// among values that are finite but extreme.
func TestAllFinite(t *testing.T) {
	extreme := []float32{0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 1, -3.5, 65504}
	for n := range 10 {
		x := make([]float32, n)
		for i := range x {
			x[i] = extreme[i%len(extreme)]
		}
		require.True(t, allFinite(x), "%v", x)
		require.Equal(t, -1, firstNonFinite(x))
		for i := range x {
			for _, bad := range []float32{nan, posInf, negInf} {
				y := append([]float32(nil), x...)
				y[i] = bad
				assert.False(t, allFinite(y), "%v", y)
				assert.Equal(t, i, firstNonFinite(y), "%v", y)
			}
		}
	}
}

// FuzzAllFinite: for any float32 values, allFinite agrees with its reference.
func FuzzAllFinite(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f})                                     // +Inf
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0xc0, 0xff}) // a subnormal, MaxFloat32, a NaN
	f.Fuzz(func(t *testing.T, b []byte) {
		x := make([]float32, len(b)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		require.Equal(t, firstNonFinite(x) < 0, allFinite(x), "%v", x)
	})
}

// BenchmarkAllFinite measures the run-time check on a vector of
// stories15M's and stories110M's vocabulary (32000 logits).
func BenchmarkAllFinite(b *testing.B) {
	x := make([]float32, 32000)
	for i := range x {
		x[i] = float32(i%17) - 8
	}
	b.SetBytes(4 * int64(len(x)))
	for b.Loop() {
		if !allFinite(x) {
			b.Fatal("finite values")
		}
	}
}

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
	llama := testmodel.GGUF(t, finiteSpec("llama", tensor.F32, false))
	qwen2 := testmodel.GGUF(t, finiteSpec("qwen2", tensor.Q8_0, false))
	withFactors := finiteSpec("llama", tensor.F32, true)
	withFactors.RopeFreqFactors = []float32{1, 1, 2, 2}
	factors := testmodel.GGUF(t, withFactors)
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

// TestNonFiniteWeightsFailGeneration: a NaN or an infinity in a matrix —
// an F32 or F16 element, the scale (or the min) of a quantized block — is
// not looked for at load, but the generation that meets it fails with
// invalid_model, naming the tensor, the row and the column that hold it
// and saying where it showed first. Inside a layer that is the
// input of the next product, because a quantized product re-encodes its
// input and would turn a NaN into a finite code; a matrix whose values
// reach the residual stream shows in the final hidden state (computed
// with the logits: at the last prompt position), the classifier in the
// logits.
func TestNonFiniteWeightsFailGeneration(t *testing.T) {
	k256 := tinyShape // dimensions of whole K-quant blocks
	k256.Dim, k256.HiddenDim, k256.Heads, k256.KVHeads = 256, 512, 4, 2
	q4k := specOf("llama", k256, 3, 0.1)
	q4k.Type, q4k.SeparateOutput = tensor.Q4_K, true
	models := map[string][]byte{}
	model := func(sp modelgen.Spec) []byte {
		key := sp.Arch + sp.Type.String() + map[bool]string{true: " separate"}[sp.SeparateOutput] + itoa(sp.Dim)
		if models[key] == nil {
			models[key] = testmodel.GGUF(t, sp)
		}
		return models[key]
	}
	prompt := []int{1, 5, 42}
	tests := []struct {
		name   string
		spec   modelgen.Spec
		tensor string
		// the element set to value (row, col), or for a quantized tensor
		// the fp16 at offset in the block holding it (setValue)
		row, col, offset int
		value            float32
		want             string // where it shows first
	}{
		{"F32 classifier NaN", finiteSpec("llama", tensor.F32, false), "output.weight", 7, 3, 0, nan,
			"NaN or infinity in the logits at position 2"},
		{"F16 classifier infinity", finiteSpec("llama", tensor.F16, false), "output.weight", 299, 63, 0, posInf,
			"NaN or infinity in the logits at position 2"},
		{"Q8_0 classifier scale NaN", finiteSpec("llama", tensor.Q8_0, false), "output.weight", 0, 40, 0, nan,
			"NaN or infinity in the logits at position 2"},
		{"Q8_0 classifier scale -Inf", finiteSpec("qwen2", tensor.Q8_0, false), "output.weight", 150, 0, 0, negInf,
			"NaN or infinity in the logits at position 2"},
		{"Q4_K classifier min NaN", q4k, "output.weight", 3, 0, 2, nan,
			"NaN or infinity in the logits at position 2"},
		{"Q8_0 query scale NaN", finiteSpec("llama", tensor.Q8_0, false), "blk.0.attn_q.weight", 10, 33, 0, nan,
			"NaN or infinity in layer 0's attention output at position 0"},
		{"Q4_K key scale +Inf", q4k, "blk.1.attn_k.weight", 0, 0, 0, posInf,
			"NaN or infinity in layer 1's attention output at position 0"},
		{"F16 value infinity", finiteSpec("llama", tensor.F16, true), "blk.1.attn_v.weight", 5, 5, 0, negInf,
			"NaN or infinity in layer 1's attention output at position 0"},
		{"Q4_0 up scale +Inf", finiteSpec("llama", tensor.Q4_0, true), "blk.0.ffn_up.weight", 95, 63, 0, posInf,
			"NaN or infinity in layer 0's feed-forward activations at position 0"},
		{"Q8_0 gate scale NaN", finiteSpec("llama", tensor.Q8_0, true), "blk.1.ffn_gate.weight", 0, 0, 0, nan,
			"NaN or infinity in layer 1's feed-forward activations at position 0"},
		{"F32 attention output NaN", finiteSpec("llama", tensor.F32, true), "blk.1.attn_output.weight", 1, 1, 0, nan,
			"NaN or infinity in layer 1's feed-forward activations at position 0"},
		// Quantized gate and up products turn the NaN normalised state into
		// zeros; the residual stream keeps it.
		{"Q8_0 attention output scale NaN", finiteSpec("llama", tensor.Q8_0, true), "blk.1.attn_output.weight", 1, 1, 0, nan,
			"NaN or infinity in the final hidden state at position 2"},
		// The same in layer 0: layer 1's quantized products hide it too;
		// the first layer's matrix is named.
		{"Q8_0 first attention output scale NaN", finiteSpec("llama", tensor.Q8_0, true), "blk.0.attn_output.weight", 4, 40, 0, nan,
			"NaN or infinity in the final hidden state at position 2"},
		{"Q4_0 last down projection scale NaN", finiteSpec("llama", tensor.Q4_0, false), "blk.1.ffn_down.weight", 9, 0, 0, nan,
			"NaN or infinity in the final hidden state at position 2"},
		{"F32 infinite embedding row, tied", finiteSpec("llama", tensor.F32, true), "token_embd.weight", 42, 0, 0, posInf,
			"NaN or infinity in the embedding row of token 42 at position 2"},
		// A row of the tied classifier no prompt token reads.
		{"F16 tied classifier NaN", finiteSpec("llama", tensor.F16, true), "token_embd.weight", 7, 9, 0, nan,
			"NaN or infinity in the logits at position 2"},
		{"Q8_0 embedding row scale NaN", finiteSpec("llama", tensor.Q8_0, false), "token_embd.weight", 5, 63, 0, nan,
			"NaN or infinity in the embedding row of token 5 at position 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load(editedGGUF(t, model(tt.spec), tt.tensor, setValue(tt.row, tt.col, tt.offset, tt.value)), LoadOptions{})
			require.NoError(t, err, "matrices are not scanned at load")
			assert.False(t, scanMatricesFinite(m), "the scan BenchmarkScanWeights measures finds it")
			// The value named is the decoded weight: an F32 or F16 one is
			// the value set; a quantized block's scale of NaN makes every
			// weight of the block NaN, one of ±Inf each weight NaN or ±Inf
			// (as its code is 0 or not), and the first column named is
			// the block's first.
			value, col := regexp.QuoteMeta(fmt.Sprint(tt.value)), tt.col
			if bs, err := tensor.BlockSize(tt.spec.Type); err == nil && bs > 1 {
				col = tt.col / bs * bs
				if !math.IsNaN(float64(tt.value)) {
					value = `(NaN|\+Inf|-Inf)`
				}
			}
			s := newSession(t, m)
			for range 2 { // the same model fails the same way again, cleanly
				res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 4}, nil)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrFormat)
				assert.Equal(t, CodeInvalidModel, CodeOf(err))
				assert.Regexp(t, "the model's weights are not finite: "+regexp.QuoteMeta("tensor "+tt.tensor+" holds ")+value+
					regexp.QuoteMeta(fmt.Sprintf(" at row %d, column %d; it showed first as %s", tt.row, col, tt.want)), err.Error())
				assert.Empty(t, res.Tokens)
			}
		})
	}
}

// TestNonFiniteEmbeddingStopsGeneration: a generated token whose embedding
// row is not finite ends the generation with invalid_model after it was
// streamed; the session stays usable for prompts that avoid it.
func TestNonFiniteEmbeddingStopsGeneration(t *testing.T) {
	good := testmodel.GGUF(t, finiteSpec("llama", tensor.Q8_0, false))
	healthy, err := Load(slices.Clone(good), LoadOptions{}) // a copy: its session packs the bytes (with SIMD)
	require.NoError(t, err)
	prompt := []int{1, 5}
	want, err := newSession(t, healthy).GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	next := want.Tokens[0] // greedy's first token

	m, err := Load(editedGGUF(t, good, "token_embd.weight", setValue(next, 0, 0, nan)), LoadOptions{})
	require.NoError(t, err)
	s := newSession(t, m)
	var streamed []int
	res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 8}, func(tok Token) error {
		streamed = append(streamed, tok.ID)
		return nil
	})
	require.Error(t, err)
	assert.Equal(t, CodeInvalidModel, CodeOf(err))
	assert.Contains(t, err.Error(), "NaN or infinity in the embedding row of token "+itoa(next)+" at position 2")
	assert.Equal(t, []int{next}, res.Tokens)
	assert.Equal(t, []int{next}, streamed)
	assert.False(t, errors.Is(err, context.Canceled))

	again, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err, "the prompt's rows are finite")
	assert.Equal(t, want.Tokens, again.Tokens)
}

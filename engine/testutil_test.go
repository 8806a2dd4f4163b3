package engine

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func loadStories260K(t testing.TB) *Model {
	t.Helper()
	m, err := LoadLlama2C(testmodel.Stories260K())
	require.NoError(t, err)
	return m
}

// newSession is a session with an F32 KV cache, as llama2.c keeps its keys
// and values and llama.cpp's F32 golden runs kept theirs.
func newSession(t testing.TB, m *Model) *Session {
	return newSessionKV(t, m, KVF32)
}

// newSessionKV is a session with a kv cache.
func newSessionKV(t testing.TB, m *Model, kv KVType) *Session {
	t.Helper()
	s, err := m.NewSession(SessionOptions{KVType: kv})
	require.NoError(t, err)
	return s
}

// llama2cCheckpoint builds a legacy llama2.c checkpoint with weights drawn
// from N(0, std²) (norm weights 1), for benchmarks and shape tests.
func llama2cCheckpoint(c Config, shared bool, seed uint64, std float64) []byte {
	vocab := int32(c.VocabSize)
	if !shared {
		vocab = -vocab
	}
	header := []int32{int32(c.Dim), int32(c.HiddenDim), int32(c.Layers), int32(c.Heads), int32(c.KVHeads), vocab, int32(c.ContextLength)}
	dim, hid, kv, L := c.Dim, c.HiddenDim, c.KVDim(), c.Layers
	type part struct {
		n    int
		norm bool
	}
	parts := []part{
		{c.VocabSize * dim, false}, {L * dim, true}, {L * dim * dim, false}, {L * dim * kv, false},
		{L * dim * kv, false}, {L * dim * dim, false}, {L * dim, true}, {L * hid * dim, false},
		{L * dim * hid, false}, {L * hid * dim, false}, {dim, true}, {c.ContextLength * c.HeadDim(), false},
	}
	if !shared {
		parts = append(parts, part{c.VocabSize * dim, false})
	}
	n := 0
	for _, p := range parts {
		n += p.n
	}
	out := make([]byte, 28, 28+4*n)
	for i, h := range header {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(h))
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, p := range parts {
		for range p.n {
			v := float32(1)
			if !p.norm {
				v = float32(rng.NormFloat64() * std)
			}
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// syntheticTokenizerBin builds a llama2.c tokenizer.bin with n tokens: the
// three control tokens, the 256 byte tokens, then "t<i>" pieces.
func syntheticTokenizerBin(n int) []byte {
	piece := func(i int) string {
		switch {
		case i == 0:
			return "<unk>"
		case i == 1:
			return "\n<s>\n"
		case i == 2:
			return "\n</s>\n"
		case i < 259:
			return string([]byte{'<', '0', 'x', "0123456789ABCDEF"[(i-3)>>4], "0123456789ABCDEF"[(i-3)&15], '>'})
		}
		return " t" + itoa(i)
	}
	out := binary.LittleEndian.AppendUint32(nil, 16)
	for i := range n {
		p := piece(i)
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(-i)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// rebuilt is the GGUF file data with its metadata changed by kvs (a nil
// value deletes the key; uint32 and bool values are set), each tensor as edit
// returns it (false: left out), and the tensors extra.
func rebuilt(t *testing.T, data []byte, kvs map[string]any, edit func(gguf.TensorInfo) (gguf.TensorInfo, bool), extra ...gguf.TensorInfo) []byte {
	t.Helper()
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		if v, ok := kvs[kv.Key]; !ok || v != nil {
			b.Set(kv.Key, kv.Value)
		}
	}
	for k, v := range kvs {
		switch v := v.(type) {
		case uint32:
			b.Set(k, gguf.ValueOf(v))
		case bool:
			b.Set(k, gguf.ValueOf(v))
		}
	}
	for _, ti := range f.Tensors() {
		if edit != nil {
			var keep bool
			if ti, keep = edit(ti); !keep {
				continue
			}
		}
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	for _, ti := range extra {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	out, err := b.Bytes()
	require.NoError(t, err)
	return out
}

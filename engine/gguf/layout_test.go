package gguf_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// headerOf parses data's header from growing prefixes, as a host reading
// over the network does.
func headerOf(t testing.TB, data []byte) *gguf.File {
	t.Helper()
	for n := 16; ; n *= 2 {
		f, err := gguf.ParseHeader(data[:min(n, len(data))], int64(len(data)))
		if err == nil {
			return f
		}
		require.ErrorIs(t, err, gguf.ErrNeedMore)
		require.Less(t, n, len(data), "ErrNeedMore with the whole file given")
	}
}

// assemble builds l's file from sources as a host does: its Reads (merged
// across gaps of gap bytes), each read in chunks of random sizes, placed by
// Fill.
func assemble(t testing.TB, l *gguf.Layout, sources [][]byte, gap int64, rng *rand.Rand) []byte {
	t.Helper()
	out := make([]byte, l.Size)
	copy(out, l.Header)
	placed := 0
	for _, r := range l.Reads(gap) {
		for at := r.Start; at < r.End; {
			n := min(r.End-at, 1+rng.Int64N(300))
			placed += l.Fill(out, r.Source, at, sources[r.Source][at:at+n])
			at += n
		}
	}
	require.Equal(t, l.Covered(), placed, "every byte the segments cover is placed once")
	return out
}

func TestParseHeaderMatchesParse(t *testing.T) {
	data := smallFile(t)
	whole, err := gguf.Parse(data)
	require.NoError(t, err)
	f := headerOf(t, data)
	assert.Equal(t, whole.KVs(), f.KVs())
	assert.Equal(t, whole.DataOffset, f.DataOffset)
	assert.Equal(t, whole.HeaderSize, f.HeaderSize)
	for i, ti := range f.Tensors() {
		w := whole.Tensors()[i]
		assert.Nil(t, ti.Data, "a header has no data")
		w.Data = nil
		assert.Equal(t, w, ti)
	}
}

func TestParseHeaderErrors(t *testing.T) {
	data := smallFile(t)
	f := headerOf(t, data)
	tests := []struct {
		name   string
		prefix []byte
		size   int64
		want   error
	}{
		{"prefix ends in the header", data[:f.HeaderSize-1], int64(len(data)), gguf.ErrNeedMore},
		{"file ends in the header", data[:f.HeaderSize-1], int64(f.HeaderSize - 1), gguf.ErrTruncated},
		{"file ends in the data", data[:f.HeaderSize], int64(len(data) - 1), gguf.ErrTruncated},
		{"size below the prefix", data, int64(len(data) - 1), gguf.ErrInvalid},
		{"not GGUF", []byte("GGUX\x03\x00\x00\x00"), 1 << 20, gguf.ErrFormat},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gguf.ParseHeader(tc.prefix, tc.size)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// splitParts writes the GGUF file data as count parts, as llama-gguf-split
// --split-max-tensors does (modelgen.Split).
func splitParts(t testing.TB, data []byte, count int) [][]byte {
	t.Helper()
	parts, err := modelgen.Split(data, count)
	require.NoError(t, err)
	return parts
}

// headersOf reads the headers and sizes of parts, as a host reading each
// part's first bytes does.
func headersOf(t testing.TB, parts [][]byte) ([]*gguf.File, []int64) {
	t.Helper()
	var headers []*gguf.File
	var sizes []int64
	for _, p := range parts {
		headers = append(headers, headerOf(t, p))
		sizes = append(sizes, int64(len(p)))
	}
	return headers, sizes
}

// manyTensors is a file of 7 tensors of mixed types, with a split key-free
// header, for Join.
func manyTensors(t testing.TB) []byte {
	t.Helper()
	b := gguf.NewBuilder()
	b.Set("general.architecture", gguf.ValueOf("llama"))
	b.Set("kv.words", gguf.ArrayOf([]string{"a", "bc", "def"}))
	types := []tensor.Type{tensor.F32, tensor.Q8_0, tensor.Q4_0, tensor.F16, tensor.Q4_K, tensor.F32, tensor.Q6_K}
	for i, typ := range types {
		dims := []uint64{256, uint64(1 + i)}
		b.AddTensor(fmt.Sprintf("t%d", i), typ, dims, tensorData(t, typ, dims, byte(i)))
	}
	data, err := b.Bytes()
	require.NoError(t, err)
	return data
}

func TestJoinRebuildsTheFile(t *testing.T) {
	data := manyTensors(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, count := range []int{2, 3, 7} {
		t.Run(fmt.Sprintf("%d parts", count), func(t *testing.T) {
			parts := splitParts(t, data, count)
			f, l, err := gguf.Join(headersOf(t, parts))
			require.NoError(t, err)
			// The file it was split from, marked whole as llama-gguf-split --merge marks it.
			orig, err := gguf.Parse(data)
			require.NoError(t, err)
			b := gguf.NewBuilder()
			for _, kv := range orig.KVs() {
				b.Set(kv.Key, kv.Value)
			}
			b.Set(gguf.SplitNoKey, gguf.ValueOf(uint16(0)))
			b.Set(gguf.SplitTensorsKey, gguf.ValueOf(int32(len(orig.Tensors()))))
			b.Set(gguf.SplitCountKey, gguf.ValueOf(uint16(0)))
			for _, ti := range orig.Tensors() {
				dims := ti.Dims
				if len(dims) == 2 && dims[1] == 1 {
					dims = dims[:1] // as the tool writes dims: without trailing 1s
				}
				b.AddTensor(ti.Name, ti.Type, dims, ti.Data)
			}
			want, err := b.Bytes()
			require.NoError(t, err)
			for _, gap := range []int64{0, 64, 1 << 20} {
				joined := assemble(t, l, parts, gap, rng)
				require.Equal(t, want, joined, "the joined parts are the file they were split from")
			}
			assert.Len(t, f.Tensors(), 7)
		})
	}
}

func TestJoinOfOneFileIsTheFile(t *testing.T) {
	data := manyTensors(t)
	f := headerOf(t, data)
	g, l, err := gguf.Join([]*gguf.File{f}, []int64{int64(len(data))})
	require.NoError(t, err)
	assert.Same(t, f, g)
	assert.Equal(t, data, assemble(t, l, [][]byte{data}, 0, rand.New(rand.NewPCG(3, 4))))
}

func TestJoinErrors(t *testing.T) {
	data := manyTensors(t)
	parts := splitParts(t, data, 3)
	h := func(i int) *gguf.File { return headerOf(t, parts[i]) }
	size := func(i int) int64 { return int64(len(parts[i])) }
	tests := []struct {
		name  string
		files []*gguf.File
		sizes []int64
	}{
		{"a part missing", []*gguf.File{h(0), h(1)}, []int64{size(0), size(1)}},
		{"parts out of order", []*gguf.File{h(0), h(2), h(1)}, []int64{size(0), size(2), size(1)}},
		{"a part twice", []*gguf.File{h(0), h(1), h(1)}, []int64{size(0), size(1), size(1)}},
		{"not the first part first", []*gguf.File{h(1), h(0), h(2)}, []int64{size(1), size(0), size(2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := gguf.Join(tc.files, tc.sizes)
			require.Error(t, err)
		})
	}
}

func TestThroughComposesLayouts(t *testing.T) {
	data := manyTensors(t)
	parts := splitParts(t, data, 3)
	f, joined, err := gguf.Join(headersOf(t, parts))
	require.NoError(t, err)
	// A file of some of the joined file's tensors, referring to it.
	b := gguf.NewBuilder()
	b.Set("general.architecture", gguf.ValueOf("llama"))
	var want [][]byte
	whole, err := gguf.Parse(data)
	require.NoError(t, err)
	for _, name := range []string{"t6", "t1", "t3"} {
		ti, ok := f.Tensor(name)
		require.True(t, ok)
		b.AddTensorRef(name, ti.Type, ti.Dims, gguf.TensorRef{Source: 0, Offset: int64(f.DataOffset + ti.Offset)})
		wt, _ := whole.Tensor(name)
		want = append(want, wt.Data)
	}
	l, err := b.Layout()
	require.NoError(t, err)
	through, err := l.Through(joined)
	require.NoError(t, err)
	out := assemble(t, through, parts, 0, rand.New(rand.NewPCG(5, 6)))
	g, err := gguf.Parse(out)
	require.NoError(t, err)
	for i, name := range []string{"t6", "t1", "t3"} {
		ti, _ := g.Tensor(name)
		assert.Equal(t, want[i], ti.Data, name)
	}
}

func TestBytesRefusesTensorRefs(t *testing.T) {
	b := gguf.NewBuilder()
	b.AddTensorRef("a", tensor.F32, []uint64{4}, gguf.TensorRef{})
	_, err := b.Bytes()
	require.ErrorIs(t, err, gguf.ErrInvalid)
	b = gguf.NewBuilder()
	b.AddTensor("a", tensor.F32, []uint64{4}, make([]byte, 16))
	_, err = b.Layout()
	require.ErrorIs(t, err, gguf.ErrInvalid)
}

// TestTensorPieces: a tensor laid out from pieces of other tensors holds
// their bytes one after another (a part's rows of each piece of a fused
// tensor); pieces that do not add up to the tensor's size are an error.
func TestTensorPieces(t *testing.T) {
	data := manyTensors(t)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	a, b := f.Tensors()[0], f.Tensors()[5]
	require.Equal(t, tensor.F32, a.Type)
	require.Equal(t, tensor.F32, b.Type)
	// 4 values of a from its second, then 8 of b from its first.
	pieces := []gguf.TensorPiece{
		{Source: 0, Offset: int64(f.DataOffset + a.Offset + 4), Len: 16},
		{Source: 0, Offset: int64(f.DataOffset + b.Offset), Len: 32},
	}
	want := append(append([]byte(nil), a.Data[4:20]...), b.Data[:32]...)
	builder := gguf.NewBuilder()
	builder.AddTensorPieces("p", tensor.F32, []uint64{12}, pieces)
	l, err := builder.Layout()
	require.NoError(t, err)
	out := assemble(t, l, [][]byte{data}, 0, rand.New(rand.NewPCG(1, 2)))
	g, err := gguf.Parse(out)
	require.NoError(t, err)
	p, ok := g.Tensor("p")
	require.True(t, ok)
	assert.Equal(t, want, p.Data)

	for name, pieces := range map[string][]gguf.TensorPiece{
		"short":    {{Offset: 0, Len: 16}},
		"none":     nil,
		"negative": {{Offset: 0, Len: -16}, {Offset: 0, Len: 64}},
	} {
		builder := gguf.NewBuilder()
		builder.AddTensorPieces("p", tensor.F32, []uint64{12}, pieces)
		_, err := builder.Layout()
		assert.ErrorIs(t, err, gguf.ErrInvalid, name)
	}
}

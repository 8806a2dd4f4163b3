package shard

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// parseHeader reads data's header from a prefix, as a host reading a URL
// does, doubling it until it is enough.
func parseHeader(t testing.TB, data []byte) *gguf.File {
	t.Helper()
	for n := 1024; ; n *= 2 {
		f, err := gguf.ParseHeader(data[:min(n, len(data))], int64(len(data)))
		if err == nil {
			return f
		}
		require.ErrorIs(t, err, gguf.ErrNeedMore)
		require.Less(t, n, len(data))
	}
}

// fill assembles l's file from source's bytes, reading l.Reads(gap) in
// chunks of chunk bytes.
func fill(t testing.TB, l *gguf.Layout, sources [][]byte, gap int64, chunk int64) []byte {
	t.Helper()
	out := make([]byte, l.Size)
	copy(out, l.Header)
	placed := 0
	for _, r := range l.Reads(gap) {
		for at := r.Start; at < r.End; at += chunk {
			placed += l.Fill(out, r.Source, at, sources[r.Source][at:min(at+chunk, r.End)])
		}
	}
	require.Equal(t, l.Covered(), placed)
	return out
}

// TestLayoutIsFile checks that a part laid out from the header alone and
// assembled from the ranges it names is the very file File cuts from the
// whole model, for every model and split of the equivalence tests, and
// that it reads less than the whole file.
func TestLayoutIsFile(t *testing.T) {
	for name, sp := range randomSpecs() {
		data, m := loadGGUF(t, sp)
		f := parseHeader(t, data)
		for _, n := range []int{2, 3} {
			if n > sp.KVHeads {
				continue
			}
			for i := range n {
				t.Run(fmt.Sprintf("%s/%d-of-%d", name, i, n), func(t *testing.T) {
					want, err := File(data, i, n)
					require.NoError(t, err)
					l, err := Layout(f, i, n, m.Fingerprint())
					require.NoError(t, err)
					assert.Equal(t, want, fill(t, l, [][]byte{data}, 0, 97))
					assert.Equal(t, want, fill(t, l, [][]byte{data}, 4096, 1<<20))
					var read int64
					for _, r := range l.Reads(0) {
						read += r.End - r.Start
					}
					assert.Less(t, read, int64(len(data)), "a part reads less than the whole file")
				})
			}
		}
	}
}

func TestLayoutErrors(t *testing.T) {
	data, _ := loadGGUF(t, randomSpecs()["llama-gqa-F32"])
	f := parseHeader(t, data)
	part, err := File(data, 0, 2)
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		f            *gguf.File
		index, count int
		want         error
	}{
		{"more parts than kv heads", f, 0, 5, nil},
		{"index out of range", f, 2, 2, nil},
		{"a part's file", parseHeader(t, part), 0, 2, ErrSplit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Layout(tc.f, tc.index, tc.count, 1)
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
		})
	}
}

func TestHeaderFingerprint(t *testing.T) {
	a := HeaderFingerprint([][]byte{[]byte("GGUF header")}, 100)
	assert.Equal(t, a, HeaderFingerprint([][]byte{[]byte("GGUF header")}, 100))
	assert.NotEqual(t, a, HeaderFingerprint([][]byte{[]byte("GGUF header")}, 101))
	assert.NotEqual(t, a, HeaderFingerprint([][]byte{[]byte("GGUF headeR")}, 100))
}

func TestPartBytesIsAboutTheLayoutsSize(t *testing.T) {
	data, _ := loadGGUF(t, randomSpecs()["llama-gqa-Q4_K"])
	f := parseHeader(t, data)
	for _, n := range []int{1, 2, 4} {
		for i := range n {
			l, err := Layout(f, i, n, 7)
			require.NoError(t, err)
			got, err := PartBytes(f, i, n)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, got, int64(l.Size), "part %d of %d", i, n)
			assert.Less(t, got, int64(l.Size)+2048, "part %d of %d", i, n)
		}
	}
}

// TestUnsplittableFamily: a model whose family cannot be split (olmo2
// normalises all the heads of q and k at once) is refused by every way of
// splitting it, with the reason, as unsupported.
func TestUnsplittableFamily(t *testing.T) {
	data, m := loadGGUF(t, modelgen.Spec{Arch: "olmo2", Shape: modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 1, Heads: 4, KVHeads: 2,
		VocabSize: 300, ContextLength: 32}, SeparateOutput: true, Seed: 1})
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	for name, split := range map[string]func() error{
		"Cut":       func() error { _, err := Cut(m, 0, 2); return err },
		"File":      func() error { _, err := File(data, 0, 2); return err },
		"Layout":    func() error { _, err := Layout(f, 0, 2, 1); return err },
		"PartBytes": func() error { _, err := PartBytes(f, 1, 2); return err },
	} {
		err := split()
		assert.ErrorIs(t, err, engine.ErrUnsupported, name)
		assert.ErrorContains(t, err, "olmo2 normalises all the queries", name)
	}
}

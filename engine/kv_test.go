package engine

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKVType(t *testing.T) {
	for _, c := range []struct {
		in   string
		want KVType
		ok   bool
	}{
		{"auto", KVAuto, true}, {"f32", KVF32, true}, {"f16", KVF16, true},
		{"", 0, false}, {"F16", 0, false}, {"fp16", 0, false}, {"q8_0", 0, false},
	} {
		got, err := ParseKVType(c.in)
		if !c.ok {
			var oe *OptionError
			require.ErrorAs(t, err, &oe, "%q", c.in)
			assert.Equal(t, "kv_type", oe.Field)
			assert.ErrorIs(t, err, ErrInvalidOption)
			continue
		}
		require.NoError(t, err, "%q", c.in)
		assert.Equal(t, c.want, got)
		assert.Equal(t, c.in, got.String())
		text, err := got.MarshalText()
		require.NoError(t, err)
		var back KVType
		require.NoError(t, back.UnmarshalText(text))
		assert.Equal(t, got, back)
	}
	_, err := KVType(7).MarshalText()
	assert.ErrorIs(t, err, ErrInvalidOption)
	assert.Equal(t, "KVType(7)", KVType(7).String())
}

func TestKVTypeResolve(t *testing.T) {
	for _, c := range []struct {
		t          KVType
		parameters int64
		want       KVType
	}{
		{KVAuto, 260_000, KVF32},
		{KVAuto, AutoKVF16Parameters, KVF32},
		{KVAuto, AutoKVF16Parameters + 1, KVF16},
		{KVAuto, 1_100_000_000, KVF16},
		{KVF32, 1_100_000_000, KVF32},
		{KVF16, 260_000, KVF16},
	} {
		assert.Equal(t, c.want, c.t.Resolve(c.parameters), "%v with %d parameters", c.t, c.parameters)
	}
}

// TestKVCacheBytes: the size Config.KVCacheBytes gives is the cache a
// session allocates, and F16 halves it.
func TestKVCacheBytes(t *testing.T) {
	m := loadStories260K(t)
	c := m.Config()
	for _, typ := range []KVType{KVF32, KVF16} {
		s, err := m.NewSession(SessionOptions{ContextLength: 100, KVType: typ})
		require.NoError(t, err)
		held := 4 * int64(len(s.kv.k)+len(s.kv.v))
		held += 2 * int64(len(s.kv.k16)+len(s.kv.v16))
		assert.Equal(t, held, c.KVCacheBytes(100, typ), "%v", typ)
		assert.Equal(t, typ, s.KVType())
	}
	assert.Equal(t, c.KVCacheBytes(100, KVF32), 2*c.KVCacheBytes(100, KVF16))
	assert.Equal(t, c.KVCacheBytes(100, KVF32), c.KVCacheBytes(100, KVAuto), "auto counts as F32")
	// TinyLlama-1.1B's shape at 2048 positions (docs/kv-cache.md): 88 MiB in F32, 44 in F16.
	tiny := Config{Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4}
	assert.Equal(t, int64(88<<20), tiny.KVCacheBytes(2048, KVF32))
	assert.Equal(t, int64(44<<20), tiny.KVCacheBytes(2048, KVF16))
}

// TestSessionKVType: KVAuto resolves by the parameter count (stories260K
// is small: F32), an explicit type is kept, and a type out of range is an
// error naming kv_type.
func TestSessionKVType(t *testing.T) {
	m := loadStories260K(t)
	require.Equal(t, KVF32, m.DefaultKVType())
	for _, c := range []struct {
		opt  KVType
		want KVType
	}{{KVAuto, KVF32}, {KVF32, KVF32}, {KVF16, KVF16}} {
		s, err := m.NewSession(SessionOptions{KVType: c.opt})
		require.NoError(t, err)
		assert.Equal(t, c.want, s.KVType(), "%v", c.opt)
	}
	for _, bad := range []KVType{-1, 3} {
		_, err := m.NewSession(SessionOptions{KVType: bad})
		var oe *OptionError
		require.True(t, errors.As(err, &oe), "%v", bad)
		assert.Equal(t, "kv_type", oe.Field)
	}
}

// TestPartCountsWholeParameters: a part of a split model resolves KVAuto
// by the whole model's parameters, so every part chooses alike.
func TestPartCountsWholeParameters(t *testing.T) {
	m := loadGGUFModel(t, "stories260K-F32.gguf")
	c := m.Config()
	part, err := m.Cut(Part{
		Vocab: Span{0, c.VocabSize / 2}, Q: Span{0, c.Dim / 2}, KV: Span{0, c.KVDim() / 2},
		Hidden: Span{0, c.HiddenDim / 2}, Model: Span{0, c.Dim / 2},
	})
	require.NoError(t, err)
	whole := m.Info().Parameters
	assert.Less(t, part.Info().Parameters, whole)
	assert.Equal(t, whole, part.wholeParameters())
	assert.Equal(t, m.DefaultKVType(), part.DefaultKVType())
}

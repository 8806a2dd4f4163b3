package modelgen_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// EmbedTexts gives batch texts of tokens−2 words each, different texts,
// the same for the same arguments. (That each word is one token, so a
// text is tokens tokens with [CLS] and [SEP], llama.cpp's tokenizer
// checks: internal/embedref's TestTime.)
func TestEmbedTexts(t *testing.T) {
	texts, err := modelgen.EmbedTexts(32, 16)
	require.NoError(t, err)
	require.Len(t, texts, 16)
	seen := map[string]bool{}
	for _, text := range texts {
		words := strings.Split(text, " ")
		assert.Len(t, words, 30)
		assert.False(t, seen[text], "texts differ")
		seen[text] = true
	}
	again, err := modelgen.EmbedTexts(32, 16)
	require.NoError(t, err)
	assert.Equal(t, texts, again)
	_, err = modelgen.EmbedTexts(2, 1)
	assert.ErrorIs(t, err, modelgen.ErrSpec)
}

func TestEmbedSpecs(t *testing.T) {
	got, err := modelgen.ParseEmbedSpecs("32x1, 256x16")
	require.NoError(t, err)
	assert.Equal(t, []modelgen.EmbedSpec{{Tokens: 32, Batch: 1}, {Tokens: 256, Batch: 16}}, got)
	assert.Equal(t, "256x16", got[1].String())
	for _, bad := range []string{"32", "2x1", "32x0", "x1", "32x1,"} {
		_, err := modelgen.ParseEmbedSpecs(bad)
		assert.ErrorIs(t, err, modelgen.ErrSpec, bad)
	}
	s := modelgen.EmbedSpec{Tokens: 32, Batch: 4}
	for _, c := range []struct {
		seconds           []float64
		perSecond, median float64
	}{
		{nil, 0, 0},
		{[]float64{3, 1, 2}, 2, 2},
		{[]float64{4, 1, 3, 2}, 1.6, 2.5},
	} {
		perSecond, median := s.Rate(c.seconds)
		assert.Equal(t, []float64{c.perSecond, c.median}, []float64{perSecond, median}, "%v", c.seconds)
	}
}

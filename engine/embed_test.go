package engine

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// embedTexts are texts of a few lengths and scripts, for the tests that
// compare ways of computing the same embeddings.
var embedTexts = []string{
	"Once upon a time",
	"The cat sat on the mat. It was a sunny day and the cat was happy.",
	"a",
	"Héllo wörld, naïve café — ÉCOLE",
	"Lily and Ben went to the park to play with their ball.",
	strings.Repeat("a long story about a dog ", 12),
}

// defaultWithPooling is the default model with its file saying pooling p
// (PoolingUnset: as shipped, which says none).
func defaultWithPooling(t testing.TB, p Pooling) *Model {
	t.Helper()
	data := append([]byte(nil), models.Default()...)
	if p != PoolingUnset {
		var err error
		data, err = modelgen.SetKV(data, "llama.pooling_type", gguf.ValueOf(uint32(p)))
		require.NoError(t, err)
	}
	m, err := LoadGGUF(data)
	require.NoError(t, err)
	return m
}

// embedOne is text's embedding from a new session of m with opts.
func embedAll(t testing.TB, m *Model, so SessionOptions, texts []string, opts EmbedOptions) []Embedding {
	t.Helper()
	s, err := m.NewSession(so)
	require.NoError(t, err)
	out, err := s.Embed(context.Background(), texts, opts)
	require.NoError(t, err)
	return out
}

// TestEmbedSameBitsAnyWay holds every way of computing a model's
// embeddings to the same bits: texts together or one at a time, prompt
// blocks or token by token, one thread or two; and the normalised vector
// to the raw one scaled to unit length.
func TestEmbedSameBitsAnyWay(t *testing.T) {
	for _, tc := range embedModels(t) {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model
			want := embedAll(t, m, SessionOptions{Threads: 1}, embedTexts, EmbedOptions{})
			for i, e := range want {
				assert.Len(t, e.Vector, m.EmbeddingLength())
				assert.InDelta(t, 1, norm(e.Vector), 1e-5, "text %d is unit length", i)
			}
			for i, text := range embedTexts {
				alone := embedAll(t, m, SessionOptions{Threads: 1}, []string{text}, EmbedOptions{})
				assert.Equal(t, want[i], alone[0], "text %d alone", i)
			}
			assert.Equal(t, want, embedAll(t, m, SessionOptions{Threads: 2}, embedTexts, EmbedOptions{}), "two threads")
			assert.Equal(t, want, embedAll(t, m, SessionOptions{Threads: 1, PromptBlock: 1}, embedTexts, EmbedOptions{}), "token by token")
			raw := embedAll(t, m, SessionOptions{Threads: 1}, embedTexts, EmbedOptions{Raw: true})
			for i := range raw {
				r := raw[i].Vector
				assert.Greater(t, math.Abs(norm(r)-1), 1e-3, "text %d: the raw vector is not unit length", i)
				normalizeL2(r)
				assert.Equal(t, want[i].Vector, r, "text %d: normalised = raw scaled", i)
			}
			// Different texts, different vectors (but a decoder's first
			// token is BOS, whatever the text).
			if m.Pooling() == PoolingCLS && m.Generates() {
				return
			}
			assert.Less(t, dot(want[0].Vector, want[1].Vector), float32(0.9999))
		})
	}
}

// embedModel is a model to embed with, named for the subtests.
type embedModel struct {
	name  string
	model *Model
}

// embedModels are the models every embedding test runs on.
func embedModels(t testing.TB) []embedModel {
	encoder := func(arch string, typ tensor.Type, pooling string) *Model {
		t.Helper()
		data, err := modelgen.Build(modelgen.Spec{Arch: arch, Shape: embedParityShape, Type: typ, Pooling: pooling, Seed: 11,
			Std: 0.3 * modelgen.BertStd(embedParityShape)})
		require.NoError(t, err)
		m, err := LoadGGUF(data)
		require.NoError(t, err)
		return m
	}
	return []embedModel{
		{"bert-F32", encoder("bert", tensor.F32, "")},
		{"bert-cls-Q8_0", encoder("bert", tensor.Q8_0, "cls")},
		{"nomic-bert-Q8_0", encoder("nomic-bert", tensor.Q8_0, "")},
		{"stories260K-mean", defaultWithPooling(t, PoolingUnset)},
		{"stories260K-last", defaultWithPooling(t, PoolingLast)},
		{"stories260K-cls", defaultWithPooling(t, PoolingCLS)},
	}
}

// TestDecoderPooling checks the decoder's poolings against each other: the
// last token's state of a text is the first token's state of … nothing
// else, but with a causal model the first token's state is the same
// whatever follows it, and the mean of one token is its state.
func TestDecoderPooling(t *testing.T) {
	last, first, mean := defaultWithPooling(t, PoolingLast), defaultWithPooling(t, PoolingCLS), defaultWithPooling(t, PoolingUnset)
	assert.Equal(t, PoolingMean, mean.Pooling())
	so := SessionOptions{Threads: 1}
	a := embedAll(t, first, so, []string{"Once upon a time", "Once upon a midnight dreary"}, EmbedOptions{})
	assert.Equal(t, a[0].Vector, a[1].Vector, "the first token's state does not see the rest (causal)")
	// "a" is BOS and one token: last, first and mean differ; a text's
	// last state differs from its first.
	b := embedAll(t, last, so, []string{"Once upon a time"}, EmbedOptions{})
	assert.NotEqual(t, a[0].Vector, b[0].Vector)
	c := embedAll(t, mean, so, []string{"Once upon a time"}, EmbedOptions{})
	assert.NotEqual(t, b[0].Vector, c[0].Vector)
	assert.Equal(t, 5, c[0].Tokens, "BOS and four tokens")
}

// TestEmbedErrors checks what Embed and Rerank refuse, and that the
// session works afterwards.
func TestEmbedErrors(t *testing.T) {
	m := defaultWithPooling(t, PoolingUnset)
	s, err := m.NewSession(SessionOptions{ContextLength: 16})
	require.NoError(t, err)
	ctx := context.Background()
	long := strings.Repeat("the dog ran ", 20)
	for _, tc := range []struct {
		name  string
		texts []string
		opts  EmbedOptions
		want  error
		field string
	}{
		{"no texts", nil, EmbedOptions{}, ErrInvalidOption, "input"},
		{"empty text", []string{"a", ""}, EmbedOptions{}, ErrInvalidOption, "input[1]"},
		{"invalid UTF-8", []string{"a\xffb"}, EmbedOptions{}, ErrInvalidOption, "input"},
		{"too many", make([]string, MaxEmbedInputs+1), EmbedOptions{}, ErrInvalidOption, "input"},
		{"too long", []string{"a", long}, EmbedOptions{}, ErrPromptTooLong, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Embed(ctx, tc.texts, tc.opts)
			require.ErrorIs(t, err, tc.want)
			if tc.field != "" {
				var oe *OptionError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, tc.field, oe.Field)
			}
		})
	}
	cut, err := s.Embed(ctx, []string{long}, EmbedOptions{Truncate: true})
	require.NoError(t, err)
	assert.True(t, cut[0].Truncated)
	assert.Equal(t, 16, cut[0].Tokens)
	_, err = s.Rerank(ctx, "q", []string{"d"}, EmbedOptions{})
	require.ErrorIs(t, err, ErrUnsupported)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Embed(cancelled, []string{"a"}, EmbedOptions{})
	require.ErrorIs(t, err, context.Canceled)

	// The session generates as before.
	res, err := s.Generate(ctx, "Once", GenerateOptions{MaxTokens: 4}, nil)
	require.NoError(t, err)
	assert.Len(t, res.Tokens, 4)
	ok, err := s.Embed(ctx, []string{"a"}, EmbedOptions{})
	require.NoError(t, err)
	assert.False(t, ok[0].Truncated)
	assert.False(t, errors.Is(err, ErrBusy))
}

// norm is v's length.
func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// dot is a·b.
func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestEncoder checks what an encoder does beyond embedding: it refuses to
// generate; a reranker scores documents the same together or alone, and
// refuses to embed; a long document is cut when asked, its query kept.
func TestEncoder(t *testing.T) {
	ctx := context.Background()
	build := func(pooling string) *Model {
		data, err := modelgen.Build(modelgen.Spec{Arch: "bert", Shape: embedParityShape, Type: tensor.F32, Pooling: pooling, Seed: 5})
		require.NoError(t, err)
		m, err := LoadGGUF(data)
		require.NoError(t, err)
		return m
	}
	bert, reranker := build(""), build("rank")
	assert.False(t, bert.Generates())
	assert.False(t, bert.Reranks())
	assert.True(t, reranker.Reranks())
	assert.Equal(t, PoolingRank, reranker.Pooling())
	info := reranker.Info()
	assert.Equal(t, "rank", info.Pooling)
	assert.False(t, info.Generates)
	assert.Equal(t, 1, info.Classes)
	assert.Zero(t, EstimateMemory(bert.Config(), int64(bert.FileSize()), 256, KVF16).KVCache)
	for _, arch := range []string{"bert", "nomic-bert"} {
		for _, pooling := range []string{"", "rank"} {
			if arch == "nomic-bert" && pooling == "rank" {
				continue // llama.cpp reads classification heads of bert only
			}
			data, err := modelgen.Build(modelgen.Spec{Arch: arch, Shape: embedParityShape, Type: tensor.Q8_0, Pooling: pooling, Seed: 5})
			require.NoError(t, err)
			m, err := LoadGGUF(data)
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			h, err := ReadHeader(f)
			require.NoError(t, err)
			assert.Equal(t, m.Info(), h.Info(len(data)), "%s %s: the header says what loading says", arch, pooling)
			var params, size int64
			for _, ti := range f.Tensors() {
				params += ti.Elements()
				size += int64(ti.Size)
			}
			assert.Equal(t, params, m.Info().Parameters, "%s %s: every tensor of the file, once", arch, pooling)
			var bytes int64
			for _, n := range m.Info().TensorBytes {
				bytes += n
			}
			assert.Equal(t, size, bytes, "%s %s: every tensor's bytes, once (the file's vectors are F32)", arch, pooling)
			if arch == "bert" && pooling == "" {
				types := m.Info()
				assert.Greater(t, types.TensorTypes["F32"], types.TensorTypes["Q8_0"], "the biases and norms outnumber the matrices")
				assert.Greater(t, types.TensorBytes["Q8_0"], types.TensorBytes["F32"], "the matrices hold the most bytes")
			}
		}
	}

	s, err := bert.NewSession(SessionOptions{})
	require.NoError(t, err)
	_, err = s.Generate(ctx, "hello", GenerateOptions{MaxTokens: 2}, nil)
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorIs(t, s.Forward(101, 0, true), ErrUnsupported)
	_, err = s.Rerank(ctx, "q", []string{"d"}, EmbedOptions{})
	require.ErrorIs(t, err, ErrUnsupported)

	r, err := reranker.NewSession(SessionOptions{ContextLength: 64})
	require.NoError(t, err)
	_, err = r.Embed(ctx, []string{"a"}, EmbedOptions{})
	require.ErrorIs(t, err, ErrUnsupported)
	for _, tc := range []struct {
		query string
		docs  []string
		field string
	}{{"", []string{"d"}, "query"}, {"q", []string{"d", ""}, "documents[1]"}, {"q", nil, "documents"}} {
		_, err = r.Rerank(ctx, tc.query, tc.docs, EmbedOptions{})
		var oe *OptionError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, tc.field, oe.Field)
	}
	docs := embedTexts[:5]
	all, err := r.Rerank(ctx, "where is the cat?", docs, EmbedOptions{})
	require.NoError(t, err)
	for i, d := range docs {
		one, err := r.Rerank(ctx, "where is the cat?", []string{d}, EmbedOptions{})
		require.NoError(t, err)
		assert.Equal(t, all[i], one[0], "document %d alone", i)
	}
	assert.NotEqual(t, all[0].Value, all[1].Value)
	long := strings.Repeat("the cat sat on the mat ", 30)
	_, err = r.Rerank(ctx, "where is the cat?", []string{long}, EmbedOptions{})
	require.ErrorIs(t, err, ErrPromptTooLong)
	cut, err := r.Rerank(ctx, "where is the cat?", []string{long}, EmbedOptions{Truncate: true})
	require.NoError(t, err)
	assert.True(t, cut[0].Truncated)
	assert.Equal(t, 64, cut[0].Tokens)
	_, err = r.Rerank(ctx, strings.Repeat("cat ", 70), []string{"d"}, EmbedOptions{Truncate: true})
	require.ErrorIs(t, err, ErrPromptTooLong, "a query longer than the context is not cut")
}

// askingCount is a context that counts how often its Err is asked and is
// cancelled from the ask numbered cancelAt on (0: never).
type askingCount struct {
	context.Context
	asked, cancelAt int
}

func (c *askingCount) Err() error {
	c.asked++
	if c.cancelAt > 0 && c.asked >= c.cancelAt {
		return context.Canceled
	}
	return nil
}

// TestEmbedAsksBetweenPromptBlocks: a decoder asks its context's Err
// before each prompt block of a text, as a generation's prompt does (a
// host such as the edge worker acts there), not only before each text;
// cancelled after its first block, it stops there.
func TestEmbedAsksBetweenPromptBlocks(t *testing.T) {
	m := defaultWithPooling(t, PoolingMean)
	s, err := m.NewSession(SessionOptions{PromptBlock: 4})
	require.NoError(t, err)
	text := strings.Repeat("Once upon a time ", 8)
	ctx := &askingCount{Context: context.Background()}
	out, err := s.Embed(ctx, []string{text}, EmbedOptions{})
	require.NoError(t, err)
	blocks := (out[0].Tokens + 3) / 4
	require.Greater(t, blocks, 4)
	assert.GreaterOrEqual(t, ctx.asked, blocks, "asks for %d tokens in blocks of 4", out[0].Tokens)

	_, err = s.Embed(&askingCount{Context: context.Background(), cancelAt: 2}, []string{text}, EmbedOptions{})
	require.ErrorIs(t, err, context.Canceled)
}

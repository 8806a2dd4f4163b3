package jsbridge

import (
	"context"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tinyEncoder is the shape of the random-weight encoders of these tests.
var tinyEncoder = modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 64}

// encoderFile builds a random-weight bert or nomic-bert model (pooling
// "rank": a bert reranker) and loads it natively too.
func encoderFile(t *testing.T, arch, pooling string) ([]byte, *engine.Session) {
	t.Helper()
	data, err := modelgen.Build(modelgen.Spec{Arch: arch, Shape: tinyEncoder, Pooling: pooling, Type: tensor.F16, Seed: 3})
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	return data, s
}

// TestEncoderEmbeds: an embedding model (bert with mean and cls pooling,
// nomic-bert) says in info that it does not generate; embed gives the
// engine's vectors bit for bit; generate, stream and chat reject with
// unsupported_model, and so does rerank.
func TestEncoderEmbeds(t *testing.T) {
	texts := []string{"a cat sat on the mat", "stocks fell sharply today", "the cat sat on a mat"}
	for _, c := range []struct{ arch, pooling string }{{"bert", "mean"}, {"bert", "cls"}, {"nomic-bert", "mean"}} {
		t.Run(c.arch+" "+c.pooling, func(t *testing.T) {
			data, native := encoderFile(t, c.arch, c.pooling)
			b := newLoadedFile(t, data)
			info := mustCall(t, b, "info")
			assert.False(t, info.Get("generates").Bool())
			assert.False(t, info.Get("reranks").Bool())
			assert.Equal(t, c.pooling, info.Get("pooling").String())
			assert.Equal(t, tinyEncoder.Dim, info.Get("embeddingLength").Int())

			want, err := native.Embed(context.Background(), texts, engine.EmbedOptions{})
			require.NoError(t, err)
			res := mustCall(t, b, "embed", js.ValueOf(toAny(texts)))
			got := vectors(t, res)
			for i, w := range want {
				assert.Equal(t, w.Vector, got[i], "text %d", i)
				assert.Equal(t, w.Tokens, res.Get("tokens").Index(i).Int())
			}

			for _, call := range [][]any{
				{"generate", "a cat"},
				{"stream", "a cat", js.Undefined(), jsFunction("", "")},
				{"chat", chatRequest(t, map[string]any{"messages": userSays("hi")})},
			} {
				_, err := callArgs(t, b, call)
				requireField(t, err, "unsupported_model", "")
				assert.Contains(t, err.Error(), "does not generate text", call[0])
			}
			_, err = call(t, b, "rerank", "q", js.ValueOf([]any{"a"}))
			requireField(t, err, "unsupported_model", "")
		})
	}
}

// TestRerankMatchesEngine: a bert reranker's scores are the engine's, in
// the documents' order, with each pair's tokens; truncate cuts a document
// that does not fit beside the query; the reranker refuses to embed.
func TestRerankMatchesEngine(t *testing.T) {
	data, native := encoderFile(t, "bert", "rank")
	b := newLoadedFile(t, data)
	info := mustCall(t, b, "info")
	assert.True(t, info.Get("reranks").Bool())
	assert.Equal(t, "rank", info.Get("pooling").String())
	assert.False(t, info.Get("generates").Bool())

	query := "what is a panda"
	docs := []string{"hi", "the giant panda is a bear native to china", "paris is the capital of france"}
	want, err := native.Rerank(context.Background(), query, docs, engine.EmbedOptions{})
	require.NoError(t, err)
	res := mustCall(t, b, "rerank", query, js.ValueOf(toAny(docs)))
	total := 0
	for i, w := range want {
		assert.Equal(t, float64(w.Value), res.Get("scores").Index(i).Float(), "document %d", i)
		assert.Equal(t, w.Tokens, res.Get("tokens").Index(i).Int())
		assert.False(t, res.Get("truncated").Index(i).Bool())
		total += w.Tokens
	}
	assert.Equal(t, total, res.Get("usage").Get("promptTokens").Int())

	long := ""
	for range tinyEncoder.ContextLength {
		long += "panda "
	}
	_, err = call(t, b, "rerank", query, js.ValueOf([]any{"hi", long}))
	requireField(t, err, "prompt_too_long", "")
	assert.Contains(t, err.Error(), "documents[1]")
	res = mustCall(t, b, "rerank", query, js.ValueOf([]any{"hi", long}), obj(map[string]any{"truncate": true}))
	assert.True(t, res.Get("truncated").Index(1).Bool())
	assert.Equal(t, tinyEncoder.ContextLength, res.Get("tokens").Index(1).Int())
	cut, err := native.Rerank(context.Background(), query, []string{"hi", long}, engine.EmbedOptions{Truncate: true})
	require.NoError(t, err)
	assert.Equal(t, float64(cut[1].Value), res.Get("scores").Index(1).Float())

	_, err = call(t, b, "embed", "a cat")
	requireField(t, err, "unsupported_model", "")
	assert.Contains(t, err.Error(), "reranker")
}

// callArgs calls the method args[0] with the rest of args.
func callArgs(t *testing.T, b *Binding, args []any) (js.Value, error) {
	t.Helper()
	return call(t, b, args[0].(string), args[1:]...)
}

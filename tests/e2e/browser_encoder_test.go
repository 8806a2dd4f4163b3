//go:build !js

package e2e

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// Embedding models and rerankers in the page: random-weight bert and
// nomic-bert files (internal/modelgen), whose vectors and scores the page
// must give as the native engine does, and which do not generate.

// rerankExample is web/README.md's example of reranking, which
// TestBrowserReadmeRerankExample runs as it is written (with a
// random-weight reranker for 'models/my-reranker.gguf').
const rerankExample = "```js\n" + `import { WasmLM } from './wasmlm/wasmlm.js';

const reranker = await WasmLM.load('models/my-reranker.gguf');   // reranker.info.reranks: true
const { results } = await reranker.rerank({
  query: 'What is a panda?',
  documents: ['hi', 'The giant panda is a bear native to China.', 'Paris is the capital of France.'],
  top_n: 2,
  return_documents: true,
});
// The most relevant first: [{ index: 1, relevance_score: 8.1, document: { text: 'The giant panda …' } }, …]
console.log(results.map((r) => r.index));
` + "```\n"

// encoderShape is the shape of the tests' encoders: small, with BERT's
// vocabulary.
var encoderShape = modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, ContextLength: 128}

// encoder is a random-weight embedding model or reranker, served to the
// page and loaded natively.
type encoder struct {
	data    []byte
	path    string          // its URL path on the site
	file    string          // its name
	session *engine.Session // the native engine's
}

// serveEncoder builds a bert or nomic-bert file (pooling "rank": a bert
// reranker), serves it and loads it natively.
func serveEncoder(t *testing.T, s *site, arch, pooling string) encoder {
	t.Helper()
	data, err := modelgen.Build(modelgen.Spec{Arch: arch, Shape: encoderShape, Pooling: pooling, Type: tensor.F16, Seed: 5})
	require.NoError(t, err)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	sess, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	name := arch + "-" + pooling + ".gguf"
	path, _ := serveFile(t, s, name, data)
	return encoder{data: data, path: path, file: name, session: sess}
}

// An embedding model (bert with cls pooling, nomic-bert with mean) says
// in lm.info that it does not generate; lm.embeddings.create gives the
// native engine's vectors bit for bit; generate, stream, chat and rerank
// reject with unsupported_model.
func TestBrowserEmbeddingModel(t *testing.T) {
	tb := newTab(t, blankPage)
	texts := []string{"a cat sat on the mat", "stocks fell sharply today", "the cat sat on a mat"}
	for _, c := range []struct{ arch, pooling string }{{"bert", "cls"}, {"nomic-bert", "mean"}} {
		enc := serveEncoder(t, tb.site, c.arch, c.pooling)
		got := eval[struct {
			Info struct {
				Architecture    string `json:"architecture"`
				Generates       bool   `json:"generates"`
				Pooling         string `json:"pooling"`
				Reranks         bool   `json:"reranks"`
				EmbeddingLength int    `json:"embeddingLength"`
			} `json:"info"`
			Embeddings embeddingResponse[[]float64] `json:"embeddings"`
			Refused    []*rejection                 `json:"refused"`
		}](t, tb, apiScript(`
			const lm = await WasmLM.load('`+enc.path+`');
			const embeddings = await lm.embeddings.create({ input: `+jsonString(t, texts)+` });
			const refused = [];
			for (const call of [
				() => lm.generate('a cat'),
				() => lm.stream('a cat').result,
				() => lm.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }] }),
				() => lm.rerank({ query: 'q', documents: ['a'] }),
			]) {
				try {
					await call();
					refused.push(null);
				} catch (e) {
					refused.push({ code: e.code, message: e.message, isError: e instanceof Error });
				}
			}
			lm.unload();
			return { info: lm.info, embeddings, refused };
		`))
		assert.Equal(t, c.arch, got.Info.Architecture)
		assert.False(t, got.Info.Generates, c.arch)
		assert.Equal(t, c.pooling, got.Info.Pooling)
		assert.False(t, got.Info.Reranks)
		assert.Equal(t, encoderShape.Dim, got.Info.EmbeddingLength)
		want, err := enc.session.Embed(context.Background(), texts, engine.EmbedOptions{})
		require.NoError(t, err)
		require.Len(t, got.Embeddings.Data, len(texts))
		tokens := 0
		for i, w := range want {
			assertSameVector(t, w.Vector, got.Embeddings.Data[i].Embedding, c.arch+" "+strconv.Itoa(i))
			tokens += w.Tokens
		}
		assert.Equal(t, tokens, got.Embeddings.Usage.PromptTokens)
		for i, r := range got.Refused {
			if assert.NotNil(t, r, "%s: call %d did not reject", c.arch, i) {
				assert.Equal(t, "unsupported_model", r.Code, r.Message)
			}
		}
		if got.Refused[0] != nil {
			assert.Contains(t, got.Refused[0].Message, "does not generate text")
		}
	}
}

// rerankResponse is lm.rerank's response.
type rerankResponse struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Results []struct {
		Index          int             `json:"index"`
		RelevanceScore float64         `json:"relevance_score"`
		Document       *rerankDocument `json:"document"`
	} `json:"results"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

type rerankDocument struct {
	Text string `json:"text"`
}

// A reranker's lm.rerank gives the native engine's scores, sorted from
// the most relevant (ties in the documents' order, as a stable sort keeps
// them), top_n of them, with the documents when asked; truncate cuts a
// document that does not fit; embeddings.create rejects.
func TestBrowserRerank(t *testing.T) {
	tb := newTab(t, blankPage)
	enc := serveEncoder(t, tb.site, "bert", "rank")
	query := "what is a panda"
	docs := []string{"hi", "the giant panda is a bear native to china", "paris is the capital of france", "pandas eat bamboo", "hi"}
	long := strings.Repeat("panda ", encoderShape.ContextLength)
	got := eval[struct {
		Reranks  bool           `json:"reranks"`
		All      rerankResponse `json:"all"`
		Top      rerankResponse `json:"top"`
		Cut      rerankResponse `json:"cut"`
		TooLong  rejection      `json:"tooLong"`
		NoEmbeds rejection      `json:"noEmbeds"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load('`+enc.path+`', { name: 'reranker' });
		const query = `+jsonString(t, query)+`, documents = `+jsonString(t, docs)+`;
		const all = await lm.rerank({ query, documents });
		const top = await lm.rerank({ query, documents, top_n: 2, return_documents: true, model: 'ignored' });
		const cut = await lm.rerank({ query, documents: ['hi', `+jsonString(t, long)+`], truncate: true });
		const fail = (p) => p.then(() => null, (e) => ({ code: e.code, message: e.message, field: e.field ?? '' }));
		const tooLong = await fail(lm.rerank({ query, documents: ['hi', `+jsonString(t, long)+`] }));
		const noEmbeds = await fail(lm.embeddings.create({ input: 'a cat' }));
		lm.unload();
		return { reranks: lm.info.reranks, all, top, cut, tooLong, noEmbeds };
	`))
	assert.True(t, got.Reranks)
	want, err := enc.session.Rerank(context.Background(), query, docs, engine.EmbedOptions{})
	require.NoError(t, err)
	order := make([]int, len(docs))
	tokens := 0
	for i, w := range want {
		order[i] = i
		tokens += w.Tokens
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(want[b].Value, want[a].Value) })
	assert.Equal(t, "list", got.All.Object)
	assert.Equal(t, "reranker", got.All.Model)
	require.Len(t, got.All.Results, len(docs))
	for k, i := range order {
		r := got.All.Results[k]
		assert.Equal(t, i, r.Index, "rank %d", k)
		assert.Equal(t, float64(want[i].Value), r.RelevanceScore, "document %d", i)
		assert.Nil(t, r.Document, "no documents unless asked")
	}
	assert.Equal(t, tokens, got.All.Usage.PromptTokens)
	assert.Equal(t, tokens, got.All.Usage.TotalTokens)
	require.Len(t, got.Top.Results, 2)
	for k, r := range got.Top.Results {
		assert.Equal(t, order[k], r.Index)
		if assert.NotNil(t, r.Document) {
			assert.Equal(t, docs[r.Index], r.Document.Text)
		}
	}
	cut, err := enc.session.Rerank(context.Background(), query, []string{"hi", long}, engine.EmbedOptions{Truncate: true})
	require.NoError(t, err)
	for _, r := range got.Cut.Results {
		assert.Equal(t, float64(cut[r.Index].Value), r.RelevanceScore, "truncated, document %d", r.Index)
	}
	assert.Equal(t, "prompt_too_long", got.TooLong.Code, got.TooLong.Message)
	assert.Contains(t, got.TooLong.Message, "documents[1]")
	assert.Equal(t, "unsupported_model", got.NoEmbeds.Code, got.NoEmbeds.Message)
}

// web/README.md's example of reranking runs as written, with a reranker.
func TestBrowserReadmeRerankExample(t *testing.T) {
	docHas(t, "web/README.md", rerankExample)
	tb := newTab(t, blankPage)
	enc := serveEncoder(t, tb.site, "bert", "rank")
	body := runnable(rerankExample, map[string]string{"models/my-reranker.gguf": enc.path})
	got := eval[[]struct {
		Index          int            `json:"index"`
		RelevanceScore float64        `json:"relevance_score"`
		Document       rerankDocument `json:"document"`
	}](t, tb, apiScript(body+`
		reranker.unload();
		return results;
	`))
	docs := []string{"hi", "The giant panda is a bear native to China.", "Paris is the capital of France."}
	want, err := enc.session.Rerank(context.Background(), "What is a panda?", docs, engine.EmbedOptions{})
	require.NoError(t, err)
	require.Len(t, got, 2, "top_n: 2")
	assert.GreaterOrEqual(t, got[0].RelevanceScore, got[1].RelevanceScore, "the most relevant first")
	for _, r := range got {
		assert.Equal(t, float64(want[r.Index].Value), r.RelevanceScore)
		assert.Equal(t, docs[r.Index], r.Document.Text)
	}
}

// The demo page with an embedding model (loaded with the file picker)
// offers no generation: the playground goes, a note says what the model
// does, and the similarity panel ranks by the native engine's vectors.
// With a reranker it ranks by the reranker's scores. Screenshots go to
// artifacts/demo-cls.png and demo-rank.png.
func TestBrowserDemoEmbeddingModel(t *testing.T) {
	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	query, texts := "a cat on a mat", []string{"the cat sat on the mat", "once upon a time there was a dog", "stocks fell sharply today"}
	eval[chromedp.Void](t, tb, `document.getElementById('query').value = `+jsonString(t, query)+`;
		document.getElementById('texts').value = `+jsonString(t, strings.Join(texts, "\n")))
	for _, pooling := range []string{"cls", "rank"} {
		enc := serveEncoder(t, tb.site, "bert", pooling)
		file := filepath.Join(t.TempDir(), enc.file)
		require.NoError(t, os.WriteFile(file, enc.data, 0o644))
		require.NoError(t, chromedp.Do(tb.ctx, chromedp.SetUploadFiles(chromedp.ID("model-file"), []string{file})))
		waitFor(t, tb, `document.getElementById('status').textContent.startsWith('`+enc.file+` ready')`, 30*time.Second)
		assert.True(t, eval[bool](t, tb, `document.querySelector('main').hidden`), "%s: no playground for a model that does not generate", pooling)
		assert.True(t, eval[bool](t, tb, `document.getElementById('generate').disabled`))
		note := text(t, tb, "encoder-note")
		assert.Contains(t, note, "does not generate text")

		require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("compare"))))
		waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
		scores := make([]float64, len(texts))
		if pooling == "rank" {
			assert.Contains(t, note, "a reranker")
			assert.Equal(t, "relevance score", text(t, tb, "score-head"))
			ranked, err := enc.session.Rerank(context.Background(), query, texts, engine.EmbedOptions{})
			require.NoError(t, err)
			for i, s := range ranked {
				scores[i] = float64(s.Value)
			}
		} else {
			assert.Contains(t, note, "an embedding model")
			vectors, err := enc.session.Embed(context.Background(), append([]string{query}, texts...), engine.EmbedOptions{})
			require.NoError(t, err)
			for i, v := range vectors[1:] {
				scores[i] = dot(v.Vector, vectors[0].Vector)
			}
		}
		assertRanking(t, tb, texts, scores)
		png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		path := artifactPath(t, "demo-"+pooling+".png")
		require.NoError(t, os.WriteFile(path, png, 0o644))
		t.Logf("screenshot: %s", path)
	}
}

//go:build !js

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// Embeddings and reranking in the page: lm.embeddings.create and lm.rerank,
// their vectors against the native engine's, their errors and aborts.

// embeddingsExample is web/README.md's example of embeddings, which
// TestBrowserReadmeEmbeddingsExample runs as it is written (with the
// test's model for 'models/my-embedding-model.gguf').
const embeddingsExample = "```js\n" + `import { WasmLM } from './wasmlm/wasmlm.js';

const lm = await WasmLM.load('models/my-embedding-model.gguf');
lm.info.generates;        // false for an embedding model: generate, stream and chat reject (unsupported_model)
lm.info.pooling;          // how a text's vector is made: 'cls', 'mean' or 'last' ('rank': a reranker)
lm.info.embeddingLength;  // the length of every vector: 384 for bge-small

const { data, usage } = await lm.embeddings.create({
  input: ['A cat sat on the mat.', 'A kitten slept on the rug.', 'Stocks fell sharply today.'],
});
const [cat, kitten, stocks] = data.map((d) => d.embedding);   // number[] each, of unit length
const similarity = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);
console.log(similarity(cat, kitten), similarity(cat, stocks), usage.prompt_tokens);

// As OpenAI's SDK asks for them: the little-endian float32 bytes in base64.
const { data: [{ embedding: b64 }] } = await lm.embeddings.create({ input: 'A cat', encoding_format: 'base64' });
const vector = new Float32Array(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer);
` + "```\n"

// docHas checks that the document doc (a path from the repository's
// root, such as web/README.md) shows example.
func docHas(t *testing.T, doc, example string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(doc)))
	require.NoError(t, err)
	if !strings.Contains(string(b), example) {
		t.Fatalf("%s must show the example this test runs:\n%s", doc, example)
	}
}

// runnable is a documented example as the body of apiScript: its code block's
// fences and import line gone, model paths replaced as paths says.
func runnable(example string, paths map[string]string) string {
	body := strings.TrimSuffix(strings.TrimPrefix(example, "```js\n"), "```\n")
	body = strings.Replace(body, "import { WasmLM } from './wasmlm/wasmlm.js';\n", "", 1)
	for from, to := range paths {
		body = strings.ReplaceAll(body, "'"+from+"'", "'"+to+"'")
	}
	return body
}

// nativeEmbeddings are the engine's embeddings of texts by the default
// model, natively: what the page must return, bit for bit.
func nativeEmbeddings(t *testing.T, texts []string, opts engine.EmbedOptions) [][]float32 {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	embs, err := s.Embed(context.Background(), texts, opts)
	require.NoError(t, err)
	out := make([][]float32, len(embs))
	for i, e := range embs {
		out[i] = e.Vector
	}
	return out
}

// assertSameVector checks a vector from the page (float32 values as
// JavaScript numbers) against the engine's, bit for bit.
func assertSameVector(t *testing.T, want []float32, got []float64, what string) {
	t.Helper()
	if !assert.Len(t, got, len(want), what) {
		return
	}
	for i, w := range want {
		if float64(w) != got[i] {
			t.Errorf("%s: value %d is %v, natively %v (cosine %.9f)", what, i, got[i], w, testmodel.Cosine(want, got))
			return
		}
	}
}

// assertSameBase64 checks a base64 embedding: the little-endian float32
// bytes of the engine's vector.
func assertSameBase64(t *testing.T, want []float32, got string, what string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(got)
	require.NoError(t, err, what)
	wantRaw := make([]byte, 4*len(want))
	for i, w := range want {
		binary.LittleEndian.PutUint32(wantRaw[4*i:], math.Float32bits(w))
	}
	assert.Equal(t, wantRaw, raw, what)
}

// embeddingResponse is OpenAI's embeddings response, as the page returns it.
type embeddingResponse[E any] struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding E      `json:"embedding"`
		Truncated bool   `json:"truncated"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// embedTexts are the texts the tests embed.
var embedTexts = []string{"Once upon a time", "The cat sat on the mat.", "Lily liked to play in the park with her dog."}

// lm.embeddings.create gives the native engine's vectors bit for bit, as
// number[] and as base64, normalised or raw, for one string and for a
// list, in OpenAI's shape; lm.info says what the model does.
func TestBrowserEmbeddingsMatchNative(t *testing.T) {
	long := strings.Repeat("Once upon a time there was a cat. ", 200)
	tb := newTab(t, blankPage)
	got := eval[struct {
		Info struct {
			Generates       bool   `json:"generates"`
			Pooling         string `json:"pooling"`
			Reranks         bool   `json:"reranks"`
			EmbeddingLength int    `json:"embeddingLength"`
		} `json:"info"`
		One       embeddingResponse[[]float64] `json:"one"`
		List      embeddingResponse[[]float64] `json:"list"`
		Base64    embeddingResponse[string]    `json:"base64"`
		Raw       embeddingResponse[[]float64] `json:"raw"`
		Truncated embeddingResponse[[]float64] `json:"truncated"`
		Sized     int                          `json:"sized"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const texts = `+jsonString(t, embedTexts)+`;
		const out = { info: lm.info };
		out.one = await lm.embeddings.create({ input: texts[0] });
		out.list = await lm.embeddings.create({ input: texts, model: 'ignored', user: 'ignored' });
		out.base64 = await lm.embeddings.create({ input: texts, encoding_format: 'base64' });
		out.raw = await lm.embeddings.create({ input: texts, normalize: false }, { signal: new AbortController().signal });
		out.truncated = await lm.embeddings.create({ input: [`+jsonString(t, long)+`], truncate: true });
		out.sized = (await lm.embeddings.create({ input: 'x', dimensions: lm.info.embeddingLength })).data[0].embedding.length;
		lm.unload();
		return out;
	`))
	assert.True(t, got.Info.Generates)
	assert.Equal(t, "mean", got.Info.Pooling)
	assert.False(t, got.Info.Reranks)
	normal := nativeEmbeddings(t, embedTexts, engine.EmbedOptions{})
	require.Equal(t, len(normal[0]), got.Info.EmbeddingLength)
	assert.Equal(t, got.Info.EmbeddingLength, got.Sized)

	assert.Equal(t, "list", got.One.Object)
	assert.Equal(t, models.DefaultName, got.One.Model)
	require.Len(t, got.One.Data, 1)
	assert.Equal(t, "embedding", got.One.Data[0].Object)
	assertSameVector(t, normal[0], got.One.Data[0].Embedding, "one string")

	raw := nativeEmbeddings(t, embedTexts, engine.EmbedOptions{Raw: true})
	for _, c := range []struct {
		name string
		res  embeddingResponse[[]float64]
		want [][]float32
	}{{"a list", got.List, normal}, {"normalize: false", got.Raw, raw}} {
		require.Len(t, c.res.Data, len(embedTexts), c.name)
		for i, d := range c.res.Data {
			assert.Equal(t, i, d.Index)
			assertSameVector(t, c.want[i], d.Embedding, c.name+" "+strconv.Itoa(i))
		}
	}
	require.Len(t, got.Base64.Data, len(embedTexts))
	for i, d := range got.Base64.Data {
		assertSameBase64(t, normal[i], d.Embedding, "base64 "+strconv.Itoa(i))
	}
	cut := nativeEmbeddings(t, []string{long}, engine.EmbedOptions{Truncate: true})
	assertSameVector(t, cut[0], got.Truncated.Data[0].Embedding, "truncated")
	assert.True(t, got.Truncated.Data[0].Truncated, "a text truncate cut says so, as the HTTP API does")

	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	tokens := 0
	for _, text := range embedTexts {
		ids, err := m.Tokenizer().Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
		require.NoError(t, err)
		tokens += len(ids)
	}
	assert.Equal(t, tokens, got.List.Usage.PromptTokens, "usage: the tokens of the texts, BOS included")
	assert.Equal(t, tokens, got.List.Usage.TotalTokens)
	assert.Equal(t, m.Info().ContextLength, got.Truncated.Usage.PromptTokens, "a truncated text fills the context")
}

// Wrong requests reject with code invalid_argument and the field in the
// JS API's spelling; a text longer than the context with prompt_too_long;
// rerank on a model that does not rerank with unsupported_model; an
// aborted signal with aborted (an AbortError); after unload with no_model.
// The model generates llama2.c's tokens afterwards.
func TestBrowserEmbeddingsErrors(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		Paths []errorPath `json:"paths"`
		After []int       `json:"after"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const paths = [];
		const add = (name, code, field, run) => paths.push({ name, code, field, run });
		const create = (body, opts) => lm.embeddings.create(body, opts);
		const aborted = () => { const ac = new AbortController(); ac.abort(); return ac.signal; };
		add('create(null)', 'invalid_argument', '', () => create(null));
		add('create with no input', 'invalid_argument', 'input', () => create({}));
		add('create with input 5', 'invalid_argument', 'input', () => create({ input: 5 }));
		add('create with input []', 'invalid_argument', 'input', () => create({ input: [] }));
		add("create with input ''", 'invalid_argument', 'input', () => create({ input: '' }));
		add("create with input ['']", 'invalid_argument', 'input[0]', () => create({ input: [''] }));
		add("create with input ['a', '']", 'invalid_argument', 'input[1]', () => create({ input: ['a', ''] }));
		add("create with input ['a', 5]", 'invalid_argument', 'input[1]', () => create({ input: ['a', 5] }));
		add('create with 2049 inputs', 'invalid_argument', 'input', () => create({ input: new Array(2049).fill('a') }));
		add("create with encoding_format: 'hex'", 'invalid_argument', 'encoding_format', () => create({ input: 'a', encoding_format: 'hex' }));
		add('create with dimensions: 7', 'invalid_argument', 'dimensions', () => create({ input: 'a', dimensions: 7 }));
		add('create with dimensions: 1.5', 'invalid_argument', 'dimensions', () => create({ input: 'a', dimensions: 1.5 }));
		add('create with normalize: 1', 'invalid_argument', 'normalize', () => create({ input: 'a', normalize: 1 }));
		add("create with truncate: 'yes'", 'invalid_argument', 'truncate', () => create({ input: 'a', truncate: 'yes' }));
		add('create with an unknown field', 'invalid_argument', '', () => create({ input: 'a', encodingFormat: 'float' }));
		add('create with signal: {}', 'invalid_argument', 'signal', () => create({ input: 'a' }, { signal: {} }));
		add('create with a text longer than the context', 'prompt_too_long', '', () => create({ input: ['a', 'Once upon a time '.repeat(200)] }));
		add('create with an aborted signal', 'aborted', '', () => create({ input: 'a' }, { signal: aborted() }));
		add('create with an aborted signal in the body', 'aborted', '', () => create({ input: 'a', signal: aborted() }));
		add('rerank with a model that does not rerank', 'unsupported_model', '', () => lm.rerank({ query: 'q', documents: ['a', 'b'] }));
		add('rerank(5)', 'invalid_argument', '', () => lm.rerank(5));
		add('rerank with query 5', 'invalid_argument', 'query', () => lm.rerank({ query: 5, documents: ['a'] }));
		add("rerank with documents 'a'", 'invalid_argument', 'documents', () => lm.rerank({ query: 'q', documents: 'a' }));
		add('rerank with documents [1]', 'invalid_argument', 'documents[0]', () => lm.rerank({ query: 'q', documents: [1] }));
		add('rerank with top_n: 0', 'invalid_argument', 'top_n', () => lm.rerank({ query: 'q', documents: ['a'], top_n: 0 }));
		add('rerank with return_documents: 1', 'invalid_argument', 'return_documents', () => lm.rerank({ query: 'q', documents: ['a'], return_documents: 1 }));
		add('rerank with an unknown field', 'invalid_argument', '', () => lm.rerank({ query: 'q', documents: ['a'], topN: 1 }));
		add('rerank with an aborted signal', 'aborted', '', () => lm.rerank({ query: 'q', documents: ['a'] }, { signal: aborted() }));
		const gone = await WasmLM.load();
		gone.unload();
		add('create after unload()', 'no_model', '', () => gone.embeddings.create({ input: 'a' }));
		add('rerank after unload()', 'no_model', '', () => gone.rerank({ query: 'q', documents: ['a'] }));
		const out = [];
		for (const p of paths) {
			let got = null;
			try {
				await p.run();
			} catch (e) {
				got = { isError: e instanceof Error, name: String(e?.name ?? ''), message: String(e?.message ?? e),
					code: typeof e?.code === 'string' ? e.code : '', field: typeof e?.field === 'string' ? e.field : '' };
			}
			out.push({ name: p.name, code: p.code, field: p.field, got });
		}
		const { tokens } = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 10 });
		lm.unload();
		return { paths: out, after: tokens };
	`))
	codes := documentedErrorCodes(t)
	for _, p := range got.Paths {
		e := p.Got
		if !assert.NotNil(t, e, "%s: did not reject", p.Name) {
			continue
		}
		assert.True(t, e.IsError, "%s: rejected with a %s, not an Error", p.Name, e.Name)
		assert.Contains(t, codes, e.Code, "%s: code %q is not documented (%s)", p.Name, e.Code, e.Message)
		assert.Equal(t, p.Code, e.Code, "%s: %s", p.Name, e.Message)
		assert.Equal(t, p.Field, e.Field, "%s: field (%s)", p.Name, e.Message)
		if e.Field != "" {
			assert.Contains(t, e.Message, e.Field+" ", "%s: the message names the field", p.Name)
		}
		if e.Code == "aborted" {
			assert.Equal(t, "AbortError", e.Name, p.Name)
		}
	}
	assert.Equal(t, golden.RuncStories260K(t).Runs[1].GeneratedIDs[:10], got.After, "the model generates after them all")
}

// An embedding waits its turn behind a generation (it is not refused as
// busy), and its signal aborts it while it waits and while it runs: a
// long call rejects with aborted soon after the abort, between the
// engine's passes, and the model works afterwards.
func TestBrowserEmbeddingsQueueAndAbort(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		Order          []string `json:"order"`
		QueuedAbort    string   `json:"queuedAbort"`
		StreamFinish   string   `json:"streamFinish"`
		RunningAbort   string   `json:"runningAbort"`
		AbortedAfterMs float64  `json:"abortedAfterMs"`
		WholeMs        float64  `json:"wholeMs"`
		After          []int    `json:"after"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const order = [];
		const codeOf = (p) => p.then(() => 'resolved', (e) => e.code);

		// Behind a stream: one embedding waits and resolves after it, one
		// is aborted while it waits.
		const waiting = new AbortController();
		let queued, aborted;
		let n = 0;
		const s = lm.stream('', { temperature: 0, maxTokens: 40 });
		for await (const c of s) {
			if (++n === 1) {
				queued = lm.embeddings.create({ input: 'Once upon a time' }).then(() => order.push('embedding'));
				aborted = codeOf(lm.embeddings.create({ input: 'a' }, { signal: waiting.signal }));
			}
			if (n === 3) waiting.abort();
		}
		order.push('stream');
		const streamFinish = (await s.result).finishReason;
		await queued;
		const queuedAbort = await aborted;

		// While it runs: 400 texts take a while; the abort lands between passes.
		const texts = Array.from({ length: 400 }, (_, i) => 'Once upon a time there was a cat number ' + i);
		let t0 = performance.now();
		await lm.embeddings.create({ input: texts });
		const wholeMs = performance.now() - t0;
		const running = new AbortController();
		t0 = performance.now();
		setTimeout(() => running.abort(), 50);
		const runningAbort = await codeOf(lm.embeddings.create({ input: texts }, { signal: running.signal }));
		const abortedAfterMs = performance.now() - t0;
		const { tokens: after } = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 10 });
		lm.unload();
		return { order, queuedAbort, streamFinish, runningAbort, abortedAfterMs, wholeMs, after };
	`))
	assert.Equal(t, []string{"stream", "embedding"}, got.Order, "the embedding waits for the stream")
	assert.Equal(t, "length", got.StreamFinish)
	assert.Equal(t, "aborted", got.QueuedAbort)
	assert.Equal(t, "aborted", got.RunningAbort)
	t.Logf("aborted after %.0f ms; the whole call takes %.0f ms", got.AbortedAfterMs, got.WholeMs)
	assert.Less(t, got.AbortedAfterMs, got.WholeMs/2, "the abort lands mid-call")
	assert.Equal(t, golden.RuncStories260K(t).Runs[1].GeneratedIDs[:10], got.After)
}

// web/README.md's example of embeddings runs as written, and gives what its
// comments say: a vector per text from lm.embeddings.create, of unit
// length, and the same vector decoded from base64.
func TestBrowserReadmeEmbeddingsExample(t *testing.T) {
	docHas(t, "web/README.md", embeddingsExample)
	tb := newTab(t, blankPage)
	body := runnable(embeddingsExample, map[string]string{"models/my-embedding-model.gguf": "/models/" + models.DefaultFile})
	got := eval[struct {
		Cat    []float64 `json:"cat"`
		Kitten []float64 `json:"kitten"`
		Stocks []float64 `json:"stocks"`
		Vector []float64 `json:"vector"`
		Tokens int       `json:"tokens"`
	}](t, tb, apiScript(body+`
		lm.unload();
		return { cat, kitten, stocks, vector: Array.from(vector), tokens: usage.prompt_tokens };
	`))
	want := nativeEmbeddings(t, []string{"A cat sat on the mat.", "A kitten slept on the rug.", "Stocks fell sharply today.", "A cat"}, engine.EmbedOptions{})
	assertSameVector(t, want[0], got.Cat, "cat")
	assertSameVector(t, want[1], got.Kitten, "kitten")
	assertSameVector(t, want[2], got.Stocks, "stocks")
	assertSameVector(t, want[3], got.Vector, "the vector from base64")
	assert.Positive(t, got.Tokens)
}

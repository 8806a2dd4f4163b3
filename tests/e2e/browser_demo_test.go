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
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// waitFor polls a JavaScript condition in the page (on animation frames)
// until it is true.
func waitFor(t testing.TB, tb *tab, cond string, timeout time.Duration) {
	t.Helper()
	_, err := chromedp.Run(tb.ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(timeout)))
	require.NoError(t, err, "waiting for %s", cond)
}

// typeInto replaces the text of an input or textarea as a person would:
// select it all, then type.
func typeInto(t *testing.T, tb *tab, id, s string) {
	t.Helper()
	eval[chromedp.Void](t, tb, `document.getElementById('`+id+`').select()`)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SendKeys(chromedp.ID(id), s)))
}

// text is an element's text content.
func text(t testing.TB, tb *tab, id string) string {
	t.Helper()
	s, err := chromedp.Run(tb.ctx, chromedp.TextContent(chromedp.ID(id)))
	require.NoError(t, err, "#%s", id)
	return s
}

// (g) The demo page, used as a person would: it loads the default model with
// a progress bar; type a prompt, set greedy sampling and a token budget,
// click Generate, watch the text grow, click Stop. The stats and the
// sampling picture fill in, and a screenshot goes to artifacts/demo.png.
// Then it generates again, and loads other models with the file picker: a
// GGUF file, then a llama2.c checkpoint with its tokenizer.bin.
func TestBrowserDemoPage(t *testing.T) {
	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	assert.Contains(t, text(t, tb, "status"), "stories260K ready in")
	assert.Contains(t, text(t, tb, "model-info"), "vocabulary 512")
	assert.Contains(t, text(t, tb, "model-info"), "SIMD kernels · 1 worker", "the default model runs on the SIMD kernels in one worker")

	typeInto(t, tb, "prompt", "Once upon a time")
	typeInto(t, tb, "max-tokens", "2000")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SendKeys(chromedp.ID("temperature"), kb.Home))) // the slider to 0: greedy
	assert.Equal(t, "0", text(t, tb, "temperature-value"))

	// The default model's greedy story ends by itself after a few hundred
	// tokens, sooner than a test polling from outside the page can click
	// Stop on a loaded machine. So an observer in the page notes the text at
	// 3 and at 8 tokens and clicks Stop at once; should the run still end by
	// itself first, it generates again (at most three times).
	const watch = `(() => {
		const out = document.getElementById('output'), w = window.stopWatch = {};
		const obs = new MutationObserver(() => {
			const n = out.querySelectorAll('.tok').length;
			if (n >= 3 && w.early === undefined) { w.early = out.textContent; w.seen = n; }
			if (w.early !== undefined && n >= w.seen + 5 && w.later === undefined) {
				w.later = out.textContent; obs.disconnect(); document.getElementById('stop').click();
			}
		});
		obs.observe(out, { childList: true, subtree: true, characterData: true });
		document.getElementById('finish').textContent = '–'; // as generating sets it, so the wait below is for this run
		return true;
	})()`
	var early, later string
	var seen int
	for attempt := 1; ; attempt++ {
		require.True(t, eval[bool](t, tb, watch))
		require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
		waitFor(t, tb, `document.getElementById('finish').textContent !== '–'`, 30*time.Second)
		finish := text(t, tb, "finish")
		if finish != "abort" && attempt < 3 {
			t.Logf("run %d ended by itself (%s) before Stop was clicked; generating again", attempt, finish)
			waitFor(t, tb, `!document.getElementById('generate').disabled`, 20*time.Second)
			continue
		}
		early = eval[string](t, tb, `window.stopWatch.early || ''`)
		later = eval[string](t, tb, `window.stopWatch.later || ''`)
		seen = eval[int](t, tb, `window.stopWatch.seen || 0`)
		break
	}
	assert.True(t, strings.HasPrefix(early, "Once upon a time"), "the output starts with the prompt: %q", early)
	assert.True(t, strings.HasPrefix(later, early), "the text grows: %q then %q", early, later)
	assert.Greater(t, len(later), len(early))
	assert.Equal(t, "abort", text(t, tb, "finish"), "Stop ends the generation")
	assert.Equal(t, "Stopped", text(t, tb, "status"))
	n, err := strconv.Atoi(text(t, tb, "ntokens"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, seen+5)
	assert.Less(t, n, greedyLength(t, "Once upon a time"), "it was stopped before greedy decoding ends by itself")
	assert.Regexp(t, `^\d+(\.\d+)? ms$`, text(t, tb, "ttft"))
	assert.Regexp(t, `^\d+$`, text(t, tb, "tps"))

	rows := eval[int](t, tb, `document.querySelectorAll('#trace tbody tr').length`)
	assert.Equal(t, 10, rows, "the sampling picture shows ten candidates")
	assert.Equal(t, 1, eval[int](t, tb, `document.querySelectorAll('#trace tbody tr.chosen').length`))
	enabled := eval[bool](t, tb, `!document.getElementById('generate').disabled && document.getElementById('stop').disabled`)
	assert.True(t, enabled, "Generate is enabled again, Stop disabled")

	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := artifactPath(t, "demo.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)

	// Generate again: the page keeps working after a stop.
	typeInto(t, tb, "max-tokens", "5")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, "length", text(t, tb, "finish"))
	assert.Equal(t, "5", text(t, tb, "ntokens"))

	// Load another model with the file picker: a GGUF file loads at once and
	// replaces the running model.
	gguf := filepath.Join(tb.site.dist, "models", models.DefaultFile)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SetUploadFiles(chromedp.ID("model-file"), []string{gguf})))
	waitFor(t, tb, `document.getElementById('status').textContent.startsWith('`+models.DefaultFile+` ready')`, 30*time.Second)
	assert.True(t, eval[bool](t, tb, `document.getElementById('tokenizer-row').hidden`), "a GGUF file needs no tokenizer")
	assert.Contains(t, text(t, tb, "model-info"), "GGUF")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, "5", text(t, tb, "ntokens"), "the model from the file generates")

	// A llama2.c checkpoint asks for its tokenizer.bin, then replaces the
	// running model.
	checkpoint, err := filepath.Abs("../../internal/testmodel/testdata/stories260K.bin")
	require.NoError(t, err)
	tok, err := filepath.Abs("../../internal/testmodel/testdata/tok512.bin")
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SetUploadFiles(chromedp.ID("model-file"), []string{checkpoint})))
	waitFor(t, tb, `!document.getElementById('tokenizer-row').hidden`, 10*time.Second)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SetUploadFiles(chromedp.ID("tokenizer-file"), []string{tok})))
	waitFor(t, tb, `document.getElementById('status').textContent.startsWith('stories260K.bin ready')`, 30*time.Second)
	assert.Contains(t, text(t, tb, "model-info"), "llama2.c")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, "5", text(t, tb, "ntokens"), "the model from the file generates")
}

// greedyLength is how many tokens the native engine generates greedily from
// prompt before it stops by itself (end of story or full context).
func greedyLength(t *testing.T, prompt string) int {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	res, err := s.Generate(context.Background(), prompt, engine.GenerateOptions{}, nil)
	require.NoError(t, err)
	return len(res.Tokens)
}

// The demo page's similarity panel ranks the texts by the cosine of their
// embeddings to the query's, as the native engine's embeddings rank them,
// with the scores it computes.
func TestBrowserDemoSimilarity(t *testing.T) {
	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	assert.False(t, eval[bool](t, tb, `document.querySelector('main').hidden`), "the default model generates: the playground shows")
	assert.True(t, eval[bool](t, tb, `document.getElementById('encoder-note').hidden`))
	assert.Contains(t, text(t, tb, "model-info"), "embeddings of 64 (mean pooling)")

	query, texts := "a cat on a mat", []string{"The cat sat on the mat.", "Once upon a time there was a little dog.", "Stocks fell sharply today."}
	typeInto(t, tb, "query", query)
	eval[chromedp.Void](t, tb, `document.getElementById('texts').value = `+jsonString(t, strings.Join(texts, "\n")))
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("compare"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	vectors := nativeEmbeddings(t, append([]string{query}, texts...), engine.EmbedOptions{})
	scores := make([]float64, len(texts))
	for i, v := range vectors[1:] {
		scores[i] = dot(v, vectors[0])
	}
	assertRanking(t, tb, texts, scores)
	assert.Regexp(t, `^\d+ tokens in \d+ ms$`, text(t, tb, "compare-stats"))

	// An empty query asks for one, and the earlier results go.
	eval[chromedp.Void](t, tb, `document.getElementById('query').value = ''`)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("compare"))))
	waitFor(t, tb, `document.querySelectorAll('#ranking tbody tr').length === 0`, 5*time.Second)
	assert.Contains(t, eval[string](t, tb, `document.body.textContent`), "Write a query to compare the texts with.")
	assert.Empty(t, text(t, tb, "compare-stats"))
}

// assertRanking checks the similarity panel's table: the texts ordered by
// score, the highest first (ties in the texts' order), each with its score
// to three decimals as the page prints it.
func assertRanking(t *testing.T, tb *tab, texts []string, scores []float64) {
	t.Helper()
	rows := eval[[][]string](t, tb, `Array.from(document.querySelectorAll('#ranking tbody tr'), (tr) => Array.from(tr.cells, (c) => c.textContent))`)
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	require.Len(t, rows, len(texts))
	for k, i := range order {
		assert.Equal(t, []string{texts[i], strconv.FormatFloat(scores[i], 'f', 3, 64)}, rows[k], "row %d", k)
	}
}

// dot is the dot product of two vectors in float64, summed in order as
// the page sums it: the cosine of unit vectors.
func dot(a, b []float32) float64 {
	s := 0.0
	for i, x := range a {
		s += float64(x) * float64(b[i])
	}
	return s
}

//go:build !js

package e2e

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// The demo's "Try a model" list: each entry, clicked, loads its hf: source
// (here from a stand-in for the Hub that the page's ?hfEndpoint= names,
// serving the default model's file at every path); each is listed with the
// same name, label (what it does), source, size and memory in
// docs/try-a-model.md.
func TestBrowserDemoTryAModel(t *testing.T) {
	model, err := os.ReadFile(filepath.Join(webSite(t).dist, "models", models.DefaultFile))
	require.NoError(t, err)
	hub := newHFStandIn(t, model)
	tb := newTab(t, "/?hfEndpoint="+url.QueryEscape(hub.URL))
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	type entry struct{ Name, What, Source, Size, Memory string }
	entries := eval[[]entry](t, tb, `Array.from(document.querySelectorAll('#try-list li'), (li) => {
		const b = li.querySelector('button');
		const [, what, size, memory] = li.textContent.slice(b.textContent.length).match(/^ (.+?) · (.+) download · (.+) in memory/);
		return { Name: b.textContent, What: what, Source: b.dataset.source, Size: size, Memory: memory };
	})`)
	require.Len(t, entries, 6)
	doc, err := os.ReadFile("../../docs/try-a-model.md")
	require.NoError(t, err)
	for i, e := range entries {
		row := docRow(string(doc), e.Source)
		require.NotEmpty(t, row, "docs/try-a-model.md lists %s", e.Source)
		assert.Contains(t, row, "| "+e.Name+" | "+e.What+" |", "the same name and what it does")
		assert.Contains(t, row, "| "+e.Size+" |", "the same size")
		assert.Contains(t, row, "| "+e.Memory+" |", "the same memory")

		owner, rest, _ := strings.Cut(strings.TrimPrefix(e.Source, "hf:"), "/")
		repo, file, _ := strings.Cut(rest, "/")
		eval[chromedp.Void](t, tb, `document.querySelectorAll('#try-list button')[`+strconv.Itoa(i)+`].click()`)
		waitFor(t, tb, `document.getElementById('status').textContent.startsWith(`+jsonString(t, file+" ready")+`)`, 30*time.Second)
		assert.Equal(t, file, text(t, tb, "model-name"))
		assert.Equal(t, e.Source, eval[string](t, tb, `document.getElementById('model-url').value`))
		assert.Positive(t, hub.hitsAt("/"+owner+"/"+repo+"/resolve/main/"+file), "%s came from its download URL", e.Source)
	}
}

// docRow is the line of a Markdown table in doc that holds s, or "".
func docRow(doc, s string) string {
	for line := range strings.Lines(doc) {
		if strings.HasPrefix(line, "|") && strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// The model's name stays on the page after a generation, beside a
// parameter count that says what it counts: the GGUF file's tensors hold
// stories260K's output matrix apart from the token embedding, which
// llama2.c's checkpoint (its 260K) shares.
func TestBrowserDemoModelName(t *testing.T) {
	gguf, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	checkpoint, err := os.ReadFile("../../internal/testmodel/testdata/stories260K.bin")
	require.NoError(t, err)
	tok, err := os.ReadFile("../../internal/testmodel/testdata/tok512.bin")
	require.NoError(t, err)
	llama2c, err := engine.Load(checkpoint, engine.LoadOptions{Tokenizer: tok})
	require.NoError(t, err)
	fileCount, sharedCount := gguf.Info().Parameters, llama2c.Info().Parameters
	require.Equal(t, int64(512*64), fileCount-sharedCount, "the file counts the output matrix a second time")
	assert.Equal(t, "260K", strconv.FormatInt(sharedCount/1000, 10)+"K")

	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	typeInto(t, tb, "max-tokens", "3")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	assert.Equal(t, models.DefaultName, text(t, tb, "model-name"), "the name stays after Done")
	title := eval[string](t, tb, `document.querySelector('#model-info .explained').title`)
	assert.Contains(t, title, strconv.FormatInt(fileCount/1000, 10)+",") // 292,800
	assert.Contains(t, title, "512 × 64 = 32,768")
	assert.Contains(t, text(t, tb, "params-note"), "293K")
}

// In JSON mode the sampling table lists only the tokens the grammar
// allows, each drawn in visible characters, and says the grammar masked
// the others.
func TestBrowserDemoJSONTrace(t *testing.T) {
	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("json"))))
	typeInto(t, tb, "max-tokens", "12")
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
	type step struct {
		Allowed, Rows int
		Texts         []string
		Summary       string
	}
	steps := eval[[]step](t, tb, `Array.from(document.querySelectorAll('#output .tok'), (tok, i) => {
		tok.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
		return {
			Allowed: wasmlmDemo.traces[i].trace.top.filter((c) => Number.isFinite(c.logit)).length,
			Rows: document.querySelectorAll('#trace tbody tr').length,
			Texts: Array.from(document.querySelectorAll('#trace td.token'), (td) => td.textContent),
			Summary: document.getElementById('trace-summary').textContent,
		};
	})`)
	require.NotEmpty(t, steps)
	masked := 0
	for i, s := range steps {
		assert.Equal(t, s.Allowed, s.Rows, "token %d: a row for each token the grammar allows", i+1)
		for _, text := range s.Texts {
			assert.False(t, strings.ContainsFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }), "token %d: %q is drawn visibly", i+1, text)
		}
		if s.Allowed < 10 {
			masked++
			assert.Contains(t, s.Summary, "The JSON grammar allowed only "+strconv.Itoa(s.Allowed)+" token", "token %d", i+1)
		}
	}
	assert.Positive(t, masked, "the grammar masked some of the ten most likely tokens")
}

// contrastScript is the lowest contrast ratio (WCAG 2) of the demo's
// labels against what lies behind them: each bar's number against the
// bar's fill and its track, and the muted texts against their card.
const contrastScript = `(() => {
	const rgb = (c) => c.match(/[\d.]+/g).slice(0, 4).map(Number);
	const lum = (c) => {
		const [r, g, b] = rgb(c).slice(0, 3).map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
		return 0.2126 * r + 0.7152 * g + 0.0722 * b;
	};
	const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
	const behind = (e) => {
		for (; e; e = e.parentElement) {
			const c = getComputedStyle(e).backgroundColor;
			if (rgb(c)[3] !== 0) return c;
		}
		return 'rgb(255, 255, 255)';
	};
	const worst = { ratio: Infinity, what: '' };
	const check = (what, fg, bg) => { const r = ratio(fg, bg); if (r < worst.ratio) Object.assign(worst, { ratio: r, what }); };
	for (const span of document.querySelectorAll('.bar span')) {
		const fg = getComputedStyle(span).color;
		const fill = span.parentElement.querySelector('i');
		if (fill && fill.getBoundingClientRect().width > 0) check(span.textContent + ' on its fill', fg, getComputedStyle(fill).backgroundColor);
		check(span.textContent + ' on its track', fg, behind(span.parentElement));
	}
	for (const e of document.querySelectorAll('#ranking th, #compare-stats, #similarity .hint, #trace th, #trace-summary, #model-info')) {
		check(e.id || e.textContent.slice(0, 20), getComputedStyle(e).color, behind(e));
	}
	return worst;
})()`

// The similarity ranking and the sampling table keep every label at 4.5:1
// against what lies behind it (WCAG AA), in the light and the dark color
// scheme.
func TestBrowserDemoContrast(t *testing.T) {
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			tb := newTab(t, "/")
			require.NoError(t, chromedp.Do(tb.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
				_, err := cdp.Call(ctx, target, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
				})
				return err
			})))
			waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
			assert.Equal(t, scheme == "dark", eval[bool](t, tb, `matchMedia('(prefers-color-scheme: dark)').matches`))
			typeInto(t, tb, "max-tokens", "8")
			require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
			waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 20*time.Second)
			require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("compare"))))
			waitFor(t, tb, `document.querySelectorAll('#ranking tbody tr').length === 3`, 20*time.Second)
			type worst struct {
				Ratio float64
				What  string
			}
			w := eval[worst](t, tb, contrastScript)
			assert.GreaterOrEqual(t, w.Ratio, 4.5, "the lowest contrast: %s", w.What)
			png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(artifactPath(t, "demo-"+scheme+".png"), png, 0o644))
		})
	}
}

// The model line names a file's weight type by the bytes its tensors hold:
// a BERT file in F16 (all-MiniLM-L6-v2's layout, smaller) has more F32
// biases and norms than F16 matrices, and says F16.
func TestBrowserDemoWeightType(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{Arch: "bert", Shape: modelgen.Shape{Dim: 32, HiddenDim: 64, Layers: 2, Heads: 2, ContextLength: 64}, Type: tensor.F16, Seed: 1})
	require.NoError(t, err)
	m, err := engine.LoadGGUF(data)
	require.NoError(t, err)
	require.Greater(t, m.Info().TensorTypes["F32"], m.Info().TensorTypes["F16"], "more F32 tensors than F16")
	path := filepath.Join(t.TempDir(), "minilm-f16.gguf")
	require.NoError(t, os.WriteFile(path, data, 0o644))

	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.SetUploadFiles(chromedp.ID("model-file"), []string{path})))
	waitFor(t, tb, `document.getElementById('status').textContent.startsWith('minilm-f16.gguf ready')`, 30*time.Second)
	assert.Contains(t, text(t, tb, "model-info"), " GGUF (F16)")
	assert.Contains(t, text(t, tb, "model-info"), "bert")
}

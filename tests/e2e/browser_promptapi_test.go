//go:build !js

package e2e

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/internal/headless"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// promptAPIChecks is checks(origin): every Prompt API behaviour the
// specification's web-platform-tests check that applies to a text model,
// against web/prompt-api.js with the default model.
//
//go:embed promptapi_checks.js
var promptAPIChecks string

// promptAPIResult is what checks resolves to.
type promptAPIResult struct {
	Failures []string `json:"failures"`
	HadOwn   string   `json:"hadOwn"`   // typeof globalThis.LanguageModel before installPolyfill
	Template string   `json:"template"` // the model's chat template family
	Error    string   `json:"error"`
}

// inPage runs the checks in the page; inWorker in a module Web Worker it starts.
const (
	inPage   = `(async () => { ` + "\n%s\n" + ` return JSON.stringify(await checks(location.origin, %s)); })()`
	inWorker = `(async () => {
		const src = %s + '\nchecks(self.origin).then((r) => postMessage(JSON.stringify(r)), (e) => postMessage(JSON.stringify({ error: String(e && e.stack || e) })));';
		const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
		return await new Promise((resolve) => { w.onmessage = (e) => { w.terminate(); resolve(e.data); }; });
	})()`
)

// runPromptAPIChecks runs the checks in tb's page (in a Web Worker when
// worker) with the model at path on the site ("": the default model).
func runPromptAPIChecks(t *testing.T, tb *tab, worker bool, path string) promptAPIResult {
	t.Helper()
	tb.expect("the server responded with a status of 404") // the NetworkError check's no-such-model.gguf
	var expr string
	if worker {
		quoted, err := json.Marshal(promptAPIChecks)
		require.NoError(t, err)
		expr = fmt.Sprintf(inWorker, quoted)
	} else {
		src := "undefined"
		if path != "" {
			quoted, err := json.Marshal(path)
			require.NoError(t, err)
			src = "new URL(" + string(quoted) + ", location.href).href"
		}
		expr = fmt.Sprintf(inPage, promptAPIChecks, src)
	}
	var r promptAPIResult
	require.NoError(t, json.Unmarshal([]byte(eval[string](t, tb, expr)), &r))
	require.Empty(t, r.Error)
	assert.Empty(t, r.Failures, "the Prompt API's behaviours that failed")
	return r
}

// TestBrowserPromptAPI: installPolyfill replaces Chromium's own
// LanguageModel, which answers 'unavailable' without its model, in a page
// and in a Web Worker (where Chromium has none), and where the browser's
// class is removed (--disable-features=AIPromptAPI); in each, the sessions
// behave as the specification's web-platform-tests check, and greedy
// replies equal lm.chat.completions.create's for the same messages — with
// the default model's plain template, and with a ChatML template.
func TestBrowserPromptAPI(t *testing.T) {
	s := webSite(t)
	t.Run("page", func(t *testing.T) {
		r := runPromptAPIChecks(t, newTab(t, blankPage), false, "")
		assert.Equal(t, "function", r.HadOwn, "Chromium's own LanguageModel, as shipped")
		assert.Equal(t, "plain", r.Template)
	})
	t.Run("chat template", func(t *testing.T) {
		data, err := modelgen.SetKV(models.Default(), "tokenizer.chat_template", gguf.ValueOf("chatml"))
		require.NoError(t, err)
		path, _ := serveFile(t, s, "stories260K-chatml.gguf", data)
		r := runPromptAPIChecks(t, newTab(t, blankPage), false, path)
		assert.Equal(t, "chatml", r.Template)
	})
	t.Run("worker", func(t *testing.T) {
		r := runPromptAPIChecks(t, newTab(t, blankPage), true, "")
		assert.Equal(t, "undefined", r.HadOwn, "Chromium has no LanguageModel in workers")
	})
	t.Run("removed", func(t *testing.T) {
		ctx, stop, err := headless.StartWith("wasmlm-chromium-noprompt-", map[string]any{
			"disable-features": "site-per-process,Translate,BlinkGenPropertyTrees,AIPromptAPI",
		})
		require.NoError(t, err)
		t.Cleanup(stop)
		r := runPromptAPIChecks(t, openTabIn(t, ctx, s, blankPage, nil), false, "")
		assert.Equal(t, "undefined", r.HadOwn, "--disable-features=AIPromptAPI removes the browser's class")
	})
}

// TestBrowserPromptAPISessionsInNode runs promptapi_session.test.mjs: the
// session's tool loop and eviction rule over a scripted model, with node
// --test (prompt-api.js runs in Node.js too). Part of the browser suite
// (make test-e2e-browser), the suite of web/'s modules, without Chromium.
func TestBrowserPromptAPISessionsInNode(t *testing.T) {
	out, err := exec.Command("node", "--test", "promptapi_session.test.mjs").CombinedOutput()
	require.NoError(t, err, "node --test promptapi_session.test.mjs:\n%s", out)
}

// TestBrowserPromptAPIRegexpGrammars: the grammars prompt-api-regexp.js makes of
// RegExps, alone and after a reply's prefix, accept (by package grammar,
// which the engine samples with) exactly the samples for which
// re.test(prefix + sample) is true (promptapi_regexp_cases.mjs); a prefix
// is refused only when no sample completes it to a match. In the browser
// suite, without Chromium, as TestBrowserPromptAPISessionsInNode.
func TestBrowserPromptAPIRegexpGrammars(t *testing.T) {
	out, err := exec.Command("node", "promptapi_regexp_cases.mjs").Output()
	require.NoError(t, err)
	var cases []struct {
		Pattern, Prefix string
		Grammar         *string
		Refused         bool
		Samples         [][2]any
	}
	require.NoError(t, json.Unmarshal(out, &cases))
	require.NotEmpty(t, cases)
	for _, c := range cases {
		name := fmt.Sprintf("%s after %q", c.Pattern, c.Prefix)
		if c.Refused {
			for _, s := range c.Samples {
				assert.False(t, s[1].(bool), "%s: refused, but %q completes it", name, s[0])
			}
			continue
		}
		require.NotNil(t, c.Grammar, name)
		g, err := grammar.Parse(*c.Grammar)
		require.NoError(t, err, "%s:\n%s", name, *c.Grammar)
		matches := 0
		for _, s := range c.Samples {
			text, want := s[0].(string), s[1].(bool)
			assert.Equal(t, want, g.Accepts(text), "%s: sample %q\n%s", name, text, *c.Grammar)
			if want {
				matches++
			}
		}
		assert.Positive(t, matches, "%s: no sample matches; the case checks nothing", name)
	}
}

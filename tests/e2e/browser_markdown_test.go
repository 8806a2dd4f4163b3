//go:build !js

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markdownTags are the elements web/demo/markdown.js makes (and the div that
// holds them in the tests).
var markdownTags = []string{"a", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6",
	"hr", "li", "ol", "p", "pre", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul"}

// markdownScript renders each of the texts with web/demo/markdown.js in the
// page and returns, per text, the rendered nodes as HTML (serialised by
// the browser from the DOM the renderer built, so escaped text shows as
// &lt;...).
func markdownScript(texts string) string {
	return `(async () => {
		const { renderMarkdown } = await import('/markdown.js');
		const texts = ` + texts + `;
		return texts.map((t) => {
			const div = document.createElement('div');
			div.append(renderMarkdown(t));
			return div.innerHTML;
		});
	})()`
}

// The chat demo's Markdown renderer (web/demo/markdown.js) renders what chat
// models write: paragraphs with line breaks, emphasis, code spans and
// fenced blocks (an unclosed fence, as a streamed reply has it, runs to
// the end), lists nested by indentation, quotes, headings, rules, tables
// and http(s) links. These are the renderer's own specification, checked
// against the DOM it builds.
func TestBrowserChatMarkdown(t *testing.T) {
	tb := newTab(t, blankPage)
	cases := []struct{ in, want string }{
		{"Hello, world.", "<p>Hello, world.</p>"},
		{"one\ntwo\n\nthree", "<p>one<br>two</p><p>three</p>"},
		{"**bold**, __bold__, *it*, _it_, ~~no~~", "<p><strong>bold</strong>, <strong>bold</strong>, <em>it</em>, <em>it</em>, <del>no</del></p>"},
		{"***both*** and *a **b** c*", "<p><strong><em>both</em></strong> and <em>a <strong>b</strong> c</em></p>"},
		{"snake_case_name and 2 * 3 * 4", "<p>snake_case_name and 2 * 3 * 4</p>"},
		{"use `x <y>` or ``a ` b``", "<p>use <code>x &lt;y&gt;</code> or <code>a ` b</code></p>"},
		{`\*not it\* and \_not\_`, "<p>*not it* and _not_</p>"},
		{"```go\nfmt.Println(\"<b>\")\n\n**x**\n```\nafter", `<pre><code class="language-go">fmt.Println("&lt;b&gt;")` + "\n\n" + `**x**</code></pre><p>after</p>`},
		{"~~~\nstreaming, unclosed", "<pre><code>streaming, unclosed</code></pre>"},
		{"# Title\n## Sub ##\ntext", "<h1>Title</h1><h2>Sub</h2><p>text</p>"},
		{"- a\n- b *c*\n  more\n- d", "<ul><li>a</li><li>b <em>c</em><br>more</li><li>d</li></ul>"},
		{"1. one\n2. two\n   - nested\n   - list\n3. three", "<ol><li>one</li><li><p>two</p><ul><li>nested</li><li>list</li></ul></li><li>three</li></ol>"},
		{"3) three\n4) four", `<ol start="3"><li>three</li><li>four</li></ol>`},
		{"text\n- item", "<p>text</p><ul><li>item</li></ul>"},
		{"> quoted\n> **too**\n\nnot", "<blockquote><p>quoted<br><strong>too</strong></p></blockquote><p>not</p>"},
		{"a\n\n---\n\nb", "<p>a</p><hr><p>b</p>"},
		{"| a | b |\n|:--|--:|\n| 1 | *2* |", `<table><thead><tr><th>a</th><th class="align-right">b</th></tr></thead><tbody><tr><td>1</td><td class="align-right"><em>2</em></td></tr></tbody></table>`},
		{"[wasmlm](https://example.com/a_(b)) and <https://example.com/x> and https://example.com/y.",
			`<p><a href="https://example.com/a_(b)" rel="noopener noreferrer" target="_blank">wasmlm</a> and ` +
				`<a href="https://example.com/x" rel="noopener noreferrer" target="_blank">https://example.com/x</a> and ` +
				`<a href="https://example.com/y" rel="noopener noreferrer" target="_blank">https://example.com/y</a>.</p>`},
		{"![a cat](https://example.com/cat.png)", `<p><a href="https://example.com/cat.png" rel="noopener noreferrer" target="_blank">a cat</a></p>`},
		{"", ""},
	}
	in := make([]string, len(cases))
	for i, c := range cases {
		in[i] = c.in
	}
	got := eval[[]string](t, tb, markdownScript(jsonString(t, in)))
	require.Len(t, got, len(cases))
	for i, c := range cases {
		assert.Equal(t, c.want, got[i], "markdown %q", c.in)
	}
}

// Markdown is rendered safely: HTML in model text is shown as text, never
// parsed, links go only to http(s) URLs (others show as their text), images
// are never loaded, and nothing the text says becomes an event handler or
// runs. The rendered nodes are put in the document and left a moment, so
// that a handler that got through would have fired.
func TestBrowserChatMarkdownSafety(t *testing.T) {
	tb := newTab(t, blankPage)
	hostile := []string{
		`<img src=x onerror="window.pwned = 'img'">`,
		`<script>window.pwned = 'script'</script>`,
		`<a href="javascript:window.pwned='a'">click</a>`,
		`[click](javascript:window.pwned='link')`,
		`[click](JaVaScRiPt:window.pwned='case')`,
		"[click](  javascript:window.pwned='space')",
		`[click](java	script:window.pwned='tab')`,
		`[click](data:text/html,<script>window.pwned='data'</script>)`,
		`[click](vbscript:msgbox)`,
		`[click](/relative/path)`,
		`[click](//example.com/protocol-relative)`,
		`![x](javascript:window.pwned='image')`,
		`![x](https://example.com/tracker.png)`,
		`<javascript:window.pwned='autolink'>`,
		"```html\n<img src=x onerror=\"window.pwned='fence'\">\n```",
		"`<svg onload=\"window.pwned='code'\">`",
		`**<b onmouseover="window.pwned='bold'">x</b>**`,
		`<iframe srcdoc="<script>parent.pwned='iframe'</script>"></iframe>`,
		"| <img src=x onerror=\"window.pwned='table'\"> |\n|---|\n| [x](javascript:window.pwned='cell') |",
		"> <style>body{display:none}</style>",
		`[x](https://example.com/" onmouseover="window.pwned='attr')`,
	}
	type report struct {
		Tags     []string `json:"tags"`
		Attrs    []string `json:"attrs"`
		Hrefs    []string `json:"hrefs"`
		Rels     []string `json:"rels"`
		Text     []string `json:"text"`
		Pwned    any      `json:"pwned"`
		Requests []string `json:"requests"`
	}
	got := eval[report](t, tb, `(async () => {
		const { renderMarkdown } = await import('/markdown.js');
		const texts = `+jsonString(t, hostile)+`;
		const root = document.createElement('div');
		document.body.append(root);
		const text = texts.map((t) => {
			const div = document.createElement('div');
			div.append(renderMarkdown(t));
			root.append(div);
			return div.textContent;
		});
		for (const e of root.querySelectorAll('*')) e.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
		await new Promise((r) => setTimeout(r, 300));
		const all = Array.from(root.querySelectorAll('*'));
		return {
			tags: [...new Set(all.map((e) => e.localName))].sort(),
			attrs: [...new Set(all.flatMap((e) => Array.from(e.attributes, (a) => a.name)))].sort(),
			hrefs: Array.from(root.querySelectorAll('a'), (a) => a.href),
			rels: Array.from(root.querySelectorAll('a'), (a) => a.rel),
			text,
			pwned: window.pwned ?? null,
			requests: performance.getEntriesByType('resource').map((e) => e.name).filter((n) => !n.endsWith('/markdown.js')),
		};
	})()`)
	assert.Nil(t, got.Pwned, "nothing in the text ran")
	assert.Subset(t, markdownTags, got.Tags,
		"only the renderer's own tags: no img, script, iframe, svg, style")
	assert.Subset(t, []string{"class", "href", "rel", "target"}, got.Attrs, "no event handler or other attribute")
	// The last text's bare URL is a link, without the quote and what follows.
	assert.Equal(t, []string{"https://example.com/tracker.png", "https://example.com/"}, got.Hrefs, "links only to http(s) URLs")
	for _, rel := range got.Rels {
		assert.Equal(t, "noopener noreferrer", rel)
	}
	assert.Empty(t, got.Requests, "no image or anything else was fetched")
	// What was not rendered is shown as the text it is.
	assert.Equal(t, hostile[0], got.Text[0])
	assert.Equal(t, hostile[1], got.Text[1])
	assert.Equal(t, "click", got.Text[3], "a javascript: link is its text")
	assert.Equal(t, "click", got.Text[9], "a relative link is its text")
	assert.Equal(t, "x", got.Text[11], "an image of a javascript: URL is its alt text")
	assert.Equal(t, `<img src=x onerror="window.pwned='fence'">`, got.Text[14])
}

// BenchmarkBrowserChatMarkdown times markdown.js on 20,000-fold repeats of
// the inputs a naive renderer is quadratic on (unclosed emphasis, brackets,
// backtick runs, deep lists, runs of blank lines): a reply is rendered
// again each frame while it streams. The first renderer took 25.6 s on one
// of them; make bench-e2e reports each case's milliseconds (a benchmark,
// not a test: speed is never a test's assertion here).
func BenchmarkBrowserChatMarkdown(b *testing.B) {
	tb := newTab(b, blankPage)
	got := eval[map[string]float64](b, tb, `(async () => {
		const { renderMarkdown } = await import('/markdown.js');
		const n = 20000;
		const tick = String.fromCharCode(96);
		const texts = {
			em: '*a '.repeat(n), strong: '**a '.repeat(n), underscores: '_a'.repeat(n * 1.5), brackets: '['.repeat(n * 3),
			ticks: ('Ta' + 'TT').replaceAll('T', tick).repeat(n * 0.75), mixed: '*a **b _c ~~d Te [f](g '.replaceAll('T', tick).repeat(n / 8),
			list: Array.from({ length: n / 4 }, (_, i) => ' '.repeat(i % 40) + '- x\n').join(''),
			blanks: '- x' + '\n'.repeat(n * 3) + '  y',
		};
		const ms = {};
		for (const [name, text] of Object.entries(texts)) {
			const start = performance.now();
			renderMarkdown(text);
			ms[name] = performance.now() - start;
		}
		return ms;
	})()`)
	require.Len(b, got, 8)
	for name, ms := range got {
		b.ReportMetric(ms, name+"-ms")
	}
}

//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/models"
)

// npmBundlerExample is web/README.md's app for a bundler, which TestNPMVite
// and TestNPMWebpack build as it is written.
const npmBundlerExample = "```js\n" + `// main.js
import { WasmLM } from 'wasmlm';
import { DEFAULT_MODEL } from 'wasmlm/default-model'; // with a model of your own, leave this out: the app then does not ship it

const lm = await WasmLM.load(DEFAULT_MODEL);             // or WasmLM.load('https://example.com/my-model.gguf')
const out = document.querySelector('#out');
for await (const chunk of lm.stream('Once upon a time', { temperature: 0, maxTokens: 100 })) {
  out.textContent += chunk.text;
}
` + "```\n"

// npmNodeExample is web/README.md's program for Node.js (and Deno and Bun),
// which TestNPMNode, TestNPMDeno and TestNPMBun run as it is written (with
// the package's default model for 'models/my-model.gguf').
const npmNodeExample = "```js\n" + `// main.mjs
import { WasmLM } from 'wasmlm';

const lm = await WasmLM.load('models/my-model.gguf');    // a file path (or a URL); no argument: the default model
for await (const chunk of lm.stream('Once upon a time', { temperature: 0, maxTokens: 100 })) {
  process.stdout.write(chunk.text);
}
lm.unload();                                             // frees the model now; without it the program still exits when done
` + "```\n"

// npmCDNExample is web/README.md's page importing the package from a CDN,
// which TestNPMFromAnotherOrigin serves from another origin as it is
// written (with that origin for the CDN's).
const npmCDNExample = "```html\n" + `<pre id="out"></pre>
<script type="module">
  import { WasmLM } from 'https://cdn.jsdelivr.net/npm/wasmlm@0/wasmlm.js';
  const lm = await WasmLM.load();                         // the default model, beside wasmlm.js on the CDN
  const out = document.querySelector('#out');
  for await (const chunk of lm.stream('Once upon a time', { temperature: 0, maxTokens: 100 })) out.textContent += chunk.text;
</script>
` + "```\n"

// codeOf is an example's code, without its fences.
func codeOf(example string) string {
	return example[strings.Index(example, "\n")+1 : strings.LastIndex(example, "```")]
}

// greedyOnceUponATime is the native engine's greedy text for the
// examples' prompt and length, by the default model; it must start
// llama2.c's greedy text for the prompt, which it is a shorter run of.
func greedyOnceUponATime(t *testing.T) string {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	res, err := s.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{MaxTokens: 100}, nil)
	require.NoError(t, err)
	require.Len(t, res.Tokens, 100)
	g := golden.RuncStories260K(t).Runs[1]
	require.Equal(t, "Once upon a time", g.Prompt)
	require.True(t, strings.HasPrefix(g.Text, g.Prompt+res.Text), "the native greedy text %q must continue llama2.c's %q", res.Text, g.Text)
	return res.Text
}

// The package holds what it must and nothing else, its manifest points
// every entry at a file it holds, and web/README.md states its size.
func TestNPMPackContents(t *testing.T) {
	p := npmPackage(t)
	var got []string
	for _, f := range p.info.Files {
		got = append(got, f.Path)
	}
	slices.Sort(got)
	want := []string{
		"LICENSE", "README.md", "cache-io.js", "cache-opfs.js", "cache.js", "cache.worker.js", "chat-completions.js", "sessions.js",
		"default-model.d.ts", "default-model.js", "embeddings.js", "engine.js", "errors.js", "host.js", "load.js",
		"prompt-api.d.ts", "prompt-api.js", "prompt-api-regexp.js", "prompt-api.node.js",
		"serve-engine.d.ts", "serve-engine.js",
		"models/LICENSE", "models/" + models.DefaultFile, "package.json", "reader.js", "serve.js", "sha256.js", "shared.js", "shared-worker.js", "simd.js", "version.js",
		"wasm_exec.js", "wasmlm-serve.wasm", "wasmlm-simd-relaxed.wasm", "wasmlm-simd.wasm", "wasmlm.d.ts", "wasmlm.js",
		"wasmlm.node-fetch.js", "wasmlm.node-worker.js", "wasmlm.node.js", "wasmlm.sw.js", "wasmlm.wasm", "wasmlm.worker.js",
		"wasmlm-cli.js",
	}
	slices.Sort(want)
	assert.Equal(t, want, got, "the files npm pack puts in the package")

	version, err := os.ReadFile(filepath.Join(repoRoot(t), "VERSION"))
	require.NoError(t, err)
	assert.Equal(t, "wasmlm", p.info.Name)
	assert.Equal(t, strings.TrimSpace(string(version)), p.info.Version, "the version is the VERSION file's")

	// Every entry of exports names a file of the package.
	dir := npmApp(t, nil)
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "wasmlm", "package.json"))
	require.NoError(t, err)
	var manifest struct {
		Exports map[string]any `json:"exports"`
		Bin     map[string]any `json:"bin"`
		License string         `json:"license"`
	}
	require.NoError(t, json.Unmarshal(raw, &manifest))
	// The package's LICENSE is the licence its package.json names.
	license, err := os.ReadFile(filepath.Join(dir, "node_modules", "wasmlm", "LICENSE"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(license), manifest.License+" License\n"), "LICENSE is the %s licence: %.40q", manifest.License, license)
	var targets []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			targets = append(targets, strings.TrimPrefix(v, "./"))
		case map[string]any:
			for _, w := range v {
				walk(w)
			}
		}
	}
	walk(manifest.Exports)
	require.NotEmpty(t, targets)
	for _, target := range targets {
		assert.Contains(t, got, target, "package.json's exports name %s", target)
	}
	// Its command line, npx wasmlm (TestNPMServeCommandLine runs it).
	targets = nil
	walk(manifest.Bin)
	assert.Equal(t, []string{"wasmlm-cli.js"}, targets, "package.json's bin: wasmlm")

	// web/README.md's "N MB packed (M MB unpacked)", to a tenth of a megabyte.
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "web", "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile(`npm package is ([0-9.]+) MB packed \(([0-9.]+) MB unpacked\)`).FindSubmatch(readme)
	require.NotNil(t, m, "web/README.md must say: the npm package is N MB packed (M MB unpacked)")
	mb := func(n int) string { return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) }
	assert.Equal(t, mb(p.info.Size), string(m[1]), "packed size in web/README.md (%d bytes)", p.info.Size)
	assert.Equal(t, mb(p.info.UnpackedSize), string(m[2]), "unpacked size in web/README.md (%d bytes)", p.info.UnpackedSize)
	t.Logf("%s@%s: %d files, %d bytes packed, %d unpacked", p.info.Name, p.info.Version, len(got), p.info.Size, p.info.UnpackedSize)
}

// nodeApp is an app holding web/README.md's program for Node.js, its model
// path replaced by source (a JavaScript expression; empty: none).
func nodeApp(t *testing.T, source string) string {
	t.Helper()
	docHas(t, "web/README.md", npmNodeExample)
	code := strings.Replace(codeOf(npmNodeExample), "'models/my-model.gguf'", source, 1)
	return npmApp(t, map[string]string{"main.mjs": code})
}

// web/README.md's program runs in Node.js as written: the greedy text, from a
// file path and from the default model (no argument).
func TestNPMNode(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	want := greedyOnceUponATime(t)
	for name, source := range map[string]string{
		"file path":     "'node_modules/wasmlm/models/" + models.DefaultFile + "'",
		"default model": "",
	} {
		t.Run(name, func(t *testing.T) {
			dir := nodeApp(t, source)
			assert.Equal(t, want, runIn(t, dir, nil, node, "main.mjs"))
		})
	}
}

// nodePromptAPI is a Node.js program of the Prompt API alone (wasmlm/prompt-api):
// a greedy session's reply, and lm.chat.completions.create's for the same
// message over the same model, loaded from its file path, in the model's
// whole context, where the greedy reply ends by itself (a reply the window
// cuts keeps room for its closing markup, so it ends sooner than chat's).
const nodePromptAPI = `import { LanguageModel, installPolyfill } from 'wasmlm/prompt-api';
import { WasmLM } from 'wasmlm';
const src = 'node_modules/wasmlm/models/` + models.DefaultFile + `';
const lm = await WasmLM.load(src);
await installPolyfill(lm);
const session = await LanguageModel.create({ temperature: 0, topK: 1 });
const reply = await session.prompt('Once upon a time');
const want = await lm.chat.completions.create({ messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, top_k: 1 });
await installPolyfill(src); // loads the model itself, in a worker thread
const own = await (await LanguageModel.create({ temperature: 0, topK: 1 })).prompt('Once upon a time');
console.log(JSON.stringify({ reply, own, want: want.choices[0].message.content, globalIsOurs: globalThis.LanguageModel === LanguageModel }));
`

// wasmlm/prompt-api runs in Node.js: its node entry starts the model in a
// worker thread as the package's main entry does, from a file path, and a
// session's greedy reply is chat completions' for the same message.
func TestNPMNodePromptAPI(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	dir := npmApp(t, map[string]string{"main.mjs": nodePromptAPI})
	var got struct {
		Reply, Own, Want string
		GlobalIsOurs     bool
	}
	require.NoError(t, json.Unmarshal([]byte(runWithin(t, time.Minute, dir, nil, node, "main.mjs")), &got))
	assert.NotEmpty(t, got.Want)
	assert.Equal(t, got.Want, got.Reply, "the session's reply over the page's model")
	assert.Equal(t, got.Want, got.Own, "the session's reply over the model installPolyfill loads")
	assert.True(t, got.GlobalIsOurs, "installPolyfill sets globalThis.LanguageModel (Node.js has none)")
}

// nodeHF loads the default model's file by an hf: source, from the
// endpoint HF_ENDPOINT names.
const nodeHF = `import { WasmLM } from 'wasmlm';
const lm = await WasmLM.load('hf:acme/stories-GGUF/stories260K-F16.gguf');
const { text } = await lm.generate('Once upon a time', { maxTokens: 100, temperature: 0 });
console.log(JSON.stringify({ name: lm.name, text }));
`

// In Node.js an hf: source downloads from HF_ENDPOINT, the variable
// huggingface_hub reads (here a stand-in for the Hub on 127.0.0.1).
func TestNPMNodeHF(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	want := greedyOnceUponATime(t)
	model, err := os.ReadFile(filepath.Join("..", "..", "models", models.DefaultFile))
	require.NoError(t, err)
	hub := newHFStandIn(t, model)
	dir := npmApp(t, map[string]string{"main.mjs": nodeHF})
	var got struct{ Name, Text string }
	require.NoError(t, json.Unmarshal([]byte(runIn(t, dir, []string{"HF_ENDPOINT=" + hub.URL}, node, "main.mjs")), &got))
	assert.Equal(t, "stories260K-F16.gguf", got.Name)
	assert.Equal(t, want, got.Text)
	assert.Positive(t, hub.hits())
}

// nodeAbort aborts a stream after five chunks, then generates again.
const nodeAbort = `import { WasmLM } from 'wasmlm';
const lm = await WasmLM.load();
const controller = new AbortController();
let chunks = 0;
const s = lm.stream('Once upon a time', { maxTokens: 200, temperature: 0, signal: controller.signal });
for await (const chunk of s) if (++chunks === 5) controller.abort();
const { finishReason } = await s.result;
const { text } = await lm.generate('Once upon a time', { maxTokens: 100, temperature: 0 });
lm.unload();
console.log(JSON.stringify({ chunks, finishReason, text }));
`

// In Node.js an abort reaches the worker thread while it generates (its
// generation yields to the event loop with setImmediate, which lets the
// thread's port deliver the abort), and the model works on. The chunks the
// thread posted before the abort arrived still reach the loop, more of them
// on a loaded machine, so the bound is half of the 100 tokens greedy decoding
// is known to give without stopping (greedyOnceUponATime): an abort that did
// not reach the thread would let the stream run on to maxTokens.
func TestNPMNodeAbort(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	want := greedyOnceUponATime(t)
	dir := npmApp(t, map[string]string{"main.mjs": nodeAbort})
	var got struct {
		Chunks       int    `json:"chunks"`
		FinishReason string `json:"finishReason"`
		Text         string `json:"text"`
	}
	require.NoError(t, json.Unmarshal([]byte(runIn(t, dir, nil, node, "main.mjs")), &got))
	assert.Equal(t, "abort", got.FinishReason)
	assert.Less(t, got.Chunks, 50, "chunks after the abort at the fifth")
	assert.Equal(t, want, got.Text, "the greedy text after the abort")
}

// nodeNoUnload starts a generation and leaves it pending, never unloading
// the model: the worker thread must hold the process open until the text
// is written, and no longer.
const nodeNoUnload = `import { WasmLM } from 'wasmlm';
const lm = await WasmLM.load();
lm.generate('Once upon a time', { maxTokens: 100, temperature: 0 }).then(({ text }) => process.stdout.write(text));
`

// In Node.js a program that loads a model and does not unload it exits by
// itself, with code 0, once nothing is pending, and not before its pending
// generation is done: the whole greedy text is written. The minute is a
// bound for a process that would never exit, not a measure of speed (the
// program takes a second or two).
func TestNPMNodeExitsWhenIdle(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	want := greedyOnceUponATime(t)
	dir := npmApp(t, map[string]string{"main.mjs": nodeNoUnload})
	assert.Equal(t, want, runWithin(t, time.Minute, dir, nil, node, "main.mjs"))
}

// nodeServe calls lm.serve and WasmLM.serve in Node.js, with a model loaded
// without and with { serve: true }, and writes what each rejected with.
const nodeServe = `import { WasmLM } from 'wasmlm';
const plain = await WasmLM.load();
const serving = await WasmLM.load(undefined, { serve: true });
const calls = {
  'lm.serve()': () => plain.serve(),
  "lm.serve({ scope: '/v1/' })": () => plain.serve({ scope: '/v1/' }),
  'lm.serve() of a model loaded with { serve: true }': () => serving.serve(),
  'WasmLM.serve()': () => WasmLM.serve(),
  'WasmLM.serve({ model })': () => WasmLM.serve({ model: plain }),
};
const got = {};
for (const [name, call] of Object.entries(calls)) {
  try {
    await call();
    got[name] = { code: 'resolved' };
  } catch (err) {
    got[name] = { code: err.code, message: err.message };
  }
}
console.log(JSON.stringify(got));
`

// In Node.js lm.serve and WasmLM.serve reject at once, whatever the model
// was loaded with, with the one error that says a browser page is needed
// and what serves the API instead: not first a request to load with
// { serve: true }, which would not help.
func TestNPMNodeServeSaysWhatWorks(t *testing.T) {
	node := needTool(t, "node", "Debian package nodejs")
	dir := npmApp(t, map[string]string{"main.mjs": nodeServe})
	var got map[string]struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	require.NoError(t, json.Unmarshal([]byte(runWithin(t, time.Minute, dir, nil, node, "main.mjs")), &got))
	require.Len(t, got, 5)
	for call, err := range got {
		assert.Equal(t, "serve_failed", err.Code, call)
		for _, says := range []string{"lm.serve needs a browser page", "Service Worker", "Node.js", "wasmlm serve -m", "lm.chat.completions.create"} {
			assert.Contains(t, err.Message, says, call)
		}
		assert.NotContains(t, err.Message, "serve: true", call)
	}
}

// The same program in Deno, the binary of the npm package @deno/linux-x64-glibc
// (tests/runtimes/package.json, which make test-e2e-npm installs), with and
// without lm.unload(), four times each: Deno 2.9 crashed at exit in 1 run of
// 10–20 when the process ended with a worker thread running or just
// terminated (wasmlm.node.js waits for them).
func TestNPMDeno(t *testing.T) {
	deno := needTool(t, filepath.Join(repoRoot(t), "tests", "runtimes", "node_modules", "@deno", "linux-x64-glibc", "deno"), "make test-e2e-npm installs it: tools/npm-ci.sh tests/runtimes")
	want := greedyOnceUponATime(t)
	dir := nodeApp(t, "'node_modules/wasmlm/models/"+models.DefaultFile+"'")
	main, err := os.ReadFile(filepath.Join(dir, "main.mjs"))
	require.NoError(t, err)
	withoutUnload := strings.Replace(string(main), "lm.unload();", "", 1)
	require.NotEqual(t, string(main), withoutUnload)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "no-unload.mjs"), []byte(withoutUnload), 0o644))
	env := []string{"DENO_NO_UPDATE_CHECK=1", "DENO_DIR=" + t.TempDir()}
	for i := range 8 {
		program := []string{"main.mjs", "no-unload.mjs"}[i%2]
		assert.Equal(t, want, runIn(t, dir, env, deno, "run", "--allow-read", "--allow-env", "--allow-sys", program), "run %d of %s", i+1, program)
	}
}

// The same program in Bun, the binary of the npm package @oven/bun-linux-x64
// (tests/runtimes/package.json, which make test-e2e-npm installs).
func TestNPMBun(t *testing.T) {
	bun := needTool(t, filepath.Join(repoRoot(t), "tests", "runtimes", "node_modules", "@oven", "bun-linux-x64", "bin", "bun"), "make test-e2e-npm installs it: tools/npm-ci.sh tests/runtimes")
	want := greedyOnceUponATime(t)
	dir := nodeApp(t, "'node_modules/wasmlm/models/"+models.DefaultFile+"'")
	assert.Equal(t, want, runIn(t, dir, []string{"BUN_INSTALL_CACHE_DIR=" + t.TempDir()}, bun, "main.mjs"))
}

// bundlerPage is the app's page: web/README.md's main.js writes into #out.
const bundlerPage = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>app</title></head>
<body><pre id="out"></pre><script type="module" src="./main.js"></script></body></html>
`

// streamsInPage opens path on s and waits until the page's #out holds want
// (the stream's whole text), failing with what it holds after a minute.
func streamsInPage(t *testing.T, s *site, path, want string) {
	t.Helper()
	tb := openTab(t, s, path, nil)
	deadline := time.Now().Add(time.Minute)
	var got string
	for time.Now().Before(deadline) {
		got = eval[string](t, tb, `document.querySelector('#out')?.textContent ?? ''`)
		if got == want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the page's #out holds %q, want %q", got, want)
}

// web/README.md's app, built by Vite (the version package-lock.json pins)
// with no configuration, streams the greedy text from its production build.
func TestNPMVite(t *testing.T) {
	vite := needTool(t, filepath.Join(repoRoot(t), "node_modules", "vite", "bin", "vite.js"), "npm ci installs it from package-lock.json")
	docHas(t, "web/README.md", npmBundlerExample)
	want := greedyOnceUponATime(t)
	dir := npmApp(t, map[string]string{"index.html": bundlerPage, "main.js": codeOf(npmBundlerExample)})
	out := runIn(t, dir, nil, "node", vite, "build")
	t.Log(out)
	streamsInPage(t, staticSite(t, filepath.Join(dir, "dist"), false), "/", want)

	own := npmApp(t, map[string]string{"index.html": bundlerPage, "main.js": ownModelApp(t)})
	runIn(t, own, nil, "node", vite, "build")
	assertShipsNoModel(t, filepath.Join(own, "dist"))
}

// ownModelApp is web/README.md's app with a model of its own: its import of
// wasmlm/default-model left out, as its comment says.
func ownModelApp(t *testing.T) string {
	t.Helper()
	code := codeOf(npmBundlerExample)
	lines := strings.Split(code, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "import { DEFAULT_MODEL }") })
	require.GreaterOrEqual(t, i, 0)
	code = strings.Join(slices.Delete(lines, i, i+1), "\n")
	return strings.Replace(code, "WasmLM.load(DEFAULT_MODEL)", "WasmLM.load('https://example.com/my-model.gguf')", 1)
}

// assertShipsNoModel checks that a build holds the engine but no model file.
func assertShipsNoModel(t *testing.T, dist string) {
	t.Helper()
	var wasm, gguf []string
	require.NoError(t, filepath.WalkDir(dist, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case strings.HasSuffix(path, ".wasm"):
			wasm = append(wasm, path)
		case strings.HasSuffix(path, ".gguf"):
			gguf = append(gguf, path)
		}
		return nil
	}))
	// wasmlm.js names both engine builds with literal URLs, so a bundler
	// copies both, though an app without { serve: true } fetches only
	// wasmlm.wasm.
	assert.Len(t, wasm, 3, "the engine and its two kernel builds, not wasmlm-serve.wasm, which only wasmlm/serve names")
	assert.Empty(t, gguf, "an app that does not import wasmlm/default-model must not ship the model")
}

// webpackBuild is a build with webpack's Node.js API and no configuration
// beyond the entry and the output (webpack's CLI is a package of its own).
const webpackBuild = `const webpack = require(process.argv[2]);
webpack({ mode: 'production', entry: './main.js', output: { path: require('path').resolve('dist') } }, (err, stats) => {
  if (err || stats.hasErrors()) { console.error(err ?? stats.toString('errors-only')); process.exit(1); }
  console.log(stats.toString('minimal'));
});
`

// The same app built by webpack 5 (the version package-lock.json pins).
func TestNPMWebpack(t *testing.T) {
	webpack := needTool(t, filepath.Join(repoRoot(t), "node_modules", "webpack"), "npm ci installs it from package-lock.json")
	docHas(t, "web/README.md", npmBundlerExample)
	want := greedyOnceUponATime(t)
	dir := npmApp(t, map[string]string{"main.js": codeOf(npmBundlerExample), "build.cjs": webpackBuild})
	t.Log(runIn(t, dir, nil, "node", "build.cjs", webpack))
	page := strings.Replace(bundlerPage, `src="./main.js"`, `src="./main.js" async`, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dist", "index.html"), []byte(page), 0o644))
	streamsInPage(t, staticSite(t, filepath.Join(dir, "dist"), false), "/", want)

	own := npmApp(t, map[string]string{"main.js": ownModelApp(t), "build.cjs": webpackBuild})
	runIn(t, own, nil, "node", "build.cjs", webpack)
	assertShipsNoModel(t, filepath.Join(own, "dist"))
}

// web/README.md's page imports the package from a CDN's origin (here a
// static server of the unpacked package on another port, sending
// Access-Control-Allow-Origin: * as CDNs do) without a bundler: the
// worker starts from another origin, and load() finds the default model
// beside wasmlm.js.
func TestNPMFromAnotherOrigin(t *testing.T) {
	docHas(t, "web/README.md", npmCDNExample)
	want := greedyOnceUponATime(t)
	cdn := staticSite(t, filepath.Join(npmApp(t, nil), "node_modules", "wasmlm"), true)
	page := `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>cdn</title></head><body>` +
		strings.Replace(codeOf(npmCDNExample), "https://cdn.jsdelivr.net/npm/wasmlm@0/", cdn.url+"/", 1) + `</body></html>`
	app := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(app, "index.html"), []byte(page), 0o644))
	streamsInPage(t, staticSite(t, app, false), "/", want)
}

// typesApp uses the package's types as a TypeScript app would: both
// entries, load's options and sources, a stream's chunks, a chat
// completion, a model description, the worker's stats.
const typesApp = `import { WasmLM, type ModelInfo, type ModelDescription, type WorkerStats } from 'wasmlm';
import { DEFAULT_MODEL } from 'wasmlm/default-model';
import { LanguageModel, installPolyfill } from 'wasmlm/prompt-api';

const own: ModelDescription = { model: 'https://example.com/my-model.gguf', name: 'mine' };
const lm: WasmLM = await WasmLM.load(Math.random() < 2 ? DEFAULT_MODEL : own, { contextLength: 256, workers: 'auto', serve: false, shared: false });
const info: ModelInfo = lm.info;
const stats: WorkerStats = await lm.workerStats();
console.log(stats.shared, stats.sessions.open, info.shared ?? info.sharedReason);
let text: string = '';
for await (const chunk of lm.stream('Once upon a time', { temperature: 0, maxTokens: 10 })) text += chunk.text;
const reply = await lm.chat.completions.create({ messages: [{ role: 'user', content: 'Hi!' }] });
const content: string | null = reply.choices[0].message.content;
const counted: number = await lm.chat.countTokens({ messages: [{ role: 'user', content: 'Hi!' }] });
console.log(text, info.architecture, content, DEFAULT_MODEL.name.length, counted);
lm.unload();
await installPolyfill(DEFAULT_MODEL, { contextLength: 256 });
const session: LanguageModel = await LanguageModel.create({ initialPrompts: [{ role: 'system', content: 'Be brief.' }], temperature: 0, topK: 1 });
const answer: string = await session.prompt('Hi!', { responseConstraint: /^(yes|no)$/ });
for await (const part of session.promptStreaming([{ role: 'user', content: 'More' }])) console.log(part.length);
session.addEventListener('contextoverflow', () => console.log(session.contextUsage <= session.contextWindow));
console.log(answer, await session.measureContextUsage('x'));
session.destroy();
`

// The package's types check with TypeScript (the version package-lock.json
// pins, strict) under both module resolutions apps use: nodenext (Node.js,
// the exports' types condition) and bundler.
func TestNPMTypes(t *testing.T) {
	tsc := needTool(t, filepath.Join(repoRoot(t), "node_modules", "typescript", "bin", "tsc"), "npm ci installs it from package-lock.json")
	dir := npmApp(t, map[string]string{"main.ts": typesApp})
	for _, c := range []struct{ module, resolution string }{{"nodenext", "nodenext"}, {"esnext", "bundler"}} {
		t.Run(c.resolution, func(t *testing.T) {
			runIn(t, dir, nil, "node", tsc, "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom",
				"--module", c.module, "--moduleResolution", c.resolution, "main.ts")
		})
	}
	// A type error is one: the check is not vacuous.
	bad := filepath.Join(dir, "bad.ts")
	require.NoError(t, os.WriteFile(bad, []byte("import { WasmLM } from 'wasmlm';\nconst n: number = (await WasmLM.load()).name;\n"), 0o644))
	cmd := exec.Command("node", tsc, "--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom", "--module", "nodenext", "--moduleResolution", "nodenext", "bad.ts")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "tsc must refuse a string assigned to a number")
	assert.Contains(t, string(out), "TS2322")
}

// npmServeExample is web/README.md's app that serves the OpenAI API from the
// page, which TestNPMViteServe builds with Vite as it is written (and a
// copy of wasmlm.sw.js in public/, as web/README.md says), greedily.
const npmServeExample = "```js\n" + `// main.js — and copy node_modules/wasmlm/wasmlm.sw.js into public/ (Vite) or the site's root
import { WasmLM } from 'wasmlm';
import { DEFAULT_MODEL } from 'wasmlm/default-model';
import 'wasmlm/serve';                                   // the engine build with the endpoint: bundlers copy it

const lm = await WasmLM.load(DEFAULT_MODEL, { serve: true });
await lm.serve({ scope: '/v1/', serviceWorker: '/wasmlm.sw.js' });
const res = await fetch('/v1/completions', {
  method: 'POST', headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ model: 'stories260K', prompt: 'Once upon a time', max_tokens: 100, temperature: 0 }),
});
document.querySelector('#out').textContent = (await res.json()).choices[0].text;
` + "```\n"

// A bundled app that serves: its build has wasmlm-serve.wasm (from
// wasmlm/serve) and answers /v1/completions from the page with the greedy
// text.
func TestNPMViteServe(t *testing.T) {
	vite := needTool(t, filepath.Join(repoRoot(t), "node_modules", "vite", "bin", "vite.js"), "npm ci installs it from package-lock.json")
	docHas(t, "web/README.md", npmServeExample)
	want := greedyOnceUponATime(t)
	dir := npmApp(t, map[string]string{"index.html": bundlerPage, "main.js": codeOf(npmServeExample)})
	sw, err := os.ReadFile(filepath.Join(dir, "node_modules", "wasmlm", "wasmlm.sw.js"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "public"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "public", "wasmlm.sw.js"), sw, 0o644))
	runIn(t, dir, nil, "node", vite, "build")
	served, err := filepath.Glob(filepath.Join(dir, "dist", "assets", "wasmlm-serve-*.wasm"))
	require.NoError(t, err)
	assert.Len(t, served, 1, "wasm-serve.wasm in the build of an app that imports wasmlm/serve")
	streamsInPage(t, staticSite(t, filepath.Join(dir, "dist"), false), "/", want)

	// Without the import, the build has no wasmlm-serve.wasm, and a load with
	// { serve: true } says what to import.
	forgot := npmApp(t, map[string]string{"index.html": bundlerPage, "main.js": `import { WasmLM } from 'wasmlm';
import { DEFAULT_MODEL } from 'wasmlm/default-model';
const out = document.querySelector('#out');
try { await WasmLM.load(DEFAULT_MODEL, { serve: true }); out.textContent = 'loaded'; } catch (e) { out.textContent = e.code + ': ' + e.message; }
`})
	runIn(t, forgot, nil, "node", vite, "build")
	served, err = filepath.Glob(filepath.Join(forgot, "dist", "assets", "wasmlm-serve-*.wasm"))
	require.NoError(t, err)
	assert.Empty(t, served, "wasm-serve.wasm in the build of an app that does not import wasmlm/serve")
	tb := openTab(t, staticSite(t, filepath.Join(forgot, "dist"), false), "/", nil)
	tb.expect("404") // the browser's report of the missing file
	var got string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && got == ""; time.Sleep(200 * time.Millisecond) {
		got = eval[string](t, tb, `document.querySelector('#out')?.textContent ?? ''`)
	}
	assert.True(t, strings.HasPrefix(got, "fetch_failed: "), got)
	assert.Contains(t, got, "import 'wasmlm/serve'")
}

//go:build !js

package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/sampling"
)

// result is what generate resolves to, as far as the tests read it.
type result struct {
	Text         string `json:"text"`
	Tokens       []int  `json:"tokens"`
	PromptTokens []int  `json:"promptTokens"`
	FinishReason string `json:"finishReason"`
	Seed         uint64 `json:"seed"`
	Timings      struct {
		TimeToFirstTokenMs    float64 `json:"timeToFirstTokenMs"`
		DecodeMs              float64 `json:"decodeMs"`
		DecodeTokens          int     `json:"decodeTokens"`
		DecodeTokensPerSecond float64 `json:"decodeTokensPerSecond"`
		YieldMs               float64 `json:"yieldMs"`
	} `json:"timings"`
}

// (a) A greedy stream of the empty prompt reproduces llama2.c's text and
// token ids exactly, and arrives token by token over time, not at the end.
func TestBrowserGreedyStreamMatchesLlama2C(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[0]
	require.Empty(t, run.Prompt)
	require.Len(t, run.GeneratedIDs, 200)
	tb := newTab(t, blankPage)
	got := eval[struct {
		Chunks []struct {
			Text  string  `json:"text"`
			Token int     `json:"token"`
			At    float64 `json:"at"`
		} `json:"chunks"`
		Result result `json:"result"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const chunks = [];
		const s = lm.stream('', { temperature: 0, maxTokens: 200 });
		for await (const c of s) chunks.push({ text: c.text, token: c.token, at: performance.now() });
		const result = await s.result;
		lm.unload();
		return { chunks, result };
	`))

	var ids []int
	var text strings.Builder
	arrivals := map[float64]bool{}
	for _, c := range got.Chunks {
		if c.Token >= 0 {
			ids = append(ids, c.Token)
		}
		text.WriteString(c.Text)
		arrivals[c.At] = true
	}
	assert.Equal(t, run.GeneratedIDs, ids, "streamed token ids")
	assert.Equal(t, run.Text, text.String(), "streamed text")
	assert.Equal(t, run.GeneratedIDs, got.Result.Tokens)
	assert.Equal(t, run.Text, got.Result.Text)
	assert.Equal(t, run.PromptIDs, got.Result.PromptTokens)
	assert.Equal(t, "length", got.Result.FinishReason)
	assert.Greater(t, len(arrivals), 50, "chunks must arrive as the tokens are sampled: %d distinct arrival times for %d chunks", len(arrivals), len(got.Chunks))
	t.Logf("%d chunks, %d distinct arrival times over %.1f ms", len(got.Chunks), len(arrivals), got.Chunks[len(got.Chunks)-1].At-got.Chunks[0].At)
}

// (a') The same greedy stream once on the SIMD128 kernels, which the page's
// worker runs by default where the browser has SIMD (Chromium has), and
// once on the pure-Go kernels (load option simd: false): lm.info.simd says
// which ran, and both reproduce llama2.c's token ids and text.
func TestBrowserGreedyStreamWithAndWithoutSIMD(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[0]
	require.Empty(t, run.Prompt)
	tb := newTab(t, blankPage)
	type outcome struct {
		SIMD       bool    `json:"simd"`
		SIMDReason *string `json:"simdReason"`
		IDs        []int   `json:"ids"`
		Text       string  `json:"text"`
		Result     result  `json:"result"`
	}
	got := eval[[]outcome](t, tb, apiScript(`
		const out = [];
		for (const simd of [true, false]) {
			const lm = await WasmLM.load(undefined, { simd });
			const ids = [];
			let text = '';
			const s = lm.stream('', { temperature: 0, maxTokens: `+strconv.Itoa(len(run.GeneratedIDs))+` });
			for await (const c of s) {
				if (c.token >= 0) ids.push(c.token);
				text += c.text;
			}
			out.push({ simd: lm.info.simd, simdReason: lm.info.simdReason ?? null, ids, text, result: await s.result });
			lm.unload();
		}
		return out;
	`))
	require.Len(t, got, 2)
	withSIMD, pureGo := got[0], got[1]
	assert.True(t, withSIMD.SIMD, "lm.info.simd by default (reason: %v)", withSIMD.SIMDReason)
	assert.Nil(t, withSIMD.SIMDReason)
	assert.False(t, pureGo.SIMD, "lm.info.simd with simd: false")
	if assert.NotNil(t, pureGo.SIMDReason) {
		assert.Contains(t, *pureGo.SIMDReason, "simd: false")
	}
	for _, o := range got {
		assert.Equal(t, run.GeneratedIDs, o.IDs, "streamed token ids, simd %v", o.SIMD)
		assert.Equal(t, run.Text, o.Text, "streamed text, simd %v", o.SIMD)
		assert.Equal(t, run.GeneratedIDs, o.Result.Tokens, "simd %v", o.SIMD)
	}
	assert.Equal(t, withSIMD.IDs, pureGo.IDs, "the SIMD and pure-Go kernels give the same tokens")
}

// (b) tokenize in the page equals llama2.c's encode(): the golden prompts of
// the generation runs, and the 40 strings of the tokenizer golden file, with
// and without BOS.
func TestBrowserTokenizeMatchesLlama2C(t *testing.T) {
	g := golden.RuncTokenizerCases(t)
	for _, run := range golden.RuncStories260K(t).Runs {
		g.Tok512 = append(g.Tok512, golden.TokenizerCase{Text: run.Prompt, BOS: run.PromptIDs})
	}
	require.Greater(t, len(g.Tok512), 40)
	tb := newTab(t, blankPage)
	texts := make([]string, len(g.Tok512))
	for i, c := range g.Tok512 {
		texts[i] = c.Text
	}
	got := eval[struct {
		BOS   [][]int `json:"bos"`
		NoBOS [][]int `json:"noBos"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const texts = `+jsonString(t, texts)+`;
		const bos = [], noBos = [];
		for (const text of texts) {
			bos.push(await lm.tokenize(text));
			noBos.push(await lm.tokenize(text, { addBos: false }));
		}
		lm.unload();
		return { bos, noBos };
	`))
	require.Len(t, got.BOS, len(g.Tok512))
	for i, c := range g.Tok512 {
		assert.Equal(t, c.BOS, got.BOS[i], "%q with BOS", c.Text)
		if c.NoBOS != nil {
			assert.Equal(t, c.NoBOS, got.NoBOS[i], "%q without BOS", c.Text)
		}
	}
}

// (c) Aborting a stream after 5 tokens stops it within a few tokens, with
// finishReason "abort"; the next generate works and still reproduces
// llama2.c. Breaking out of the loop aborts too.
func TestBrowserAbortAndContinue(t *testing.T) {
	g := golden.RuncStories260K(t)
	empty, once := g.Runs[0], g.Runs[1]
	require.Equal(t, "Once upon a time", once.Prompt)
	tb := newTab(t, blankPage)
	got := eval[struct {
		Seen   int    `json:"seen"`
		Result result `json:"result"`
		Next   result `json:"next"`
		Broken result `json:"broken"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const ac = new AbortController();
		const s = lm.stream('', { temperature: 0, maxTokens: 500, signal: ac.signal });
		let seen = 0;
		for await (const c of s) {
			if (++seen === 5) ac.abort();
		}
		const result = await s.result;
		const next = await lm.generate('Once upon a time', { temperature: 0, maxTokens: `+strconv.Itoa(len(once.GeneratedIDs))+` });
		const b = lm.stream('', { temperature: 0, maxTokens: 500 });
		let n = 0;
		for await (const c of b) if (++n === 5) break;
		const broken = await b.result;
		lm.unload();
		return { seen, result, next, broken };
	`))
	assert.Equal(t, "abort", got.Result.FinishReason)
	// The abort message reaches the worker at its next yield; tokens sampled
	// while it was on its way still arrive. Allow a few.
	assert.GreaterOrEqual(t, got.Seen, 5)
	assert.LessOrEqual(t, got.Seen, 5+abortSlack, "tokens after the abort")
	assert.Equal(t, len(got.Result.Tokens), got.Seen)
	assert.Equal(t, empty.GeneratedIDs[:len(got.Result.Tokens)], got.Result.Tokens)
	t.Logf("aborted after 5 tokens; %d arrived", got.Seen)

	assert.Equal(t, "length", got.Next.FinishReason)
	assert.Equal(t, once.GeneratedIDs, got.Next.Tokens, "the generation after the abort")
	assert.Equal(t, once.Text, once.Prompt+got.Next.Text)

	assert.Equal(t, "abort", got.Broken.FinishReason, "breaking out of for await aborts")
	assert.LessOrEqual(t, len(got.Broken.Tokens), 5+abortSlack)
}

// abortSlack is how many tokens may still arrive after an abort: those the
// worker samples while the abort message travels to it. That is a time, so
// the count grows with the speed: the default model decodes about 2,800
// tokens/s on the SIMD kernels, and 30 tokens are about 10 ms (10 were too
// few on a loaded 2-core machine). The generations aborted ask for 300-500.
const abortSlack = 30

// jsError is a rejection as the page saw it (null when the call succeeded).
type jsError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Code    string `json:"code"`
	Field   string `json:"field"` // an invalid option's name, as JavaScript (or, in chat.completions.create, OpenAI) spells it
}

// (d) Corrupt model bytes and invalid options reject with readable errors
// (Error objects naming what is wrong), and the page and the model keep
// working afterwards. The model is stories260K as a llama2.c checkpoint,
// whose tokenizer.bin comes separately, so that corrupt and missing
// tokenizers are tried too.
func TestBrowserRejectsCorruptModelsAndBadOptions(t *testing.T) {
	run := golden.RuncStories260K(t).Runs[1]
	tb := newTab(t, blankPage)
	tb.expect("404") // the load of a missing URL
	got := eval[struct {
		Loads []*jsError `json:"loads"`
		Calls []*jsError `json:"calls"`
		After result     `json:"after"`
	}](t, tb, apiScript(`
		const outcome = (p) => p.then(() => null, (e) => ({ name: e.name, message: e.message, code: e.code ?? null, field: e.field ?? '' }));
		const model = await (await fetch('`+llama2cDir+`stories260K.bin')).arrayBuffer();
		const tokenizer = await (await fetch('`+llama2cDir+`tok512.bin')).arrayBuffer();
		const gguf = new Uint8Array(64); gguf.set([71, 71, 85, 70, 3]); // "GGUF", version 3, then zeros
		const flipped = new Uint8Array(model.slice(0)); new DataView(flipped.buffer).setInt32(0, -7, true); // dim = -7
		const loads = [
			outcome(WasmLM.load(new Uint8Array([1, 2, 3]), { tokenizer })),
			outcome(WasmLM.load(model.slice(0, 1000), { tokenizer })),
			outcome(WasmLM.load(flipped, { tokenizer })),
			outcome(WasmLM.load(gguf)),
			outcome(WasmLM.load(model)),                                  // no tokenizer
			outcome(WasmLM.load(model, { tokenizer: tokenizer.slice(0, 100) })),
			outcome(WasmLM.load('/no/such/model.bin')),
			outcome(WasmLM.load(12345)),
			outcome(WasmLM.load(model, { tokeniser: tokenizer })),
			outcome(WasmLM.load(model, { tokenizer, workers: 2 })),
		];
		const lm = await WasmLM.load(model, { tokenizer });
		const calls = [
			outcome(lm.generate('x', { topK: -1 })),
			outcome(lm.generate('x', { temperature: 'hot' })),
			outcome(lm.generate('x', { maxTokens: 1.5 })),
			outcome(lm.generate('x', { stop: 5 })),
			outcome(lm.generate('x', { temprature: 0.5 })),
			outcome(lm.generate(42)),
			outcome(lm.tokenize(42)),
			outcome(lm.detokenize([1, 99999])),
			outcome(lm.generate('x', { seed: -1 })),
			outcome(lm.generate('x', { onToken: () => {} })),
			outcome(lm.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], top_p: 7 })),
			outcome(lm.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], enable_thinking: 'no' })),
			outcome(lm.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], chat_template_kwargs: { enable_thinking: 1 } })),
			outcome(lm.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], enable_thinking: true, chat_template_kwargs: { enable_thinking: false } })),
		];
		const after = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 20 });
		lm.unload();
		return { loads: await Promise.all(loads), calls: await Promise.all(calls), after };
	`))
	wantLoads := []struct{ code, contains string }{
		{"invalid_model", "malformed model"},
		{"invalid_model", "malformed model"},
		{"invalid_model", "malformed model"},
		{"invalid_model", "gguf"},
		{"invalid_model", "needs its tokenizer.bin"},
		{"invalid_model", "tokenizer"},
		{"fetch_failed", "fetching " + tb.site.url + "/no/such/model.bin failed: HTTP 404"},
		{"invalid_argument", "source must be a URL, an ArrayBuffer, a typed array or a Blob, got 12345"},
		{"invalid_argument", `unknown load option "tokeniser"`},
		{"invalid_argument", "workers must be 1 or 'auto' for a llama2.c checkpoint, which runs in one worker (a GGUF model splits), got 2"},
	}
	require.Len(t, got.Loads, len(wantLoads))
	for i, w := range wantLoads {
		e := got.Loads[i]
		require.NotNil(t, e, "load %d succeeded", i)
		assert.Contains(t, []string{"Error", "TypeError"}, e.Name)
		assert.Equal(t, w.code, e.Code, e.Message)
		assert.Contains(t, e.Message, w.contains)
	}
	wantCalls := []struct{ message, field string }{
		{"topK must be >= 0 (0 = off), got -1", "topK"}, // the engine's range, in JavaScript's name
		{`temperature must be a number, got string "hot"`, "temperature"},
		{"maxTokens must be an integer of 32 bits, got 1.5", "maxTokens"},
		{"stop must be a string or an array of strings, got 5", "stop"},
		{`unknown option "temprature"`, ""},
		{"prompt must be a string, got 42", "prompt"},
		{"text must be a string, got 42", "text"},
		{"ids[1] must be a token id of this model (0..511), got 99999", "ids[1]"},
		{"seed must be an integer in [0, 2^53 - 1], got -1", "seed"},
		{"onToken must be data a worker can receive, got a function", "onToken"}, // found by the page before it posts the call
		{"top_p must be in [0, 1] (0 or 1 = off), got 7", "top_p"},               // OpenAI's name, as it was given
		{"enable_thinking must be a boolean, got a string", "enable_thinking"},   // package openai's wording, as over HTTP
		{"chat_template_kwargs.enable_thinking must be a boolean, got a number", "chat_template_kwargs.enable_thinking"},
		{"enable_thinking is true but chat_template_kwargs.enable_thinking is false", "enable_thinking"},
	}
	require.Len(t, got.Calls, len(wantCalls))
	for i, w := range wantCalls {
		e := got.Calls[i]
		require.NotNil(t, e, "call %d succeeded", i)
		assert.Contains(t, e.Message, w.message)
		assert.Equal(t, w.field, e.Field, e.Message)
		assert.Equal(t, "invalid_argument", e.Code, e.Message)
	}
	assert.Equal(t, run.GeneratedIDs[:20], got.After.Tokens, "the model still works")
}

// (e) The page's main thread stays responsive while the model generates: a
// 5 ms interval timer keeps ticking, with no long gap, through a second and
// a half of back-to-back generations.
func TestBrowserMainThreadStaysResponsive(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		GapsMs      []float64 `json:"gapsMs"`
		ElapsedMs   float64   `json:"elapsedMs"`
		Generations []float64 `json:"generations"`
		Tokens      int       `json:"tokens"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		await lm.generate('', { maxTokens: 10 }); // warm up
		const gapsMs = [];
		let last = performance.now();
		const timer = setInterval(() => {
			const now = performance.now();
			gapsMs.push(now - last);
			last = now;
		}, 5);
		const start = performance.now();
		const generations = [];
		let tokens = 0;
		while (performance.now() - start < 1500) {
			const t0 = performance.now();
			const s = lm.stream('', { temperature: 0, maxTokens: 511 });
			for await (const c of s) tokens++;
			generations.push(performance.now() - t0);
		}
		clearInterval(timer);
		const elapsedMs = performance.now() - start;
		lm.unload();
		return { gapsMs, elapsedMs, generations, tokens };
	`))
	gaps := slices.Sorted(slices.Values(got.GapsMs))
	require.NotEmpty(t, gaps, "the timer never ticked")
	shortest := slices.Min(got.Generations)
	p90, longest := gaps[len(gaps)*9/10], gaps[len(gaps)-1]
	t.Logf("%d tokens in %.0f ms (%d generations, the shortest %.0f ms); the 5 ms timer ticked %d times: 90%% of gaps <= %.1f ms, longest %.1f ms",
		got.Tokens, got.ElapsedMs, len(got.Generations), shortest, len(gaps), p90, longest)
	assert.Greater(t, got.Tokens, 100)
	// Had the model run on this thread, the timer could not tick during a
	// generation: ticks would be as few as generations, and every gap as long
	// as one. A busy machine delays timers now and then (a single gap of
	// 100 ms was seen at a load average of 5), so the bounds are about the
	// bulk of the ticks, and the worst gap must only be shorter than a whole
	// generation.
	assert.Greater(t, float64(len(gaps)), got.ElapsedMs/5/4, "the timer ticked too rarely")
	assert.Less(t, p90, 25.0, "the main thread was blocked")
	assert.Less(t, longest, shortest, "a gap as long as a generation: the main thread was blocked")
}

// (f) The same seed and options give the same sampled tokens and text in
// Chromium as the native engine in this test binary.
func TestBrowserSeedMatchesNative(t *testing.T) {
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	cases := []struct {
		prompt string
		js     map[string]any
		native sampling.Params
	}{
		{"Once upon a time", map[string]any{"seed": 42},
			sampling.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42}},
		{"", map[string]any{"seed": 1234567, "temperature": 1.2, "topK": 0, "topP": 1, "minP": 0, "repeatPenalty": 1.15},
			sampling.Params{Temperature: 1.2, TopP: 1, RepeatPenalty: 1.15, Seed: 1234567}},
		{"The little dog", map[string]any{"seed": 7, "temperature": 1, "topK": 10, "topP": 0.9, "minP": 0.1, "presencePenalty": 0.5, "frequencyPenalty": 0.3},
			sampling.Params{Temperature: 1, TopK: 10, TopP: 0.9, MinP: 0.1, PresencePenalty: 0.5, FrequencyPenalty: 0.3, Seed: 7}},
		{"Lily and Tom went", map[string]any{"seed": 9007199254740991, "temperature": 0.5, "stop": []string{"park"}},
			sampling.Params{Temperature: 0.5, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 9007199254740991}},
	}
	type request struct {
		Prompt  string         `json:"prompt"`
		Options map[string]any `json:"options"`
	}
	requests := make([]request, len(cases))
	want := make([]engine.Result, len(cases))
	for i, c := range cases {
		c.js["maxTokens"] = 120
		requests[i] = request{c.prompt, c.js}
		s, err := m.NewSession(engine.SessionOptions{})
		require.NoError(t, err)
		var stop []string
		if st, ok := c.js["stop"].([]string); ok {
			stop = st
		}
		want[i], err = s.Generate(context.Background(), c.prompt, engine.GenerateOptions{MaxTokens: 120, Sampling: c.native, Stop: stop}, nil)
		require.NoError(t, err)
	}
	tb := newTab(t, blankPage)
	got := eval[[]result](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const out = [];
		for (const r of `+jsonString(t, requests)+`) out.push(await lm.generate(r.prompt, r.options));
		lm.unload();
		return out;
	`))
	require.Len(t, got, len(cases))
	for i, c := range cases {
		assert.Equal(t, want[i].Tokens, got[i].Tokens, "case %d: tokens", i)
		assert.Equal(t, want[i].Text, got[i].Text, "case %d: text", i)
		assert.Equal(t, string(want[i].FinishReason), got[i].FinishReason, "case %d", i)
		assert.Equal(t, c.native.Seed, got[i].Seed, "case %d: the seed reported", i)
		assert.NotEmpty(t, got[i].Tokens)
	}
}

// The model downloads are kept in Cache Storage: a second load reads them
// from there, with no request to the server, and says so in its progress.
func TestBrowserCachesModelDownloads(t *testing.T) {
	tb := newTab(t, blankPage, chromedp.WithNewBrowserContext()) // an empty cache
	const modelPath = "/models/" + models.DefaultFile
	before := tb.site.requests(modelPath)
	type load struct {
		Progress []struct {
			Loaded int  `json:"loaded"`
			Total  int  `json:"total"`
			Cached bool `json:"cached"`
		} `json:"progress"`
		Text string `json:"text"`
	}
	script := apiScript(`
		const progress = [];
		const lm = await WasmLM.load(undefined, { onProgress: (p) => progress.push(p) });
		const { text } = await lm.generate('', { temperature: 0, maxTokens: 10 });
		lm.unload();
		return { progress, text };
	`)
	first := eval[load](t, tb, script)
	afterFirst := tb.site.requests(modelPath)
	second := eval[load](t, tb, script)
	// A Range request reads the header (the whole of this small file), then the
	// download into the cache.
	assert.Equal(t, before+2, afterFirst, "the first load reads the header, then downloads the model")
	assert.Equal(t, afterFirst, tb.site.requests(modelPath), "the second load must not fetch the model again")
	for i, l := range []load{first, second} {
		require.NotEmpty(t, l.Progress, "load %d reported no progress", i)
		last := l.Progress[len(l.Progress)-1]
		size := fileSize(t, tb.site, modelPath[1:])
		assert.Equal(t, size, last.Loaded, "load %d", i)
		assert.Equal(t, size, last.Total, "load %d", i)
		assert.Equal(t, i == 1, last.Cached, "load %d: cached", i)
	}
	assert.Equal(t, first.Text, second.Text)

	// Without OPFS and Cache Storage (as in a non-secure context) loading still works
	// (the bytes may come from the HTTP cache, so the server may see no request).
	third := eval[load](t, tb, `(async () => {
		Object.defineProperty(globalThis, 'caches', { value: undefined, configurable: true });
		Object.defineProperty(navigator, 'storage', { value: undefined, configurable: true });
		return `+apiScript(`
			const progress = [];
			const lm = await WasmLM.load(undefined, { onProgress: (p) => progress.push(p) });
			const { text } = await lm.generate('', { temperature: 0, maxTokens: 10 });
			lm.unload();
			return { progress, text };
		`)+`;
	})()`)
	assert.Equal(t, first.Text, third.Text)
	assert.False(t, third.Progress[len(third.Progress)-1].Cached)
}

// chat.completions.create returns OpenAI-shaped completions and chunks; with
// the default model's plain template the reply equals a plain completion of
// the message contents joined by "\n".
func TestBrowserChatCompletions(t *testing.T) {
	tb := newTab(t, blankPage)
	type choice struct {
		Index   int `json:"index"`
		Message *struct {
			Role, Content    string
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		Delta        *struct{ Role, Content string } `json:"delta"`
		FinishReason *string                         `json:"finish_reason"`
	}
	type completion struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	got := eval[struct {
		Plain   result       `json:"plain"`
		Whole   completion   `json:"whole"`
		Chunks  []completion `json:"chunks"`
		Aborted []completion `json:"aborted"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const messages = [{ role: 'system', content: 'Once upon a time' }, { role: 'user', content: 'there was a cat' }];
		const plain = await lm.generate('Once upon a time\nthere was a cat', { temperature: 0, maxTokens: 30 });
		// The plain template has no thinking switch: enable_thinking changes nothing.
		const whole = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 30, enable_thinking: false, chat_template_kwargs: { enable_thinking: false } });
		const stream = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 30, stream: true, stream_options: { include_usage: true } });
		const chunks = [];
		for await (const c of stream) chunks.push(c);
		const ac = new AbortController();
		const s2 = await lm.chat.completions.create({ messages, temperature: 0, max_tokens: 300, stream: true }, { signal: ac.signal });
		const aborted = [];
		for await (const c of s2) { aborted.push(c); if (aborted.length === 4) ac.abort(); }
		lm.unload();
		return { plain, whole, chunks, aborted };
	`))
	w := got.Whole
	assert.Equal(t, "chat.completion", w.Object)
	assert.Equal(t, "stories260K", w.Model)
	assert.True(t, strings.HasPrefix(w.ID, "chatcmpl-"))
	require.Len(t, w.Choices, 1)
	assert.Equal(t, "assistant", w.Choices[0].Message.Role)
	assert.Equal(t, got.Plain.Text, w.Choices[0].Message.Content)
	assert.Nil(t, w.Choices[0].Message.ReasoningContent, "no reasoning: no reasoning_content")
	assert.Equal(t, "length", *w.Choices[0].FinishReason)
	require.NotNil(t, w.Usage)
	assert.Equal(t, len(got.Plain.PromptTokens), w.Usage.PromptTokens)
	assert.Equal(t, 30, w.Usage.CompletionTokens)

	require.Greater(t, len(got.Chunks), 3)
	var text strings.Builder
	for i, c := range got.Chunks {
		assert.Equal(t, "chat.completion.chunk", c.Object)
		assert.Equal(t, got.Chunks[0].ID, c.ID)
		if i == len(got.Chunks)-1 { // the usage chunk
			assert.Empty(t, c.Choices)
			require.NotNil(t, c.Usage)
			assert.Equal(t, 30, c.Usage.CompletionTokens)
			continue
		}
		require.Len(t, c.Choices, 1)
		text.WriteString(c.Choices[0].Delta.Content)
	}
	assert.Equal(t, "assistant", got.Chunks[0].Choices[0].Delta.Role)
	assert.Equal(t, got.Plain.Text, text.String())
	assert.Equal(t, "length", *got.Chunks[len(got.Chunks)-2].Choices[0].FinishReason)

	last := got.Aborted[len(got.Aborted)-1]
	assert.Equal(t, "abort", *last.Choices[0].FinishReason)
	assert.Less(t, len(got.Aborted), 4+abortSlack+2)
}

// onPromptProgress: generate and stream report each evaluated block of a
// long prompt in the page, {done, total}, the last with done == total; a
// callback that is not a function is a TypeError naming it.
func TestBrowserPromptProgress(t *testing.T) {
	tb := newTab(t, blankPage)
	type progress struct{ Done, Total int }
	got := eval[struct {
		Generate []progress `json:"generate"`
		Stream   []progress `json:"stream"`
		Prompt   int        `json:"prompt"`
		Error    jsError    `json:"error"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const prompt = 'Once upon a time, there was a little girl named Lily. '.repeat(6);
		const generate = [], stream = [];
		const r = await lm.generate(prompt, { temperature: 0, maxTokens: 2, onPromptProgress: (p) => generate.push(p) });
		const s = lm.stream(prompt + 'Then', { temperature: 0, maxTokens: 2, onPromptProgress: (p) => stream.push(p) });
		for await (const _ of s) {}
		let error = { name: '', message: '', code: '', field: '' };
		try {
			await lm.generate(prompt, { onPromptProgress: 'yes' });
		} catch (e) {
			error = { name: e.name, message: e.message, code: e.code ?? '', field: e.field ?? '' };
		}
		lm.unload();
		return { generate, stream, prompt: r.usage.promptTokens, error };
	`))
	require.NotEmpty(t, got.Generate)
	last := got.Generate[len(got.Generate)-1]
	assert.Equal(t, got.Prompt, last.Total)
	assert.Equal(t, last.Total, last.Done, "the last block ends the prompt")
	assert.Greater(t, len(got.Generate), 2, "a prompt of several blocks: %v", got.Generate)
	require.NotEmpty(t, got.Stream, "stream reports too")
	assert.Equal(t, got.Stream[len(got.Stream)-1].Done, got.Stream[len(got.Stream)-1].Total)
	assert.Equal(t, "TypeError", got.Error.Name)
	assert.Equal(t, "onPromptProgress", got.Error.Field)
	assert.Contains(t, got.Error.Message, "onPromptProgress must be a function")
}

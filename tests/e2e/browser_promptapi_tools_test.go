//go:build !js

package e2e

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// What toolCallerModel's greedy replies are: the generic tool format's
// call of get_weather, and a plain answer.
const (
	toolCallerCall   = `{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`
	toolCallerAnswer = `It is sunny in Paris.`
)

// toolCallerModel is a llama GGUF (one layer, a byte vocabulary, no chat
// template: the plain template and the generic tool format) whose next
// token depends on the last one only, set by hand: its attention and
// feed-forward outputs are zero, so the residual stream is the last token's
// embedding, a one-hot vector of its class, and the output rows give each
// class one next token with a logit of 80 against 0 for every other.
// After "?" (a user's question) it writes toolCallerCall as one token, then
// ends; after "}" (the end of the generic format's tool response, the last
// thing a prompt after a tool's result holds) it writes toolCallerAnswer as
// one token, then ends; after anything else it ends. So a conversation with
// a get_weather tool gets, greedily, a call of it, then after the result an
// answer: a real model running the tool loop, not a scripted one.
func toolCallerModel(t *testing.T) []byte {
	t.Helper()
	const dim = 64
	callID, answerID := modelgen.MinVocabSize, modelgen.MinVocabSize+1
	vocab := modelgen.MinVocabSize + 2
	data, err := modelgen.Build(modelgen.Spec{
		Shape:          modelgen.Shape{Dim: dim, HiddenDim: dim, Layers: 1, Heads: 1, KVHeads: 1, VocabSize: vocab, ContextLength: 2048},
		SeparateOutput: true, Seed: 1,
	})
	require.NoError(t, err)
	f, err := gguf.Parse(data)
	require.NoError(t, err)

	// The vocabulary: <unk>, <s>, </s>, the 256 bytes, then the two replies
	// as SentencePiece pieces (a space is "▁").
	const eos = 2
	byteID := func(c byte) int { return 3 + int(c) }
	tokens := make([]string, vocab)
	scores := make([]float32, vocab)
	types := make([]int32, vocab)
	for i := range vocab {
		switch {
		case i == 0:
			tokens[i], types[i] = "<unk>", 2
		case i == 1:
			tokens[i], types[i] = "<s>", 3
		case i == eos:
			tokens[i], types[i] = "</s>", 3
		case i < modelgen.MinVocabSize:
			tokens[i], types[i] = fmt.Sprintf("<0x%02X>", i-3), 6
		case i == callID:
			tokens[i], types[i] = strings.ReplaceAll(toolCallerCall, " ", "▁"), 1
		case i == answerID:
			tokens[i], types[i] = strings.ReplaceAll(toolCallerAnswer, " ", "▁"), 1
		}
		scores[i] = -float32(i)
	}

	// Each token's class, and the token each class is followed by.
	class := make([]int, vocab) // 0: the rest, which ends
	class[byteID('?')], class[callID], class[byteID('}')], class[answerID] = 1, 2, 3, 4
	next := []int{eos, callID, eos, answerID, eos}
	embed := make([]float32, vocab*dim)
	for i := range vocab {
		embed[i*dim+class[i]] = 1
	}
	output := make([]float32, vocab*dim)
	for c, tok := range next {
		output[tok*dim+c] = 10 // the normalized one-hot is sqrt(dim) = 8: a logit of 80
	}
	ones := make([]float32, dim)
	for i := range ones {
		ones[i] = 1
	}
	replaced := map[string][]float32{
		"token_embd.weight": embed, "output.weight": output, "output_norm.weight": ones,
		"blk.0.attn_output.weight": make([]float32, dim*dim), "blk.0.ffn_down.weight": make([]float32, dim*dim),
	}

	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	b.Set("tokenizer.ggml.tokens", gguf.ArrayOf(tokens))
	b.Set("tokenizer.ggml.scores", gguf.ArrayOf(scores))
	b.Set("tokenizer.ggml.token_type", gguf.ArrayOf(types))
	for _, ti := range f.Tensors() {
		d := ti.Data
		if v, ok := replaced[ti.Name]; ok {
			require.Len(t, v, len(d)/4, ti.Name)
			d = make([]byte, 4*len(v))
			for i, x := range v {
				binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(x))
			}
			delete(replaced, ti.Name)
		}
		b.AddTensor(ti.Name, ti.Type, ti.Dims, d)
	}
	require.Empty(t, replaced, "tensors the model lacks")
	out, err := b.Bytes()
	require.NoError(t, err)
	return out
}

// TestBrowserPromptAPIToolsRunAModel: a Prompt API session with a tool
// whose execute the session calls, over a real model (toolCallerModel)
// whose greedy reply calls the tool: prompt() resolves to the model's
// answer after the call, execute was called once with the call's
// arguments, and the session's second request to the model carried the
// call and execute's result (a value made in the page for this run) as
// the conversation's last messages. The session's model is the page's
// (installPolyfill(lm)), its requests seen on their way.
func TestBrowserPromptAPIToolsRunAModel(t *testing.T) {
	tb := newTab(t, blankPage)
	path, _ := serveFile(t, tb.site, "tool-caller.gguf", toolCallerModel(t))
	type message struct {
		Role       string `json:"role"`
		Content    *string
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string
			Function struct{ Name, Arguments string }
		} `json:"tool_calls"`
	}
	got := eval[struct {
		Answer   string
		Executed []map[string]any
		Result   string
		Sent     [][]message
		Tools    []int // how many tools each request offered
	}](t, tb, `(async () => {
		const { WasmLM } = await import('/wasmlm.js');
		const { installPolyfill } = await import('/prompt-api.js');
		const lm = await WasmLM.load(new URL(`+jsLiteral(t, path)+`, location.href).href);
		const sent = [], tools = [];
		const seen = {
			info: lm.info, name: lm.name,
			chat: {
				completions: { create: (body, o) => { sent.push(structuredClone(body.messages)); tools.push(body.tools?.length ?? 0); return lm.chat.completions.create(body, o); } },
				countTokens: (body) => lm.chat.countTokens(body),
			},
		};
		const LanguageModel = await installPolyfill(seen);
		const result = 'sunny, ' + crypto.randomUUID();
		const executed = [];
		const session = await LanguageModel.create({
			temperature: 0, topK: 1,
			tools: [{
				name: 'get_weather', description: 'The weather in a city',
				inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
				execute: async (args) => { executed.push(args); return result; },
			}],
		});
		const answer = await session.prompt('What is the weather in Paris?');
		session.destroy();
		lm.unload();
		return { answer, executed, result, sent, tools };
	})()`)
	assert.Equal(t, toolCallerAnswer, got.Answer, "the model's answer after the call")
	assert.Equal(t, []map[string]any{{"city": "Paris"}}, got.Executed, "execute ran once, with the call's arguments")
	require.Len(t, got.Sent, 2, "a request for the call, one for the answer")
	assert.Equal(t, []int{1, 1}, got.Tools)
	first, second := got.Sent[0], got.Sent[1]
	require.Len(t, second, len(first)+2, "the second request: the first's messages, the call and its result")
	assert.Equal(t, first, second[:len(first)])
	call, result := second[len(first)], second[len(first)+1]
	assert.Equal(t, "assistant", call.Role)
	require.Len(t, call.ToolCalls, 1)
	assert.Equal(t, "get_weather", call.ToolCalls[0].Function.Name)
	assert.JSONEq(t, `{"city": "Paris"}`, call.ToolCalls[0].Function.Arguments)
	assert.Equal(t, "tool", result.Role)
	assert.Equal(t, call.ToolCalls[0].ID, result.ToolCallID)
	require.NotNil(t, result.Content)
	assert.Equal(t, got.Result, *result.Content, "execute's result went back to the model")
}

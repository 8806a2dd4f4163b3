//go:build !js

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/openai"
	"github.com/wasmlm/wasmlm/policy"
)

// familyPrompts are what TestBrowserEveryFamily asks each model, in order,
// of one loaded model: a prompt, one that extends the conversation so far
// (the session reuses its cache), and one that does not (it starts over).
var familyPrompts = []string{"Once upon a time", "Once upon a time there was a", "The cat sat"}

// familyTokens is how many tokens each prompt continues for.
const familyTokens = 12

// familyChat is the conversation TestBrowserEveryFamily has each model
// answer through its chat template, for familyChatTokens tokens.
var familyChat = []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Once upon a time"}}

const familyChatTokens = 4

// familyToolRequest is a chat request forcing one call of a tool without
// parameters beside one with, in every family's own tool format: the
// page's reply (content, calls, finish) must be the native server's, and
// that call.
const familyToolRequest = `{"messages":[{"role":"user","content":"What time is it?"}],"tools":[` +
	`{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},` +
	`{"type":"function","function":{"name":"tell_time","description":"The time now"}}],` +
	`"tool_choice":{"type":"function","function":{"name":"tell_time"}},"parallel_tool_calls":false,"temperature":0,"seed":1,"max_tokens":128}`

// familyToolReply is the part of a chat completion familyToolRequest
// compares.
type familyToolReply struct {
	Choices []struct {
		Message      json.RawMessage `json:"message"`
		FinishReason string          `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

// familyChatJS is familyChat as the JS API takes it.
func familyChatJS() []map[string]string {
	var out []map[string]string
	for _, m := range familyChat {
		out = append(out, map[string]string{"role": m.Role, "content": m.Content})
	}
	return out
}

// nativeChat is a chat completion of familyChat by the native engine: the
// template's family, the rendered prompt and its tokens, and the greedy
// reply read as a chat reply (reasoning apart).
type nativeChat struct {
	template, prompt string
	tokens           []int
	reply            openai.Reply
	replyTokens      int
	finish           string
}

func chatNatively(t *testing.T, name string, m *engine.Model) nativeChat {
	tmpl, err := policy.ChatTemplate(m)
	require.NoError(t, err, name)
	text, err := tmpl.ApplyWith(familyChat, true, chat.Options{})
	require.NoError(t, err, name)
	p, err := policy.NewChatPrompt(m, familyChat, chat.Options{})
	require.NoError(t, err, name)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err, name)
	res, err := s.GeneratePrompt(context.Background(), p.Prompt, engine.GenerateOptions{MaxTokens: familyChatTokens}, nil)
	require.NoError(t, err, name)
	reply, err := openai.ParseReply(p.ReplyPrefix+res.Text, nil, res.FinishReason)
	require.NoError(t, err, name)
	return nativeChat{template: tmpl.Name(), prompt: text, tokens: p.Tokens, reply: reply, replyTokens: len(res.Tokens),
		finish: openai.FinishReason(res.FinishReason)}
}

// buildParityModel builds pm's file and loads it natively. A session
// packs a model's quantized matrices in place: the native engine gets a
// copy, so the bytes stay the file's, for the page or the worker.
func buildParityModel(t *testing.T, pm modelgen.Model) ([]byte, *engine.Model) {
	t.Helper()
	data, err := modelgen.Build(pm.Spec)
	require.NoError(t, err, pm.Name)
	m, err := engine.Load(slices.Clone(data), engine.LoadOptions{})
	require.NoError(t, err, pm.Name)
	return data, m
}

// Every decoder architecture generates and chats in the page as natively,
// token for token: the parity model of each (`wasmlm bench -gen DIR
// -shapes parity`, in its quantized test type, so the page's SIMD kernels
// run it) loaded in one page, continuing prompts that reuse the cache and
// prompts that do not, with the tokens of a fresh native session for each
// prompt; then answering a chat through its family's chat template (the
// file's tokenizer.chat_template): the same template, the same prompt
// tokens (the rendered prompt tokenized in the page, and the count the
// completion reports) and the same greedy reply, reasoning apart; and
// making a forced tool call in the family's own format as the native
// server does (familyToolRequest).
func TestBrowserEveryFamily(t *testing.T) {
	tb := newTab(t, blankPage)
	for _, pm := range modelgen.ParityModels() {
		if pm.Spec.Type == tensor.F32 {
			continue
		}
		data, m := buildParityModel(t, pm)
		if !m.Generates() {
			continue // the encoders: TestBrowserEmbeddingModel
		}
		var want [][]int
		for _, p := range familyPrompts {
			s, err := m.NewSession(engine.SessionOptions{})
			require.NoError(t, err, pm.Name)
			res, err := s.Generate(context.Background(), p, engine.GenerateOptions{MaxTokens: familyTokens}, nil)
			require.NoError(t, err, pm.Name)
			want = append(want, res.Tokens)
		}
		native := chatNatively(t, pm.Name, m)
		h, err := httpapi.New(m, httpapi.Options{ModelName: pm.Name})
		require.NoError(t, err, pm.Name)
		status, body := nativeAPI(t, h, "POST", "/v1/chat/completions", familyToolRequest)
		require.Equal(t, http.StatusOK, status, "%s: %s", pm.Name, body)
		var nativeTool familyToolReply
		require.NoError(t, json.Unmarshal([]byte(body), &nativeTool), pm.Name)
		path, _ := serveFile(t, tb.site, pm.Name+".gguf", data)
		got := eval[struct {
			Architecture string          `json:"architecture"`
			Device       string          `json:"device"`
			Tokens       [][]int         `json:"tokens"`
			Template     string          `json:"template"`
			ChatPrompt   []int           `json:"chatPrompt"`
			Tool         familyToolReply `json:"tool"`
			Chat         struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning"`
				Finish    string `json:"finish"`
				Usage     struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			} `json:"chat"`
		}](t, tb, apiScript(`
			const lm = await WasmLM.load('`+path+`', { device: 'cpu' });
			const tokens = [];
			for (const prompt of `+jsonString(t, familyPrompts)+`) {
				const r = await lm.generate(prompt, { temperature: 0, maxTokens: `+strconv.Itoa(familyTokens)+` });
				tokens.push(r.tokens);
			}
			const c = await lm.chat.completions.create({ messages: `+jsonString(t, familyChatJS())+`, temperature: 0, max_tokens: `+strconv.Itoa(familyChatTokens)+` });
			const chat = { content: c.choices[0].message.content, reasoning: c.choices[0].message.reasoning_content ?? '',
				finish: c.choices[0].finish_reason, usage: c.usage };
			const chatPrompt = await lm.tokenize(`+jsonString(t, native.prompt)+`, { special: true });
			const tool = await lm.chat.completions.create(`+familyToolRequest+`);
			const info = lm.info;
			lm.unload();
			return { architecture: info.architecture, device: info.device, tokens, template: info.chatTemplate, chat, chatPrompt, tool };
		`))
		assert.Equal(t, pm.Spec.Arch, got.Architecture, pm.Name)
		assert.Equal(t, "cpu", got.Device, pm.Name)
		assert.Equal(t, want, got.Tokens, "%s: the page's tokens are the native engine's", pm.Name)
		assert.Equal(t, native.template, got.Template, "%s: the chat template's family", pm.Name)
		assert.Equal(t, native.tokens, got.ChatPrompt, "%s: the chat prompt's tokens", pm.Name)
		assert.Equal(t, len(native.tokens), got.Chat.Usage.PromptTokens, "%s: the chat's prompt tokens", pm.Name)
		assert.Equal(t, native.replyTokens, got.Chat.Usage.CompletionTokens, "%s: the chat's reply tokens", pm.Name)
		assert.Equal(t, native.reply.Content, got.Chat.Content, "%s: the chat's reply", pm.Name)
		assert.Equal(t, native.reply.Reasoning, got.Chat.Reasoning, "%s: the chat's reasoning", pm.Name)
		assert.Equal(t, native.finish, got.Chat.Finish, "%s", pm.Name)
		require.Len(t, got.Tool.Choices, 1, pm.Name)
		assert.JSONEq(t, string(nativeTool.Choices[0].Message), string(got.Tool.Choices[0].Message), "%s: the forced call", pm.Name)
		assert.Equal(t, nativeTool.Choices[0].FinishReason, got.Tool.Choices[0].FinishReason, "%s: the forced call", pm.Name)
		assert.JSONEq(t, string(nativeTool.Usage), string(got.Tool.Usage), "%s: the forced call", pm.Name)
		var call struct {
			ToolCalls []struct {
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		require.NoError(t, json.Unmarshal(nativeTool.Choices[0].Message, &call), pm.Name)
		assert.Equal(t, "tool_calls", nativeTool.Choices[0].FinishReason, "%s: %s", pm.Name, nativeTool.Choices[0].Message)
		if assert.Len(t, call.ToolCalls, 1, pm.Name) {
			assert.Equal(t, "tell_time", call.ToolCalls[0].Function.Name, pm.Name)
			assert.Equal(t, "{}", call.ToolCalls[0].Function.Arguments, pm.Name)
		}
	}
}

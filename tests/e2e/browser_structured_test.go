//go:build !js

package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/internal/grammarref"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
)

// Structured output and tool calling in the page: generate and stream with
// responseFormat and grammar, chat.completions.create with response_format,
// tools and tool_choice. Outputs are sampled at temperature 1 with several
// seeds; JSON is judged by ajv (internal/grammarref), texts under a GBNF
// grammar by the grammar package.

// readmeExample is web/README.md's example of structured output and tool
// calling, which TestBrowserReadmeStructuredExample runs as it is written
// (with the test's model for 'models/my-model.gguf').
const readmeExample = `import { WasmLM } from './wasmlm/wasmlm.js';

const lm = await WasmLM.load('models/my-model.gguf');

// JSON valid for a schema, from generate (or stream).
const schema = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 1, maximum: 99 } },
  required: ['name', 'age'],
  additionalProperties: false,
};
const r = await lm.generate('A hero:', {
  responseFormat: { type: 'json_schema', json_schema: { name: 'hero', schema } },
  maxTokens: 100,
});
const hero = JSON.parse(r.text);                          // { name: '…', age: 42 }

// Text a GBNF grammar matches.
const { text: answer } = await lm.generate('Is the sky blue?', { grammar: 'root ::= "yes" | "no"' });

// A tool call, in OpenAI's shapes.
const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 20 }, unit: { enum: ['celsius', 'fahrenheit'] } },
      required: ['city', 'unit'],
    },
  },
}];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
const reply = await lm.chat.completions.create({ messages, tools, tool_choice: 'required', parallel_tool_calls: false });
const { message, finish_reason } = reply.choices[0];       // finish_reason: 'tool_calls'
const call = message.tool_calls[0];                        // { id, type: 'function', function: { name, arguments } }
const args = JSON.parse(call.function.arguments);          // { city: '…', unit: 'celsius' }

// Give the model the result, and let it answer in text.
messages.push(message, { role: 'tool', tool_call_id: call.id, content: JSON.stringify({ temperature: 21 }) });
const final = await lm.chat.completions.create({ messages, tools, tool_choice: 'none', max_tokens: 50 });
console.log(final.choices[0].message.content);
`

// The schemas of readmeExample, for ajv.
const (
	heroSchema    = `{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":1,"maximum":99}},"required":["name","age"],"additionalProperties":false}`
	weatherSchema = `{"type":"object","properties":{"city":{"type":"string","maxLength":20},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city","unit"]}`
)

// toolModelPath serves the default model with a context of 2048 tokens
// (its own 512 do not hold a prompt that describes tools: the generic tool
// format's instructions and its indented JSON list of the tools take 600
// of them), and returns its URL path.
func toolModelPath(t *testing.T, s *site) string {
	t.Helper()
	data, err := modelgen.SetKV(models.Default(), "llama.context_length", gguf.ValueOf(uint32(2048)))
	require.NoError(t, err)
	path, _ := serveFile(t, s, "stories260K-2k.gguf", data)
	return path
}

// validJSON has ajv judge texts against schema; it fails the test for
// every text that is not valid.
func validJSON(t *testing.T, ref *grammarref.Runner, schema string, texts []string) {
	t.Helper()
	_, res, err := ref.Run(nil, []grammarref.SchemaJob{{Schema: json.RawMessage(schema), Texts: texts}})
	require.NoError(t, err)
	require.Empty(t, res[0].Error)
	for i, ok := range res[0].Valid {
		assert.True(t, ok, "not valid for %s: %q", schema, texts[i])
	}
}

// web/README.md's example runs as written, and its outputs are what its
// comments say: JSON valid for the schemas, "yes" or "no", a call of
// get_weather with finish_reason 'tool_calls', then text.
func TestBrowserReadmeStructuredExample(t *testing.T) {
	ref := grammarref.Need(t)
	readme, err := os.ReadFile("../../web/README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), readmeExample, "web/README.md must show the example this test runs")

	tb := newTab(t, blankPage)
	body := strings.Replace(readmeExample, "import { WasmLM } from './wasmlm/wasmlm.js';\n", "", 1)
	body = strings.Replace(body, "'models/my-model.gguf'", "'"+toolModelPath(t, tb.site)+"'", 1)
	got := eval[struct {
		Hero         string `json:"hero"`
		Answer       string `json:"answer"`
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		Args  map[string]any `json:"args"`
		Final struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []any   `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		} `json:"final"`
	}](t, tb, apiScript(body+`
		lm.unload();
		return { hero: r.text, answer, finish_reason, message, args, final };
	`))
	t.Logf("hero %s, answer %q, calls %+v, then %+v", got.Hero, got.Answer, got.Message.ToolCalls, got.Final.Choices)
	validJSON(t, ref, heroSchema, []string{got.Hero})
	assert.Contains(t, []string{"yes", "no"}, got.Answer)
	assert.Equal(t, "tool_calls", got.FinishReason)
	assert.Equal(t, "assistant", got.Message.Role)
	assert.Nil(t, got.Message.Content, "a reply that is only calls has content null")
	require.NotEmpty(t, got.Message.ToolCalls)
	for _, c := range got.Message.ToolCalls {
		assert.NotEmpty(t, c.ID)
		assert.Equal(t, "function", c.Type)
		assert.Equal(t, "get_weather", c.Function.Name)
		validJSON(t, ref, weatherSchema, []string{c.Function.Arguments})
	}
	assert.Contains(t, got.Args, "city")
	require.Len(t, got.Final.Choices, 1)
	require.NotNil(t, got.Final.Choices[0].Message.Content)
	assert.NotEmpty(t, *got.Final.Choices[0].Message.Content)
	assert.Empty(t, got.Final.Choices[0].Message.ToolCalls)
	assert.Contains(t, []string{"stop", "length"}, got.Final.Choices[0].FinishReason)
}

// storyGrammar is a GBNF grammar the default model's vocabulary can write.
const storyGrammar = `root ::= "Once upon a time, " name " was " ("happy" | "sad") "." ( " " name " " verb "." )?
name ::= "Tom" | "Lily" | "Ben"
verb ::= "ran" | "played" | "smiled"`

// With the default model at temperature 1, for several seeds: generate with
// responseFormat json_object gives text JSON.parse reads as an object, and
// json_schema JSON valid for the schema; generate and stream with grammar
// give a text the grammar matches, the stream's chunks making the result.
func TestBrowserResponseFormatAndGrammar(t *testing.T) {
	ref := grammarref.Need(t)
	g, err := grammar.Parse(storyGrammar)
	require.NoError(t, err)
	tb := newTab(t, blankPage)
	grammarJSON, _ := json.Marshal(storyGrammar)
	type run struct {
		Object   string `json:"object"`
		IsObject bool   `json:"isObject"`
		Schema   string `json:"schema"`
		Grammar  string `json:"grammar"`
		Streamed string `json:"streamed"`
		Chunks   string `json:"chunks"`
		Finish   string `json:"finish"`
	}
	got := eval[[]run](t, tb, apiScript(`
		const lm = await WasmLM.load();
		const schema = `+heroSchema+`;
		const grammar = `+string(grammarJSON)+`;
		const out = [];
		for (const seed of [1, 2, 3, 4]) {
			const opts = { temperature: 1, seed, maxTokens: 120 };
			const object = (await lm.generate('Once upon a time', { ...opts, responseFormat: { type: 'json_object' } })).text;
			const parsed = JSON.parse(object);
			const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
			const s = (await lm.generate('Once upon a time', { ...opts, responseFormat: { type: 'json_schema', json_schema: { name: 'hero', schema, strict: true } } })).text;
			const g = await lm.generate('', { ...opts, grammar });
			let chunks = '';
			const st = lm.stream('', { ...opts, grammar });
			for await (const c of st) chunks += c.text;
			const streamed = (await st.result).text;
			out.push({ object, isObject, schema: s, grammar: g.text, streamed, chunks, finish: g.finishReason });
		}
		lm.unload();
		return out;
	`))
	require.Len(t, got, 4)
	var schemaTexts []string
	for i, r := range got {
		assert.True(t, r.IsObject, "seed %d: %q", i+1, r.Object)
		schemaTexts = append(schemaTexts, r.Schema)
		assert.True(t, g.Accepts(r.Grammar), "seed %d: %q", i+1, r.Grammar)
		assert.Equal(t, r.Grammar, r.Streamed, "seed %d: stream and generate agree", i+1)
		assert.Equal(t, r.Streamed, r.Chunks)
		assert.Equal(t, "stop", r.Finish)
	}
	validJSON(t, ref, heroSchema, schemaTexts)
	validJSON(t, ref, `{"type":"object"}`, func() (out []string) {
		for _, r := range got {
			out = append(out, r.Object)
		}
		return out
	}())
}

// chatCall is a tool call as chat.completions.create returns it.
type chatCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatReply is a completion or a chunk, as far as these tests read it.
type chatReply struct {
	Object  string `json:"object"`
	Choices []struct {
		Message *struct {
			Role      string     `json:"role"`
			Content   *string    `json:"content"`
			ToolCalls []chatCall `json:"tool_calls"`
		} `json:"message"`
		Delta *struct {
			Role      string     `json:"role"`
			Content   string     `json:"content"`
			ToolCalls []chatCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// With the default model (at a context of 2048) at temperature 1, for
// several seeds: tool_choice 'required' and a named function give
// tool_calls whose arguments are valid for the tool's parameters,
// finish_reason 'tool_calls', whole and streamed (the streamed deltas
// adding up to the whole reply's calls); parallel_tool_calls false gives
// one call; tool_choice 'none' gives text; response_format with tools
// rejects. max_tokens leaves room for all the calls the tiny model makes
// (a call is never shortened to fit: a cut one is dropped, with 'length').
func TestBrowserToolCalls(t *testing.T) {
	ref := grammarref.Need(t)
	tb := newTab(t, blankPage)
	type run struct {
		Required chatReply   `json:"required"`
		Named    chatReply   `json:"named"`
		Streamed []chatReply `json:"streamed"`
		None     chatReply   `json:"none"`
	}
	got := eval[struct {
		Runs  []run `json:"runs"`
		Error struct {
			Code, Message, Field, Param string
		} `json:"error"`
	}](t, tb, apiScript(`
		const lm = await WasmLM.load('`+toolModelPath(t, tb.site)+`');
		const tools = [
			{ type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: `+weatherSchema+` } },
			{ type: 'function', function: { name: 'tell_time' } },
		];
		const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
		const named = { type: 'function', function: { name: 'get_weather' } };
		const runs = [];
		for (const seed of [1, 2, 3]) {
			const base = { messages, tools, temperature: 1, seed, max_tokens: 1200 };
			const required = await lm.chat.completions.create({ ...base, tool_choice: 'required' });
			const one = await lm.chat.completions.create({ ...base, tool_choice: named, parallel_tool_calls: false });
			const streamed = [];
			for await (const c of await lm.chat.completions.create({ ...base, tool_choice: 'required', stream: true })) streamed.push(c);
			const none = await lm.chat.completions.create({ ...base, tool_choice: 'none', max_tokens: 30 });
			runs.push({ required, named: one, streamed, none });
		}
		let error = null;
		try {
			await lm.chat.completions.create({ messages, tools, response_format: { type: 'json_object' } });
		} catch (e) {
			error = { code: e.code, message: e.message, field: e.field, param: e.param };
		}
		lm.unload();
		return { runs, error };
	`))
	require.Len(t, got.Runs, 3)
	var weatherArgs []string
	check := func(name string, calls []chatCall, only string) {
		require.NotEmpty(t, calls, name)
		for _, c := range calls {
			assert.NotEmpty(t, c.ID, name)
			assert.Equal(t, "function", c.Type, name)
			if only != "" {
				assert.Equal(t, only, c.Function.Name, name)
			}
			switch c.Function.Name {
			case "get_weather":
				weatherArgs = append(weatherArgs, c.Function.Arguments)
			case "tell_time":
				assert.Equal(t, "{}", c.Function.Arguments, name)
			default:
				t.Errorf("%s: a call of %q", name, c.Function.Name)
			}
		}
	}
	for i, r := range got.Runs {
		for name, reply := range map[string]chatReply{"required": r.Required, "named": r.Named} {
			require.Len(t, reply.Choices, 1)
			c := reply.Choices[0]
			assert.Equal(t, "tool_calls", *c.FinishReason, "seed %d %s", i+1, name)
			assert.Nil(t, c.Message.Content, "seed %d %s", i+1, name)
			only := ""
			if name == "named" {
				only = "get_weather"
				assert.Len(t, c.Message.ToolCalls, 1, "parallel_tool_calls: false")
			}
			check(name, c.Message.ToolCalls, only)
		}

		// The streamed deltas: per call its index, id, type and name, then
		// its arguments; together the calls of a whole reply (the same seed).
		var calls []chatCall
		var content strings.Builder
		for _, ch := range r.Streamed {
			require.Len(t, ch.Choices, 1)
			d := ch.Choices[0].Delta
			content.WriteString(d.Content)
			for _, tc := range d.ToolCalls {
				require.NotNil(t, tc.Index)
				if *tc.Index == len(calls) {
					calls = append(calls, tc)
					continue
				}
				require.Equal(t, len(calls)-1, *tc.Index)
				calls[len(calls)-1].Function.Arguments += tc.Function.Arguments
			}
		}
		assert.Equal(t, "assistant", r.Streamed[0].Choices[0].Delta.Role)
		assert.Equal(t, "tool_calls", *r.Streamed[len(r.Streamed)-1].Choices[0].FinishReason)
		assert.Empty(t, content.String())
		for j := range calls {
			calls[j].Index = nil
		}
		assert.Equal(t, r.Required.Choices[0].Message.ToolCalls, calls, "seed %d: streamed and whole calls", i+1)
		check("streamed", calls, "")

		n := r.None.Choices[0]
		assert.Empty(t, n.Message.ToolCalls)
		require.NotNil(t, n.Message.Content)
		assert.NotEmpty(t, *n.Message.Content)
		assert.Contains(t, []string{"stop", "length"}, *n.FinishReason)
	}
	require.NotEmpty(t, weatherArgs, "the named function's calls at least")
	validJSON(t, ref, weatherSchema, weatherArgs)
	assert.Equal(t, "invalid_argument", got.Error.Code)
	assert.Equal(t, "response_format", got.Error.Field)
	assert.Equal(t, "response_format", got.Error.Param)
	assert.Contains(t, got.Error.Message, `response_format applies with tool_choice "none" only: with tools and tool_choice "auto", the reply may be a tool call`)
}

// The demo page's JSON box asks for responseFormat json_object: at
// temperature 1 the text generated is a JSON object.
func TestBrowserDemoJSON(t *testing.T) {
	tb := newTab(t, "/")
	waitFor(t, tb, `document.getElementById('status').dataset.state === 'ready'`, 30*time.Second)
	typeInto(t, tb, "max-tokens", "200")
	typeInto(t, tb, "seed", "3")
	eval[chromedp.Void](t, tb, `(() => { const e = document.getElementById('temperature'); e.value = '1'; e.dispatchEvent(new Event('input')); })()`)
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("json"))))
	require.NoError(t, chromedp.Do(tb.ctx, chromedp.Click(chromedp.ID("generate"))))
	waitFor(t, tb, `document.getElementById('status').textContent === 'Done'`, 30*time.Second)
	assert.Equal(t, "stop", text(t, tb, "finish"))
	got := eval[string](t, tb, `[...document.querySelectorAll('#output .tok')].map((e) => e.textContent).join('')`)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(got), &v), "%q", got)
}

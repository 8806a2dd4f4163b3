package chat

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toolReference is testdata/tool_reference.json: templates that know tools
// rendered by @huggingface/jinja (see testdata/tool_reference.mjs).
type toolReference struct {
	DateString  string `json:"date_string"`
	HarmonyDate string `json:"harmony_date"`
	Templates   map[string]struct {
		Source   string `json:"source"`
		SHA256   string `json:"sha256"`
		BOSToken string `json:"bos_token"`
	} `json:"templates"`
	Tools         []openAITool               `json:"tools"`
	Conversations map[string][]openAIMessage `json:"conversations"`
	Cases         []struct {
		Template            string `json:"template"`
		Name                string `json:"name"`
		AddGenerationPrompt bool   `json:"add_generation_prompt"`
		Tools               bool   `json:"tools"`
		Output              string `json:"output"`
	} `json:"cases"`
}

// openAITool and openAIMessage are the OpenAI request shapes, which the
// hosts unwrap into Tool and Message as these helpers do.
type openAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type openAIMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func toolsFrom(t *testing.T, in []openAITool) []Tool {
	out := make([]Tool, len(in))
	for i, tool := range in {
		require.Equal(t, "function", tool.Type)
		out[i] = Tool{Name: tool.Function.Name, Description: tool.Function.Description, Parameters: tool.Function.Parameters}
	}
	return out
}

func messagesFrom(t *testing.T, in []openAIMessage) []Message {
	out := make([]Message, len(in))
	for i, m := range in {
		out[i] = Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, c := range m.ToolCalls {
			var args bytes.Buffer
			require.NoError(t, json.Compact(&args, c.Function.Arguments))
			out[i].ToolCalls = append(out[i].ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: args.String()})
		}
	}
	return out
}

func loadToolReference(t *testing.T) toolReference {
	t.Helper()
	ref := readTestJSON[toolReference](t, "tool_reference.json")
	require.NotEmpty(t, ref.Cases)
	return ref
}

// toolTemplates is, for each template of tool_reference.json, the family
// Detect finds and the tool format it gets.
var toolTemplates = map[string]struct {
	family string
	format ToolFormat
}{
	"qwen3":    {"qwen3", ToolFormatHermes},
	"qwen2.5":  {"chatml", ToolFormatHermes},
	"llama3.1": {"llama3", ToolFormatLlama3},
	"llama3.2": {"llama3", ToolFormatLlama3},
	"nemo":     {"mistral-v3-tekken", ToolFormatMistral},
	// Granite 4.0: Hermes calls under its own system text.
	"granite4.0": {"granite-4.0", ToolFormatHermes},
	// Qwen3.5: XML calls, <function=...> with <parameter=...> blocks.
	"qwen3.5": {"qwen35", ToolFormatQwenXML},
	// gpt-oss: harmony calls in the commentary channel.
	"gpt-oss": {"gpt-oss", ToolFormatHarmony},
	// LFM2.5: the tools as a JSON list, Python calls.
	"lfm2.5": {"lfm2", ToolFormatLFM2},
	// Gemma 4: declarations, calls and results in its own value syntax.
	"gemma4": {"gemma4", ToolFormatGemma4},
}

// TestToolJinjaReference: with tools, tool calls and tool results, the
// hermes, llama3 and mistral formats write what the real templates write
// (less the BOS), for every case of the reference. One difference is
// expected: without tools, llama3 is llama.cpp's legacy format, which has
// no "Cutting Knowledge Date" lines in the system block.
func TestToolJinjaReference(t *testing.T) {
	ref := loadToolReference(t)
	tools := toolsFrom(t, ref.Tools)
	for _, c := range ref.Cases {
		want := toolTemplates[c.Template]
		tmpl, err := Named(want.family)
		require.NoError(t, err)
		require.Equal(t, want.format, tmpl.ToolFormat())
		opts := Options{Date: ref.DateString}
		if want.family == "gpt-oss" {
			opts.Date = ref.HarmonyDate
		}
		if c.Tools {
			opts.Tools = tools
		}
		msgs := messagesFrom(t, ref.Conversations[c.Name])
		got, err := tmpl.ApplyWith(msgs, c.AddGenerationPrompt, opts)
		require.NoError(t, err, "%s: %s", c.Template, c.Name)
		jinja := strings.TrimPrefix(c.Output, ref.Templates[c.Template].BOSToken)
		if want.family == "gemma4" && c.AddGenerationPrompt && strings.HasSuffix(jinja, "<turn|>\n") {
			// llama.cpp opens the model's turn that the template leaves
			// closed after results and content (common_chat_params_init_gemma4).
			jinja += "<|turn>model\n"
		}
		if want.family == "llama3" && !c.Tools {
			jinja = strings.Replace(jinja, "Cutting Knowledge Date: December 2023\nToday Date: "+ref.DateString+"\n\n", "", 1)
		}
		assert.Equal(t, jinja, got, "%s: %s (add_generation_prompt=%v)", c.Template, c.Name, c.AddGenerationPrompt)
	}
}

// TestToolTemplatesDetected: each reference template is detected as its
// family with its tool format, from the source the reference was rendered
// from.
func TestToolTemplatesDetected(t *testing.T) {
	ref := loadToolReference(t)
	for name, want := range toolTemplates {
		t.Run(name, func(t *testing.T) {
			info := ref.Templates[name]
			src := templateSource(t, info.Source)
			sum := sha256.Sum256([]byte(src))
			require.Equal(t, info.SHA256, hex.EncodeToString(sum[:]))
			tmpl, err := Detect(src)
			require.NoError(t, err)
			assert.Equal(t, want.family, tmpl.Name())
			assert.Equal(t, want.format, tmpl.ToolFormat())
		})
	}
}

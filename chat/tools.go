package chat

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Tool is a function the model may call: OpenAI's
// {"type": "function", "function": {"name", "description", "parameters"}}
// with the wrapper taken off (ParseTools does that).
type Tool struct {
	// Name is the function's name, unique among the request's tools.
	Name string
	// Description tells the model what the function does ("" for none).
	Description string
	// Parameters is the JSON schema of the function's arguments, an object
	// schema; nil means the function takes no arguments.
	Parameters json.RawMessage
}

// ToolCall is one function call in an assistant message: what the model
// asked for, or, in a request's history, what it asked for earlier.
type ToolCall struct {
	// ID identifies the call; a "tool" message answers it by this id.
	ID string
	// Name is the function called.
	Name string
	// Arguments is the JSON text of the arguments object. ParseToolCalls
	// writes it compact ({"a":1}); in a request it may be any JSON text.
	Arguments string
}

// ToolMode is what a request's tool_choice asks of the model.
type ToolMode uint8

const (
	// ToolAuto (the zero value, OpenAI's "auto"): the model may answer or
	// call any of the tools.
	ToolAuto ToolMode = iota
	// ToolNone ("none"): the model answers in text. The tools are not
	// described in the prompt (earlier calls and results still are).
	ToolNone
	// ToolRequired ("required"): the model calls one or more of the tools.
	ToolRequired
	// ToolFunction ({"type": "function", "function": {"name": ...}}): the
	// model calls ToolChoice.Function, the only tool described.
	ToolFunction
)

// ToolChoice is a request's tool_choice. The zero value is "auto".
type ToolChoice struct {
	Mode ToolMode
	// Function names the tool to call when Mode is ToolFunction.
	Function string
}

// String is the choice as an OpenAI request writes it, for messages:
// "auto", "none", "required", or function "name".
func (c ToolChoice) String() string {
	switch c.Mode {
	case ToolNone:
		return `"none"`
	case ToolRequired:
		return `"required"`
	case ToolFunction:
		return fmt.Sprintf("function %q", c.Function)
	}
	return `"auto"`
}

// ToolFormat is how a model is told about tools and how it writes a call:
// each template family has one (Template.ToolFormat).
type ToolFormat uint8

const (
	// ToolFormatGeneric is llama.cpp's generic format, for templates without
	// tool support: the system message lists the tools as JSON and asks for
	// a JSON reply, {"tool_call": {"name", "arguments"}}, {"tool_calls":
	// [...]} or {"response": "..."}.
	ToolFormatGeneric ToolFormat = iota + 1
	// ToolFormatLlama3 is Llama 3.1/3.2/3.3's: the tools in the system
	// message, a call is the reply {"name": ..., "parameters": {...}},
	// results come back as role ipython.
	ToolFormatLlama3
	// ToolFormatHermes is Hermes 2 Pro's, Qwen 2.5's and Qwen3's: a <tools>
	// list in the system message, calls as
	// <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, results
	// as <tool_response> blocks in a user turn.
	ToolFormatHermes
	// ToolFormatMistral is Mistral Nemo's (v3 and later): [AVAILABLE_TOOLS]
	// before the last user message, calls as [TOOL_CALLS][{"name",
	// "arguments", "id"}], results as [TOOL_RESULTS]...[/TOOL_RESULTS].
	ToolFormatMistral
	// ToolFormatQwenXML is Qwen3.5's (and Qwen3-Coder's): the tools listed
	// in a system message of their own, a call as <tool_call>, then
	// <function=NAME> holding one <parameter=P> block per argument (a
	// string as it is, other values as JSON), results as <tool_response>
	// blocks in a user turn.
	ToolFormatQwenXML
	// ToolFormatHarmony is gpt-oss's: the tools as a TypeScript namespace
	// in the developer message, a call as a commentary message
	// "to=functions.NAME" holding the JSON arguments and ended by
	// <|call|> (one call a message), a result as a message from
	// functions.NAME holding a JSON string.
	ToolFormatHarmony
	// ToolFormatLFM2 is LFM2.5's: the tools as a JSON list in the system
	// message, calls as Python calls,
	// <|tool_call_start|>[name(arg=value)]<|tool_call_end|>, results as
	// "tool" turns.
	ToolFormatLFM2
	// ToolFormatGemma4 is Gemma 4's: the tools declared in the system turn
	// in its own value syntax, calls as
	// <|tool_call>call:NAME{key:value}<tool_call|> (strings between <|"|>
	// markers), results inside the model's turn after its calls.
	ToolFormatGemma4
)

// String returns the format's name: "generic", "llama3", "hermes",
// "mistral", "qwen-xml", "harmony", "lfm2", "gemma4".
func (f ToolFormat) String() string {
	switch f {
	case ToolFormatGeneric:
		return "generic"
	case ToolFormatLlama3:
		return "llama3"
	case ToolFormatHermes:
		return "hermes"
	case ToolFormatMistral:
		return "mistral"
	case ToolFormatQwenXML:
		return "qwen-xml"
	case ToolFormatHarmony:
		return "harmony"
	case ToolFormatLFM2:
		return "lfm2"
	case ToolFormatGemma4:
		return "gemma4"
	}
	return fmt.Sprintf("ToolFormat(%d)", uint8(f))
}

// familyToolFormats is each family's tool format when the template source
// does not say otherwise (Named); families not listed use the generic one.
var familyToolFormats = map[string]ToolFormat{
	"llama3":            ToolFormatLlama3,
	"chatml":            ToolFormatHermes,
	"qwen3":             ToolFormatHermes,
	"granite-4.0":       ToolFormatHermes,
	"qwen35":            ToolFormatQwenXML,
	"gpt-oss":           ToolFormatHarmony,
	"lfm2":              ToolFormatLFM2,
	"gemma4":            ToolFormatGemma4,
	"mistral-v3":        ToolFormatMistral,
	"mistral-v3-tekken": ToolFormatMistral,
	"mistral-v7":        ToolFormatMistral,
}

// ToolFormat returns the template's tool format. A Template from Named has
// its family's: Llama 3.x's for llama3, Hermes for chatml and qwen3,
// Mistral's for mistral-v3, mistral-v3-tekken and mistral-v7, Qwen3.5's
// XML calls for qwen35, harmony's for gpt-oss, Python calls for lfm2,
// Gemma 4's calls for gemma4, the
// generic one for every other family (plain
// included). Detect looks at the source,
// as llama.cpp chooses a tool handler: a family's own format only when the
// template knows it (Llama 3.x's writes an ipython header, Hermes/Qwen's
// <tool_call>, Mistral's [TOOL_CALLS]), the generic one otherwise (Llama
// 3.0, a ChatML model trained without tools). The zero Template has none (0).
func (t Template) ToolFormat() ToolFormat {
	if t.f == nil {
		return 0
	}
	if t.tools != 0 {
		return t.tools
	}
	if f, ok := familyToolFormats[t.f.name]; ok {
		return f
	}
	return ToolFormatGeneric
}

// detectToolFormat is the tool format of a template source in family name,
// from the markers llama.cpp's handler selection looks for.
func detectToolFormat(name, src string) ToolFormat {
	f, ok := familyToolFormats[name]
	if !ok || isLlamaCppName(src) {
		return 0 // the family's default
	}
	var marker string
	switch f {
	case ToolFormatLlama3:
		marker = "<|start_header_id|>ipython<|end_header_id|>"
	case ToolFormatHermes:
		marker = "<tool_call>"
	case ToolFormatMistral:
		marker = "[TOOL_CALLS]"
	case ToolFormatQwenXML:
		marker = "<parameter="
	case ToolFormatHarmony:
		marker = "<|call|>"
	case ToolFormatLFM2:
		marker = "List of tools: ["
	case ToolFormatGemma4:
		marker = "'<|tool_call>call:'" // llama.cpp's test for its Gemma 4 handler
	}
	if strings.Contains(src, marker) {
		return f
	}
	return ToolFormatGeneric
}

// activeTools returns the tools the prompt describes: none without tools or
// with ToolNone, the named one with ToolFunction, all of them otherwise. It
// checks the tools and the choice.
func activeTools(tools []Tool, choice ToolChoice) ([]Tool, error) {
	seen := make(map[string]bool, len(tools))
	for i, tool := range tools {
		if err := checkTool(tool); err != nil {
			return nil, fmt.Errorf("%w: tools[%d]: %v", ErrInvalidTool, i, err)
		}
		if seen[tool.Name] {
			return nil, fmt.Errorf("%w: tools[%d]: the name %q is used twice", ErrInvalidTool, i, tool.Name)
		}
		seen[tool.Name] = true
	}
	switch choice.Mode {
	case ToolAuto, ToolRequired:
		if choice.Mode == ToolRequired && len(tools) == 0 {
			return nil, fmt.Errorf("%w: tool_choice is required but there are no tools", ErrInvalidTool)
		}
		return tools, nil
	case ToolNone:
		return nil, nil
	case ToolFunction:
		for _, tool := range tools {
			if tool.Name == choice.Function {
				return []Tool{tool}, nil
			}
		}
		return nil, fmt.Errorf("%w: tool_choice names %q, which is not among the tools", ErrInvalidTool, choice.Function)
	}
	return nil, fmt.Errorf("%w: tool_choice mode %d", ErrInvalidTool, choice.Mode)
}

// checkTool checks a tool's name and that its parameters, if any, are a
// JSON object.
func checkTool(tool Tool) error {
	if tool.Name == "" {
		return fmt.Errorf("function.name is empty")
	}
	for _, r := range tool.Name {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return fmt.Errorf("function.name %q: only letters, digits, '_', '-' and '.' are allowed", tool.Name)
		}
	}
	if tool.Parameters != nil {
		n, err := parseJSON(string(tool.Parameters))
		if err != nil {
			return fmt.Errorf("function.parameters of %q: %v", tool.Name, err)
		}
		if n.kind != '{' {
			return fmt.Errorf("function.parameters of %q is not a JSON object", tool.Name)
		}
	}
	return nil
}

// openAITool is the tool as OpenAI's request writes it, keys in OpenAI's
// order: what templates iterate over and what the generic prompt prints.
func (tool Tool) openAITool() jsonNode {
	fn := jsonObject(nil)
	fn.keys = append(fn.keys, "name")
	fn.items = append(fn.items, jsonString(tool.Name))
	if tool.Description != "" {
		fn.keys = append(fn.keys, "description")
		fn.items = append(fn.items, jsonString(tool.Description))
	}
	if tool.Parameters != nil {
		params, _ := parseJSON(string(tool.Parameters)) // checked by checkTool
		fn.keys = append(fn.keys, "parameters")
		fn.items = append(fn.items, params)
	}
	return jsonObject([]string{"type", "function"}, jsonString("function"), fn)
}

// arguments returns the call's arguments as JSON, or, when they are not
// valid JSON, as a JSON string holding their text (what a template's tojson
// prints for a string).
func (c ToolCall) arguments() (jsonNode, bool) {
	n, err := parseJSON(c.Arguments)
	if err != nil {
		return jsonString(c.Arguments), false
	}
	return n, true
}

// hasToolMessages reports whether a conversation holds tool calls or tool
// results, which only the tool formats render.
func hasToolMessages(msgs []Message) bool {
	for _, m := range msgs {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

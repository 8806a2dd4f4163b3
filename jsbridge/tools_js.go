package jsbridge

import (
	"fmt"
	"strings"
	"syscall/js"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/policy"
)

// Tool calling in a chat: the options tools, toolChoice and
// parallelToolCalls (OpenAI's tools, tool_choice, parallel_tool_calls,
// their objects in OpenAI's shapes), the messages' tool_calls, tool_call_id
// and name, and the calls parsed from the reply. The template describes the
// tools to the model in its tool format (policy.ChatPrompt.ToolFormat); a forced call
// (toolChoice 'required' or a function) is sampled under policy.Grammars.ToolGrammar;
// the reply's calls are read back with chat.ParseToolCalls, and while
// streaming with a chat.ToolCallStream.

// maxTools bounds a request's tools, as OpenAI's API does.
const maxTools = 128

// The keys of a tool, its function, a toolChoice object and its function.
var (
	toolFields           = []string{"type", "function"}
	toolFunctionFields   = []string{"name", "description", "parameters", "strict"}
	toolChoiceFields     = []string{"type", "function"}
	toolChoiceFuncFields = []string{"name"}
)

// parseTools reads the chat options tools, toolChoice and parallelToolCalls
// into r, and checks them against each other and against the response
// format (read before).
func (b *Binding) parseTools(f fields, r *request) error {
	var err error
	if r.chatOpts.Tools, err = b.readTools(f); err != nil {
		return err
	}
	if r.chatOpts.ToolChoice, err = b.readToolChoice(f, r.chatOpts.Tools); err != nil {
		return err
	}
	if r.parallel, err = f.boolean("parallelToolCalls", true); err != nil {
		return err
	}
	if _, given := f.value("parallelToolCalls"); given && len(r.chatOpts.Tools) == 0 {
		return invalid("parallelToolCalls", "is only allowed when tools are given")
	}
	if r.callsTools() {
		field := ""
		switch t := r.format.Type; {
		case r.format.Grammar != "":
			field = "grammar"
		case t != "" && t != policy.FormatText:
			field = "responseFormat"
		}
		if field != "" {
			return invalid(field, "applies with tool_choice \"none\" only: with tools and tool_choice %s, the reply may be a tool call", r.chatOpts.ToolChoice.String())
		}
	}
	return nil
}

// readTools reads tools: [{type: 'function', function: {name, description,
// parameters, strict}}]. strict is accepted and changes nothing: a forced
// call always matches its parameters' schema.
func (b *Binding) readTools(f fields) ([]chat.Tool, error) {
	v, ok := f.value("tools")
	if !ok {
		return nil, nil
	}
	n, err := b.arrayLen(v, "tools", maxTools, false)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, invalid("tools", "must not be empty (omit it for no tools)")
	}
	tools := make([]chat.Tool, n)
	seen := make(map[string]bool, n)
	for i := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		tf, err := b.readFields(b.get(v, i), at, toolFields)
		if err != nil {
			return nil, err
		}
		if typ, _ := tf.value("type"); typ.Type() != js.TypeString || typ.String() != "function" {
			return nil, invalid(at+".type", "must be 'function', got %s", b.describe(typ))
		}
		fn, ok := tf.value("function")
		if !ok {
			return nil, invalid(at+".function", "is required: {name, description, parameters}")
		}
		ff, err := b.readFields(fn, at+".function", toolFunctionFields)
		if err != nil {
			return nil, err
		}
		t := &tools[i]
		name, _ := ff.value("name")
		if t.Name, err = b.functionName(name, at+".function.name"); err != nil {
			return nil, err
		}
		if seen[t.Name] {
			return nil, invalid(at+".function.name", "%q is the name of an earlier tool: names must be unique", t.Name)
		}
		seen[t.Name] = true
		if d, ok := ff.value("description"); ok {
			if d.Type() != js.TypeString {
				return nil, invalid(at+".function.description", "must be a string, got %s", b.describe(d))
			}
			t.Description = d.String()
		}
		if s, ok := ff.value("strict"); ok && s.Type() != js.TypeBoolean {
			return nil, invalid(at+".function.strict", "must be a boolean, got %s", b.describe(s))
		}
		if p, ok := ff.value("parameters"); ok {
			if p.Type() != js.TypeObject || b.array.Call("isArray", p).Bool() {
				return nil, invalid(at+".function.parameters", "must be a JSON schema object, got %s", b.describe(p))
			}
			if t.Parameters, err = b.jsonText(p, at+".function.parameters"); err != nil {
				return nil, err
			}
		}
	}
	return tools, nil
}

// functionName checks a function's (or a schema's) name as OpenAI's API
// does: 1 to 64 letters, digits, '_' or '-'.
func (b *Binding) functionName(v js.Value, field string) (string, error) {
	if v.Type() != js.TypeString || v.String() == "" {
		return "", invalid(field, "must be a non-empty string, got %s", b.describe(v))
	}
	name := v.String()
	if len(name) > 64 || strings.IndexFunc(name, func(r rune) bool {
		return !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	}) >= 0 {
		return "", invalid(field, "must be 1 to 64 letters, digits, '_' or '-', got %s", b.describe(v))
	}
	return name, nil
}

// readToolChoice reads toolChoice: 'auto' (the default), 'none',
// 'required', or {type: 'function', function: {name}} naming one of tools.
func (b *Binding) readToolChoice(f fields, tools []chat.Tool) (chat.ToolChoice, error) {
	v, ok := f.value("toolChoice")
	if !ok {
		return chat.ToolChoice{}, nil
	}
	if len(tools) == 0 {
		return chat.ToolChoice{}, invalid("toolChoice", "is only allowed when tools are given")
	}
	var c chat.ToolChoice
	if v.Type() == js.TypeString {
		switch v.String() {
		case "auto":
			c.Mode = chat.ToolAuto
		case "none":
			c.Mode = chat.ToolNone
		case "required":
			c.Mode = chat.ToolRequired
		default:
			return c, invalid("toolChoice", "must be 'auto', 'none', 'required' or {type: 'function', function: {name}}, got %s", b.describe(v))
		}
	} else {
		cf, err := b.readFields(v, "toolChoice", toolChoiceFields)
		if err != nil {
			return c, err
		}
		if typ, _ := cf.value("type"); typ.Type() != js.TypeString || typ.String() != "function" {
			return c, invalid("toolChoice.type", "must be 'function', got %s", b.describe(typ))
		}
		fn, ok := cf.value("function")
		if !ok {
			return c, invalid("toolChoice.function", "is required: {name}")
		}
		ff, err := b.readFields(fn, "toolChoice.function", toolChoiceFuncFields)
		if err != nil {
			return c, err
		}
		name, _ := ff.value("name")
		if c.Function, err = b.functionName(name, "toolChoice.function.name"); err != nil {
			return c, err
		}
		c.Mode = chat.ToolFunction
	}
	if c.Mode == chat.ToolFunction && !hasTool(tools, c.Function) {
		return c, invalid("toolChoice.function.name", "names %q, which is not among the tools", c.Function)
	}
	return c, nil
}

func hasTool(tools []chat.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// callsTools reports whether the model is offered the tools: it may (auto)
// or must (required, a function) answer with calls, which the reply is
// parsed for.
func (r *request) callsTools() bool {
	return len(r.chatOpts.Tools) > 0 && r.chatOpts.ToolChoice.Mode != chat.ToolNone
}

// forcedToolCall reports whether the reply must be a tool call.
func (r *request) forcedToolCall() bool {
	m := r.chatOpts.ToolChoice.Mode
	return len(r.chatOpts.Tools) > 0 && (m == chat.ToolRequired || m == chat.ToolFunction)
}

// maxToolCallsRead bounds the tool calls of one message the bridge reads.
const maxToolCallsRead = 1024

// messageTools reads the tool fields of messages[i] into msg: an
// assistant's tool_calls ([{id, type: 'function', function: {name,
// arguments}}], arguments a JSON string or an object), a tool result's
// tool_call_id (required for role 'tool') and name.
func (b *Binding) messageTools(m js.Value, i int, msg *chat.Message) error {
	at := fmt.Sprintf("messages[%d]", i)
	if calls := b.get(m, "tool_calls"); !isNullish(calls) {
		if msg.Role != "assistant" {
			return invalid(at+".tool_calls", "only assistant messages make tool calls")
		}
		n, err := b.arrayLen(calls, at+".tool_calls", maxToolCallsRead, false)
		if err != nil {
			return err
		}
		for j := range n {
			call, err := b.messageToolCall(b.get(calls, j), fmt.Sprintf("%s.tool_calls[%d]", at, j))
			if err != nil {
				return err
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
	}
	id := b.get(m, "tool_call_id")
	switch {
	case !isNullish(id) && msg.Role != "tool":
		return invalid(at+".tool_call_id", "only tool messages answer a call")
	case id.Type() == js.TypeString:
		msg.ToolCallID = id.String()
	case !isNullish(id):
		return invalid(at+".tool_call_id", "must be a string, got %s", b.describe(id))
	case msg.Role == "tool":
		return invalid(at+".tool_call_id", "is required in a message of role 'tool': the id of the call it answers")
	}
	name := b.get(m, "name")
	switch {
	case name.Type() == js.TypeString:
		msg.Name = name.String()
	case !isNullish(name):
		return invalid(at+".name", "must be a string, got %s", b.describe(name))
	}
	return nil
}

// messageToolCall reads one call of an assistant message's tool_calls.
func (b *Binding) messageToolCall(v js.Value, at string) (chat.ToolCall, error) {
	var c chat.ToolCall
	if v.Type() != js.TypeObject {
		return c, invalid(at, "must be an object {id, type: 'function', function: {name, arguments}}, got %s", b.describe(v))
	}
	id := b.get(v, "id")
	if id.Type() != js.TypeString {
		return c, invalid(at+".id", "must be a string, got %s", b.describe(id))
	}
	c.ID = id.String()
	if typ := b.get(v, "type"); typ.Type() != js.TypeString || typ.String() != "function" {
		return c, invalid(at+".type", "must be 'function', got %s", b.describe(typ))
	}
	fn := b.get(v, "function")
	if fn.Type() != js.TypeObject {
		return c, invalid(at+".function", "must be an object {name, arguments}, got %s", b.describe(fn))
	}
	name := b.get(fn, "name")
	if name.Type() != js.TypeString || name.String() == "" {
		return c, invalid(at+".function.name", "must be a non-empty string, got %s", b.describe(name))
	}
	c.Name = name.String()
	switch args := b.get(fn, "arguments"); {
	case args.Type() == js.TypeString:
		c.Arguments = args.String()
	case isNullish(args):
		c.Arguments = "{}"
	case args.Type() == js.TypeObject && !b.array.Call("isArray", args).Bool():
		text, err := b.jsonText(args, at+".function.arguments")
		if err != nil {
			return c, err
		}
		c.Arguments = string(text)
	default:
		return c, invalid(at+".function.arguments", "must be a JSON string (or an object), got %s", b.describe(args))
	}
	return c, nil
}

// callsValue is tool calls for JavaScript: [{id, name, arguments}] (the
// page wraps each in OpenAI's {id, type: 'function', function: {name,
// arguments}}).
func callsValue(calls []chat.ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"id": c.ID, "name": c.Name, "arguments": c.Arguments}
	}
	return out
}

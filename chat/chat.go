// Package chat turns OpenAI-shaped chat messages into the one prompt string a
// chat model was trained on.
//
// GGUF files carry a Jinja template in tokenizer.chat_template. We do not run
// Jinja: like llama.cpp's llm_chat_detect_template / llm_chat_apply_template
// (src/llama-chat.cpp), Detect recognises the template's family from
// substrings of its source, and each family is formatted by hand-written Go.
// Detection follows llama.cpp's checks in llama.cpp's order, and every family
// reproduces llama.cpp's output byte for byte (the tests check this against
// the expected outputs in llama.cpp's tests/test-chat-template.cpp, which
// cover every family here except zephyr). Where llama.cpp's formatting
// differs from what the model's own Jinja template would print (a system
// message merged into the first user turn, trimmed whitespace, a dropped
// message), we follow llama.cpp, not Jinja.
//
// Two families are ours, not llama.cpp's: "plain", for models with no chat
// template at all (such as the tiny story models, see Named), and "qwen3",
// Qwen3's hybrid-thinking template (see Options): llama.cpp's legacy path
// formats it as chatml, its server renders the Jinja template, and qwen3
// reproduces that rendering byte for byte, which equals chatml's output for
// a conversation without reasoning and with thinking on.
//
// The 2026 families follow their Jinja templates the same way, since
// llama.cpp's server renders those (families_2026.go): "qwen35" (Qwen3.5),
// "gpt-oss" (the harmony format), "gemma4", "lfm2" (LFM2.5) and
// "granite-4.0"; gpt-oss and granite-4.0 are llama.cpp's names, the others
// ours.
//
// A reply's reasoning ("<think>...</think>" at its start, Gemma 4's thought
// channel, gpt-oss's analysis channel) is separated from its content by
// SplitReasoning and ReasoningParser, as llama.cpp's server does with its
// default reasoning_format; a prompt that ends inside the reasoning
// (Qwen3.5's) hands its reader Template.ReplyPrefix.
//
// Tool calling (OpenAI's tools, tool_choice, tool_calls) goes through a
// ToolFormat, one per template (Template.ToolFormat): Llama 3.x's JSON
// calls, Hermes/Qwen's <tool_call> blocks, Qwen3.5's XML calls
// (<function=NAME> with <parameter=P> blocks), gpt-oss's harmony messages
// to functions.NAME, LFM2.5's Python calls, Gemma 4's
// <|tool_call>call:NAME{...} calls, Mistral's [TOOL_CALLS] list,
// or llama.cpp's generic JSON reply for every template without tools of
// its own. Options.Tools puts the tools in the prompt; assistant messages with
// ToolCalls and "tool" messages are written as the format's template writes
// them (byte for byte against the real templates, rendered by a Jinja
// engine, where there is one). ParseToolCalls and ToolCallStream read the
// calls back out of a reply, whole or as it streams; a forced call
// (tool_choice "required" or a function) is sampled under a grammar of the
// format's call syntax. Without tools and tool messages, every template
// writes exactly what it wrote before.
package chat

import (
	"fmt"
	"slices"
	"strings"
)

// Message is one chat message.
type Message struct {
	// Role is "system", "user" or "assistant"; a template may define more
	// (granite also takes "assistant_tool_call" and "tool_response").
	Role string
	// Content is the message text. Most families copy it byte for byte; some
	// trim ASCII whitespace from its ends, exactly where llama.cpp does.
	Content string
	// ToolCalls are the calls an assistant message made (nil for none).
	ToolCalls []ToolCall
	// ToolCallID, in a message of role "tool" (a tool's result), is the id
	// of the call it answers. A "tool" message without one is refused.
	ToolCallID string
	// Name, in a "tool" message, is the function that was called (optional;
	// the generic format writes it).
	Name string
}

// Template formats a conversation in one chat-template family. The zero value
// is not usable (Apply returns ErrUnknownTemplate); get one from Detect or
// Named. A Template is immutable and safe for concurrent use.
type Template struct {
	f     *family
	tools ToolFormat // 0: the family's default (see ToolFormat)
}

// family is one chat format: how to render messages, which end-of-turn
// strings stop a generation, and which roles beyond system/user/assistant it
// understands.
type family struct {
	name       string
	format     func(b *strings.Builder, msgs []Message, addAssistant bool)
	stop       []string
	extraRoles []string
	// formatWith, when set, replaces format for a family that takes
	// Options (its template has a thinking switch).
	formatWith func(b *strings.Builder, msgs []Message, addAssistant bool, opts Options)
	// thinking: Options.DisableThinking changes what formatWith writes.
	thinking bool
	// toolMessages, when set, rewrites a conversation with tools for the
	// family's tool format in place of that format's rewrite (Granite
	// 4.0's Hermes calls under its own system text).
	toolMessages func(msgs []Message, tools []Tool) []Message
}

// Options are the inputs of a template beyond the messages: the Jinja
// keyword arguments (llama.cpp's chat_template_kwargs) that a family here
// honours. The zero value is every template's default; a family without the
// switch ignores it, as its Jinja template would.
type Options struct {
	// DisableThinking is enable_thinking=false. Qwen3 thinks by default: its
	// reply starts with a "<think>...</think>" block. With thinking disabled,
	// the assistant opening is followed by an empty block,
	// "<think>\n\n</think>\n\n", exactly as Qwen3's template writes it, and
	// the model answers at once.
	DisableThinking bool

	// Tools are the functions the model may call; they are described to it
	// the way the template's ToolFormat does, unless ToolChoice is
	// ToolNone. Nil, with no tool calls or tool results among the messages,
	// renders exactly what the template renders without tools.
	Tools []Tool
	// ToolChoice is the request's tool_choice: ToolFunction describes only
	// that tool. Forcing the call is the sampler's job (ToolCallGrammar).
	ToolChoice ToolChoice
	// Date is the day a template writes, as given: the "Today Date" of
	// Llama 3.x's tool prompt (llama.cpp passes the current day, "02 Jan
	// 2006"; "" writes the template's own default, "26 Jul 2024"), and the
	// "Current date" of gpt-oss's system message (its template calls
	// strftime_now("%Y-%m-%d"); "" writes today's UTC date, so the prompt
	// changes at midnight UTC). A host that needs the same prompt every
	// day passes a fixed date (the OpenAI server takes chat_template_kwargs
	// date_string).
	Date string
}

// Named returns the template with the given name, one of Names(): the
// llama.cpp names ("chatml", "llama2", "llama2-sys", "llama2-sys-bos",
// "llama2-sys-strip", "llama3", "mistral-v1", "mistral-v3",
// "mistral-v3-tekken", "mistral-v7", "zephyr", "phi3", "phi4", "gemma", ...)
// plus "qwen3" and "plain".
//
// "plain" is for a model with no chat template: the message contents are
// joined in order with "\n", with no role markers, and addAssistant appends
// nothing. It has no stop strings. Choose it only when the model carries no
// template; Detect never returns it.
func Named(name string) (Template, error) {
	if f, ok := families[name]; ok {
		return Template{f: f}, nil
	}
	if isLlamaCppName(name) {
		return Template{}, fmt.Errorf("%w: llama.cpp's %q template is not implemented", ErrUnknownTemplate, name)
	}
	return Template{}, fmt.Errorf("%w: no template named %q (known: %s)",
		ErrUnknownTemplate, name, strings.Join(Names(), ", "))
}

// Names returns the names Named accepts, sorted.
func Names() []string {
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Name returns the template's family name as Named accepts it ("" for the
// zero Template).
func (t Template) Name() string {
	if t.f == nil {
		return ""
	}
	return t.f.name
}

// Stop returns the strings that end an assistant turn in this family
// (for example "<|im_end|>", "<|eot_id|>", "<end_of_turn>", "</s>"), for an
// engine whose vocabulary does not mark them as end-of-generation tokens. The
// first is the marker the format writes after an assistant message. The
// result is a fresh slice; "plain" and the zero Template have none.
func (t Template) Stop() []string {
	if t.f == nil {
		return nil
	}
	return slices.Clone(t.f.stop)
}

// Thinking reports whether the template has a thinking switch, that is
// whether Options.DisableThinking changes what it writes (Qwen3, Qwen3.5,
// Gemma 4).
func (t Template) Thinking() bool {
	return t.f != nil && t.f.thinking
}

// Apply renders msgs as one prompt with the template's default options
// (ApplyWith with the zero Options). With addAssistant it ends with the opening
// of an assistant turn, so the model's continuation is the reply (a few
// llama.cpp formats, such as orion and minicpm, always or never write that
// opening; Apply does what llama.cpp does).
//
// Apply rejects an empty conversation (ErrNoMessages) and a role the template
// does not define (ErrUnknownRole, naming the role and its index). Families
// without a system slot handle a system message as llama.cpp does: llama2,
// gemma and orion merge it into the next user turn, yandex drops it, gigachat
// keeps it only as the first message.
func (t Template) Apply(msgs []Message, addAssistant bool) (string, error) {
	return t.ApplyWith(msgs, addAssistant, Options{})
}

// ApplyWith renders msgs as one prompt, as Apply does, with opts (which a
// template without that switch ignores).
func (t Template) ApplyWith(msgs []Message, addAssistant bool, opts Options) (string, error) {
	if t.f == nil {
		return "", fmt.Errorf("%w: zero Template (use Detect or Named)", ErrUnknownTemplate)
	}
	if len(msgs) == 0 {
		return "", fmt.Errorf("%w: template %s needs at least one message", ErrNoMessages, t.f.name)
	}
	size := 64
	for i, m := range msgs {
		if m.Role == "tool" && m.ToolCallID == "" {
			return "", fmt.Errorf("%w: message %d has role %q without a tool_call_id (a tool result answers a call by its id)",
				ErrUnknownRole, i, m.Role)
		}
		if !t.f.allows(m.Role) {
			return "", fmt.Errorf("%w: message %d has role %q; template %s takes %s",
				ErrUnknownRole, i, m.Role, t.f.name, strings.Join(t.f.roles(), ", "))
		}
		size += len(m.Content) + 48 // 48 bytes covers the longest per-message markup
	}
	if len(opts.Tools) > 0 || opts.ToolChoice != (ToolChoice{}) || hasToolMessages(msgs) {
		return t.applyTools(msgs, addAssistant, opts)
	}
	var b strings.Builder
	b.Grow(size)
	t.f.render(&b, msgs, addAssistant, opts)
	return b.String(), nil
}

// render writes msgs in the family's format.
func (f *family) render(b *strings.Builder, msgs []Message, addAssistant bool, opts Options) {
	if f.formatWith != nil {
		f.formatWith(b, msgs, addAssistant, opts)
	} else {
		f.format(b, msgs, addAssistant)
	}
}

// allows reports whether role is one the family renders.
func (f *family) allows(role string) bool {
	switch role {
	case "system", "user", "assistant", "tool":
		return true
	}
	return slices.Contains(f.extraRoles, role)
}

// roles lists the roles the family renders, for error messages.
func (f *family) roles() []string {
	return append([]string{"system", "user", "assistant", "tool"}, f.extraRoles...)
}

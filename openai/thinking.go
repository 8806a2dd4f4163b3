package openai

import (
	"bytes"
	"encoding/json"

	"github.com/wasmlm/wasmlm/chat"
)

// templateOptions reads the chat-template options of a chat request:
// enable_thinking, at the top level or, as llama.cpp's server takes it, in
// chat_template_kwargs (an object; its other keys are Jinja variables that
// no format here reads, and are ignored, but for date_string). Each must be
// a boolean, and the two must agree when both are given. A template without
// a thinking switch ignores the option, as its Jinja template would.
// chat_template_kwargs.date_string, a string, is chat.Options.Date: the day
// Llama 3.x's tool prompt and gpt-oss's system message write, so a client
// can have the same prompt on any day.
func (r *ChatRequest) templateOptions() (chat.Options, *Error) {
	enable := r.EnableThinking
	date := ""
	raw := bytes.TrimSpace(r.ChatTemplateKwargs)
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if raw[0] != '{' {
			return chat.Options{}, BadRequest("chat_template_kwargs", "invalid_type",
				"chat_template_kwargs must be an object, got %s", jsonValue(literalKind(raw)))
		}
		var kwargs map[string]json.RawMessage
		if err := json.Unmarshal(raw, &kwargs); err != nil {
			return chat.Options{}, BadRequest("chat_template_kwargs", "invalid_json", "chat_template_kwargs is not a valid object")
		}
		if v, ok := kwargs["date_string"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if err := json.Unmarshal(v, &date); err != nil {
				return chat.Options{}, BadRequest("chat_template_kwargs.date_string", "invalid_type",
					"chat_template_kwargs.date_string must be a string, got %s", jsonValue(literalKind(bytes.TrimSpace(v))))
			}
		}
		if v, ok := kwargs["enable_thinking"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			var b bool
			if err := json.Unmarshal(v, &b); err != nil {
				return chat.Options{}, BadRequest("chat_template_kwargs.enable_thinking", "invalid_type",
					"chat_template_kwargs.enable_thinking must be a boolean, got %s", jsonValue(literalKind(bytes.TrimSpace(v))))
			}
			if enable != nil && *enable != b {
				return chat.Options{}, BadRequest("enable_thinking", "invalid_value",
					"enable_thinking is %v but chat_template_kwargs.enable_thinking is %v: give one, or the same value", *enable, b)
			}
			enable = &b
		}
	}
	return chat.Options{DisableThinking: enable != nil && !*enable, Date: date}, nil
}

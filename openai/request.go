package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/sampling"
)

// OpenAI's limits, which this API keeps.
const (
	maxStops     = 4   // "Up to 4 sequences where the API will stop generating"
	maxLogitBias = 100 // logit_bias values are in [-100, 100]
)

// SamplingRequest holds the request fields that both completion endpoints
// share. Pointers tell an omitted (or null) field from a zero one.
type SamplingRequest struct {
	Model               string    `json:"model"`
	MaxTokens           *int      `json:"max_tokens"`
	MaxCompletionTokens *int      `json:"max_completion_tokens"`
	Temperature         *float64  `json:"temperature"`
	TopP                *float64  `json:"top_p"`
	TopK                *int      `json:"top_k"`
	MinP                *float64  `json:"min_p"`
	RepeatPenalty       *float64  `json:"repeat_penalty"`
	PresencePenalty     *float64  `json:"presence_penalty"`
	FrequencyPenalty    *float64  `json:"frequency_penalty"`
	Seed                *int64    `json:"seed"`
	LogitBias           logitBias `json:"logit_bias"`
	Stop                stopList  `json:"stop"`
	Stream              bool      `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int `json:"n"`
	// ResponseFormat and Grammar are read by responseFormat (format.go).
	ResponseFormat json.RawMessage `json:"response_format"`
	Grammar        json.RawMessage `json:"grammar"`
	// context_shift and n_keep (shift.go).
	shiftRequest
}

// CompletionRequest is POST /v1/completions.
type CompletionRequest struct {
	SamplingRequest
	Prompt json.RawMessage `json:"prompt"`
	// Logprobs (0 to 20, null: none) asks for each token's
	// log-probability and those of its Logprobs most likely alternatives.
	Logprobs *int `json:"logprobs"`
}

// ChatRequest is POST /v1/chat/completions.
type ChatRequest struct {
	SamplingRequest
	Messages []chatMessage `json:"messages"`
	// EnableThinking and chat_template_kwargs.enable_thinking (llama.cpp's
	// form) switch a thinking template's reasoning off (templateOptions).
	EnableThinking     *bool           `json:"enable_thinking"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs"`
	// Tools, ToolChoice and ParallelToolCalls are read by toolOptions
	// (tools.go).
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	// Logprobs asks for each token's log-probability, and TopLogprobs (0
	// to 20) for those of its most likely alternatives.
	Logprobs    *bool `json:"logprobs"`
	TopLogprobs *int  `json:"top_logprobs"`
}

// chatMessage is one message; content is a string, an array of content
// parts, or null. An assistant message may carry tool_calls, a "tool"
// message answers one by its tool_call_id (messageTools reads them).
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID json.RawMessage `json:"tool_call_id"`
	Name       json.RawMessage `json:"name"`
	// Prefix, on the final assistant message (Mistral's field), makes its
	// content the beginning of the reply, which the model continues.
	Prefix bool `json:"prefix"`
}

// stopList is OpenAI's stop: null, a string, or an array of strings.
type stopList struct {
	list []string
	one  bool // written as one string: its path is stop, not stop[0]
}

// param is the request's path to stop string i.
func (s stopList) param(i int) string {
	if s.one {
		return "stop"
	}
	return fmt.Sprintf("stop[%d]", i)
}

// UnmarshalJSON accepts the three shapes of stop. An array is read one
// string at a time, and refused at its (maxStops+1)th: a body of 170,000
// stop strings never becomes a slice of them.
func (s *stopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = stopList{}
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{list: []string{one}, one: true}
		return nil
	}
	wrongType := BadRequest("stop", "invalid_type", "stop must be a string or an array of strings")
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return wrongType
	}
	many := []string{}
	for dec.More() {
		if len(many) == maxStops {
			return BadRequest("stop", "invalid_value", "stop: at most %d stop sequences, got more", maxStops)
		}
		var one string
		if err := dec.Decode(&one); err != nil {
			return wrongType
		}
		many = append(many, one)
	}
	*s = stopList{list: many}
	return nil
}

// logitBias is logit_bias, {"token id": bias}, read one entry at a time:
// an entry beyond limit (the vocabulary's size: no more ids exist) is
// refused as soon as it is met, so a body of 80,000 entries never becomes a
// map of them. API.NewSamplingRequest sets limit before a request is
// decoded; ids and biases are checked as they come, ids
// against the vocabulary later (engine.GenerateOptions.Validate).
type logitBias struct {
	limit int             // the most entries
	bias  map[int]float32 // token id → bias
}

func (l *logitBias) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		l.bias = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return BadRequest("logit_bias", "invalid_type", "logit_bias must be an object, got %s", jsonValue(literalKind(b)))
	}
	l.bias = map[int]float32{}
	for n := 0; dec.More(); n++ {
		if n == l.limit {
			return BadRequest("logit_bias", "invalid_value", "logit_bias: more than %d entries, the vocabulary's size", l.limit)
		}
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return BadRequest("logit_bias", "invalid_json", "logit_bias is not a valid object")
		}
		id, err := strconv.Atoi(key)
		if err != nil {
			return BadRequest("logit_bias", "invalid_value", "logit_bias: key %q is not a token id", key)
		}
		var v float64
		if err := dec.Decode(&v); err != nil {
			return BadRequest("logit_bias."+key, "invalid_type", "logit_bias.%s must be a number that fits in 64 bits", key)
		}
		if v < -maxLogitBias || v > maxLogitBias {
			return BadRequest("logit_bias."+key, "invalid_value", "logit_bias.%s = %v, must be in [-%d, %d]", key, v, maxLogitBias, maxLogitBias)
		}
		l.bias[id] = float32(v)
	}
	return nil
}

// sampling converts the sampling fields to sampling.Params and validates
// them. An omitted temperature and top_p take OpenAI's defaults (1 and 1:
// plain sampling); top_k, min_p and repeat_penalty default to off. Without a
// seed, one is drawn at random in [0, 2^53) (a number JavaScript holds
// exactly): two requests never share one by arriving in the same tick of a
// coarse clock (WebAssembly's), which would give them the same tokens and
// the same tool-call ids. The ranges are the engine's to check
// (engine.GenerateOptions.Validate).
func (r *SamplingRequest) sampling() (sampling.Params, *Error) {
	if r.N != nil && *r.N != 1 {
		return sampling.Params{}, BadRequest("n", "invalid_value", "n = %d: one choice is returned per request (n must be 1)", *r.N)
	}
	f32 := func(p *float64, def float32) float32 {
		if p == nil {
			return def
		}
		return float32(*p) // an overflow becomes ±Inf, which Validate rejects
	}
	p := sampling.Params{
		Temperature:      f32(r.Temperature, 1),
		TopP:             f32(r.TopP, 1),
		MinP:             f32(r.MinP, 0),
		RepeatPenalty:    f32(r.RepeatPenalty, 0),
		PresencePenalty:  f32(r.PresencePenalty, 0),
		FrequencyPenalty: f32(r.FrequencyPenalty, 0),
	}
	if r.TopK != nil {
		p.TopK = *r.TopK
	}
	if r.Seed != nil {
		p.Seed = uint64(*r.Seed)
	} else {
		p.Seed = rand.Uint64() >> 11
	}
	if len(r.LogitBias.bias) > 0 {
		p.LogitBias = r.LogitBias.bias
	}
	for i, s := range r.Stop.list {
		if s == "" {
			return sampling.Params{}, BadRequest(r.Stop.param(i), "invalid_value", "%s is empty", r.Stop.param(i))
		}
	}
	return p, nil
}

// requestedMaxTokens is max_completion_tokens (chat's newer name) if given,
// else max_tokens, else nil.
func (r *SamplingRequest) requestedMaxTokens() (*int, string) {
	if r.MaxCompletionTokens != nil {
		return r.MaxCompletionTokens, "max_completion_tokens"
	}
	return r.MaxTokens, "max_tokens"
}

// messages converts the request's messages; content parts other than text
// are refused (the default models read text only). OpenAI's "developer"
// role, which replaces "system" for its newer models, is read as "system",
// as llama.cpp's server reads it: every template has a system turn, and
// those that name it "developer" (harmony, Gemma 4) render a first system
// message there.
func (r *ChatRequest) messages() ([]chat.Message, *Error) {
	if len(r.Messages) == 0 {
		return nil, BadRequest("messages", "invalid_value", "messages must be a non-empty array")
	}
	msgs := make([]chat.Message, len(r.Messages))
	for i, m := range r.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role == "" {
			return nil, BadRequest(param+".role", "invalid_value", "%s.role is required", param)
		}
		content, err := messageContent(m.Content)
		if err != nil {
			return nil, BadRequest(param+".content", "invalid_type", "%s.content: %v", param, err)
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		msgs[i] = chat.Message{Role: role, Content: content}
		if e := messageTools(m, param, &msgs[i]); e != nil {
			return nil, e
		}
	}
	return msgs, nil
}

// messageContent reads a message's content: a string, null, or an array of
// {"type": "text", "text": ...} parts, which are concatenated.
func messageContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var b bytes.Buffer
	for j, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("part %d has type %q; only text parts are supported", j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// completionPrompt reads the prompt of a completion request: a string, or
// token ids, alone or as the only element of an array (OpenAI's batch shapes
// with one prompt). It returns the text, or ids when the prompt was ids.
// Ids are read one at a time, and more than maxIDs (the context: no room
// would be left) refused at the next: a body of half a million ids never
// becomes a slice of them.
func (r *CompletionRequest) completionPrompt(maxIDs int) (text string, ids []int, e *Error) {
	raw := bytes.TrimSpace(r.Prompt)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, BadRequest("prompt", "missing_required_parameter", "prompt is required (use \"\" to start from BOS)")
	}
	shape := BadRequest("prompt", "invalid_value",
		"prompt must be a string, an array of token ids, or an array holding one of those (one prompt per request)")
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", nil, shape
		}
		return text, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return "", nil, shape
	}
	first := bytes.TrimLeft(raw[1:], " \t\r\n")
	switch {
	case first[0] == '"': // ["text"]
		if err := dec.Decode(&text); err != nil || dec.More() {
			return "", nil, shape
		}
		return text, nil, nil
	case first[0] == '[': // [[ids]]
		if _, err := dec.Token(); err != nil {
			return "", nil, shape
		}
		if ids, e = readIDs(dec, maxIDs, shape); e != nil {
			return "", nil, e
		}
		if _, err := dec.Token(); err != nil || dec.More() {
			return "", nil, shape
		}
		return "", ids, nil
	}
	ids, e = readIDs(dec, maxIDs, shape)
	return "", ids, e
}

// readIDs reads the token ids of the array dec is in, up to its end, and
// refuses more than maxIDs; shape is the error for anything but integers.
func readIDs(dec *json.Decoder, maxIDs int, shape *Error) ([]int, *Error) {
	ids := []int{}
	for dec.More() {
		if len(ids) == maxIDs {
			return nil, BadRequest("prompt", "context_length_exceeded",
				"This model's maximum context length is %d tokens, and the prompt is more than %d token ids: no room is left for a completion.", maxIDs, maxIDs)
		}
		var id int
		if err := dec.Decode(&id); err != nil {
			return nil, shape
		}
		ids = append(ids, id)
	}
	return ids, nil
}

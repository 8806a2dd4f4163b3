package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/sampling"
)

// OpenAI's limits, which this API keeps.
const (
	maxStops     = 4   // "Up to 4 sequences where the API will stop generating"
	maxLogitBias = 100 // logit_bias values are in [-100, 100]
)

// samplingRequest holds the request fields that both completion endpoints
// share. Pointers tell an omitted (or null) field from a zero one.
type samplingRequest struct {
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
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	samplingRequest
	Prompt json.RawMessage `json:"prompt"`
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	samplingRequest
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
}

// stopList is OpenAI's stop: null, a string, or an array of strings.
type stopList []string

// UnmarshalJSON accepts the three shapes of stop. An array is read one
// string at a time, and refused at its (maxStops+1)th: a body of 170,000
// stop strings never becomes a slice of them.
func (s *stopList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*s = nil
		return nil
	case len(b) > 0 && b[0] == '"':
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stopList{one}
		return nil
	}
	wrongType := badRequest("stop", "invalid_type", "stop must be a string or an array of strings")
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return wrongType
	}
	many := stopList{}
	for dec.More() {
		if len(many) == maxStops {
			return badRequest("stop", "invalid_value", "stop: at most %d stop sequences, got more", maxStops)
		}
		var one string
		if err := dec.Decode(&one); err != nil {
			return wrongType
		}
		many = append(many, one)
	}
	*s = many
	return nil
}

// logitBias is logit_bias, {"token id": bias}, read one entry at a time:
// an entry beyond limit (the vocabulary's size: no more ids exist) is
// refused as soon as it is met, so a body of 80,000 entries never becomes a
// map of them. The handler sets limit before it decodes a request
// (newSamplingRequest); ids and biases are checked as they come, ids
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
		return badRequest("logit_bias", "invalid_type", "logit_bias must be an object, got %s", jsonValue(literalKind(b)))
	}
	l.bias = map[int]float32{}
	for n := 0; dec.More(); n++ {
		if n == l.limit {
			return badRequest("logit_bias", "invalid_value", "logit_bias: more than %d entries, the vocabulary's size", l.limit)
		}
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return badRequest("logit_bias", "invalid_json", "logit_bias is not a valid object")
		}
		id, err := strconv.Atoi(key)
		if err != nil {
			return badRequest("logit_bias", "invalid_value", "logit_bias: key %q is not a token id", key)
		}
		var v float64
		if err := dec.Decode(&v); err != nil {
			return badRequest("logit_bias", "invalid_type", "logit_bias[%d] must be a number that fits in 64 bits", id)
		}
		if v < -maxLogitBias || v > maxLogitBias {
			return badRequest("logit_bias", "invalid_value", "logit_bias[%d] = %v, must be in [-%d, %d]", id, v, maxLogitBias, maxLogitBias)
		}
		l.bias[id] = float32(v)
	}
	return nil
}

// literalKind names the kind of the JSON value b holds as encoding/json's
// type errors do ("array", "string", "number", "bool", "object").
func literalKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "value"
	case b[0] == '[':
		return "array"
	case b[0] == '{':
		return "object"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "number"
}

// readBody reads the whole request body, refusing one over limit bytes, or
// cut short by the server's read deadline (http.Server.ReadTimeout). It
// reads to the end so that net/http notices, from then on, a client that
// hangs up (and cancels the request's context).
func readBody(r *http.Request, w http.ResponseWriter, limit int64) ([]byte, *apiError) {
	tooLarge := &apiError{status: http.StatusRequestEntityTooLarge, typ: typeInvalidRequest, code: "request_too_large",
		message: fmt.Sprintf("the request body is larger than this server's limit of %d bytes", limit)}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &apiError{status: http.StatusRequestTimeout, typ: typeInvalidRequest, code: "request_timeout",
			message: "the request body did not arrive within the server's read timeout"}
	case err != nil:
		return nil, badRequest("", "invalid_body", "cannot read the request body: %v", err)
	}
	return body, nil
}

// readAll is io.ReadAll into a buffer of size bytes (a body's declared
// length; -1 when unknown), so that a body of a megabyte takes a megabyte,
// not the 2 MB io.ReadAll's growing buffer allocates on its way there.
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size+1, 512)) // +1: the read that finds the end needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than declared, or none declared: grow
		}
	}
}

// decodeJSON unmarshals a request body into v, turning every failure into
// the 400 that names the field at fault.
func decodeJSON(body []byte, v any) *apiError {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var (
		ae  *apiError
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF), len(bytes.TrimSpace(body)) == 0:
		return badRequest("", "invalid_json", "the request body is not valid JSON: %v", err)
	case errors.As(err, &ute) && ute.Field == "":
		return badRequest("", "invalid_type", "the request body must be a JSON object, got %s", jsonValue(ute.Value))
	case errors.As(err, &ute):
		// encoding/json names a field of an embedded struct with the struct's
		// type name first; the client knows only the JSON path.
		field := strings.TrimPrefix(ute.Field, "samplingRequest.")
		return badRequest(field, "invalid_type", "%s must be %s", field, typeMismatch(ute))
	}
	return badRequest("", "invalid_json", "the request body is not valid JSON: %v", err)
}

// typeMismatch says what a field must be and what it got, as the JS API
// words it ("an integer, got 1.5"). encoding/json reports a number that does
// not fit the field's Go type (1e30 for an int64, 1e400 for a float64) as a
// type error; the client reads it as a range.
func typeMismatch(ute *json.UnmarshalTypeError) string {
	goType := strings.TrimPrefix(ute.Type.String(), "*")
	literal, isNumber := strings.CutPrefix(ute.Value, "number ")
	kind := jsonKind(goType)
	if !isNumber || (kind != "an integer" && kind != "a number") {
		return kind + ", got " + jsonValue(ute.Value)
	}
	f, _ := strconv.ParseFloat(literal, 64) // ±Inf when out of float64's range
	if kind == "a number" || (f == math.Trunc(f) && math.Abs(f) >= 1<<63) {
		return kind + " that fits in 64 bits, got " + literal
	}
	return kind + ", got " + literal
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(goType string) string {
	switch {
	case goType == "int" || goType == "int64":
		return "an integer"
	case goType == "float64":
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	}
	return "an object"
}

// jsonValue names a JSON value as encoding/json describes it: "string",
// "number", "array", "object" or "bool".
func jsonValue(v string) string {
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	}
	return "a " + v
}

// sampling converts the sampling fields to sampling.Params and validates
// them. An omitted temperature and top_p take OpenAI's defaults (1 and 1:
// plain sampling); top_k, min_p and repeat_penalty default to off. Without a
// seed the clock picks one. The ranges are the engine's to check
// (engine.GenerateOptions.Validate).
func (r *samplingRequest) sampling() (sampling.Params, *apiError) {
	if r.N != nil && *r.N != 1 {
		return sampling.Params{}, badRequest("n", "invalid_value", "n = %d: this server returns one choice per request (n must be 1)", *r.N)
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
		p.Seed = uint64(time.Now().UnixNano())
	}
	if len(r.LogitBias.bias) > 0 {
		p.LogitBias = r.LogitBias.bias
	}
	for i, s := range r.Stop {
		if s == "" {
			return sampling.Params{}, badRequest("stop", "invalid_value", "stop[%d] is empty", i)
		}
	}
	return p, nil
}

// requestedMaxTokens is max_completion_tokens (chat's newer name) if given,
// else max_tokens, else nil.
func (r *samplingRequest) requestedMaxTokens() (*int, string) {
	if r.MaxCompletionTokens != nil {
		return r.MaxCompletionTokens, "max_completion_tokens"
	}
	return r.MaxTokens, "max_tokens"
}

// messages converts the request's messages; content parts other than text
// are refused (the default models read text only).
func (r *chatRequest) messages() ([]chat.Message, *apiError) {
	if len(r.Messages) == 0 {
		return nil, badRequest("messages", "invalid_value", "messages must be a non-empty array")
	}
	msgs := make([]chat.Message, len(r.Messages))
	for i, m := range r.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role == "" {
			return nil, badRequest(param+".role", "invalid_value", "%s.role is required", param)
		}
		content, err := messageContent(m.Content)
		if err != nil {
			return nil, badRequest(param+".content", "invalid_type", "%s.content: %v", param, err)
		}
		msgs[i] = chat.Message{Role: m.Role, Content: content}
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
func (r *completionRequest) completionPrompt(maxIDs int) (text string, ids []int, e *apiError) {
	raw := bytes.TrimSpace(r.Prompt)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, badRequest("prompt", "missing_required_parameter", "prompt is required (use \"\" to start from BOS)")
	}
	shape := badRequest("prompt", "invalid_value",
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
func readIDs(dec *json.Decoder, maxIDs int, shape *apiError) ([]int, *apiError) {
	ids := []int{}
	for dec.More() {
		if len(ids) == maxIDs {
			return nil, badRequest("prompt", "context_length_exceeded",
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

// tokenizeRequest is POST /tokenize, as llama.cpp's server takes it.
type tokenizeRequest struct {
	Content      *string `json:"content"`
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial *bool   `json:"parse_special"` // llama.cpp's default: true
}

// detokenizeRequest is POST /detokenize.
type detokenizeRequest struct {
	Tokens *[]int `json:"tokens"`
}

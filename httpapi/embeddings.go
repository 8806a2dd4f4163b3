package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
)

// Embeddings (POST /v1/embeddings, OpenAI's shape) and reranking (rerank.go,
// llama.cpp's shape): the texts are read and checked here, before the
// request waits for a slot; the engine (Session.Embed, Session.Rerank)
// tokenizes them and runs the model in the slot, as a completion would.

// embeddingRequest is POST /v1/embeddings. Truncate and Normalize are this
// server's (llama.cpp's server normalises, and refuses a text longer than
// its context, as the defaults here do).
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
	User           *string         `json:"user"`
	Truncate       bool            `json:"truncate"`
	Normalize      *bool           `json:"normalize"`
}

// embedJob is a checked embedding or rerank request, ready for a slot.
type embedJob struct {
	texts  []string // the inputs; a rerank's documents
	opts   engine.EmbedOptions
	base64 bool // encoding_format base64: each vector as its float32s' bytes, little-endian
	rerank *rerankJob
	tokens int // what the model will evaluate (countTokens)
}

type embeddingObject struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of their bytes
	// Truncated says the text was cut to fit the context (truncate: true);
	// absent otherwise.
	Truncated bool `json:"truncated,omitempty"`
}

// embeddingUsage counts the tokens the model evaluated, special ones
// included, as llama.cpp's server does.
type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

func (h *Handler) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	h.serveEmbedJob(w, r, "input", capEmbedding, func(body []byte) (*embedJob, *apiError) {
		var req embeddingRequest
		if e := decodeJSON(body, &req); e != nil {
			return nil, e
		}
		return h.embeddingJob(&req)
	})
}

// embeddingJob checks an embedding request.
func (h *Handler) embeddingJob(req *embeddingRequest) (*embedJob, *apiError) {
	j := &embedJob{opts: engine.EmbedOptions{Truncate: req.Truncate, Raw: req.Normalize != nil && !*req.Normalize}}
	if f := req.EncodingFormat; f != nil {
		switch *f {
		case "float":
		case "base64":
			j.base64 = true
		default:
			return nil, badRequest("encoding_format", "invalid_value", "encoding_format must be \"float\" or \"base64\", got %q", *f)
		}
	}
	if d := req.Dimensions; d != nil && *d != h.model.EmbeddingLength() {
		return nil, badRequest("dimensions", "invalid_value",
			"dimensions = %d: this model's embeddings have %d values, and it cannot make them shorter (omit dimensions, or give %d)",
			*d, h.model.EmbeddingLength(), h.model.EmbeddingLength())
	}
	texts, e := readTexts(req.Input, "input", true)
	if e != nil {
		return nil, e
	}
	for i, text := range texts {
		name := textName("input", i, len(texts))
		if text == "" {
			return nil, badRequest(name, "invalid_value", "%s must not be an empty string", name)
		}
		if !j.opts.Truncate {
			if e := h.textFitsAlone(len(text), name, name); e != nil {
				return nil, e
			}
		}
	}
	j.texts = texts
	return j, nil
}

// textFitsAlone refuses, before it is tokenized, a text of n bytes that
// cannot fit in the context: it takes at least n / MaxTokenBytes tokens
// (see openai.API's textFits). param is the text's field (input[2],
// query), name how the message calls it. A text truncate would cut (not a
// query) says so.
func (h *Handler) textFitsAlone(n int, param, name string) *apiError {
	per := h.model.MaxTokenBytes()
	least := (n + per - 1) / per
	if least <= h.context {
		return nil
	}
	hint := "; truncate: true cuts it to fit"
	if param == "query" {
		hint = ": no room is left for a document"
	}
	return badRequest(param, "context_length_exceeded",
		"This model's maximum context length is %d tokens, and %s is at least %d tokens (%d bytes of text, at most %d bytes a token)%s.",
		h.context, name, least, n, per, hint)
}

// serveEmbedJob serves an embedding or rerank request: build makes its
// body a job (in prepare), which then waits for a slot and runs. A
// well-formed request the model cannot serve (it lacks capability) is
// refused, saying what the model does instead; then one with more tokens
// than Options.MaxEmbedTokens. param names the texts in errors ("input",
// "documents").
func (h *Handler) serveEmbedJob(w http.ResponseWriter, r *http.Request, param, capability string, build func(body []byte) (*embedJob, *apiError)) {
	j, leave, ok := prepareJob(h, w, r, func(body []byte) (*embedJob, *apiError) {
		j, e := build(body)
		if e == nil {
			e = h.refuseKind(capability)
		}
		if e == nil {
			e = h.countTokens(j, param)
		}
		return j, e
	})
	if ok {
		defer leave()
		h.runEmbedJob(w, r, j, param, leave)
	}
}

// runEmbedJob reserves the job's tokens, waits for a slot (leaving its
// preparation place once in the slot line: see takeSlot), runs the job
// and answers. A client that leaves stops it between the engine's passes,
// and is charged the whole reservation (the engine does not say how far it
// got); Shutdown's end of grace stops it too, answered 503 and charged
// nothing, as a request that fails is.
func (h *Handler) runEmbedJob(w http.ResponseWriter, r *http.Request, j *embedJob, param string, leave func()) {
	held, e := h.reserve(r, j.tokens)
	if e != nil {
		writeError(w, e)
		return
	}
	used := 0
	defer func() { held.settle(used) }()
	ctx, stopped, release := h.generationContext(r)
	defer release()
	c := Completion{Endpoint: r.URL.Path, Inputs: len(j.texts)}
	ctx, sess, ok := h.takeSlot(ctx, w, &c, leave)
	if !ok {
		return
	}
	began := time.Now()
	reply, tokens, err := h.runOnSession(ctx, sess, j)
	c.PromptTokens, c.Timings = tokens, engine.Timings{Prefill: time.Since(began), PrefillTokens: tokens}
	switch {
	case err != nil && stopped():
		c.Err = ErrShuttingDown
		writeError(w, shuttingDown("The server is shutting down: the request was stopped before its end. Retry later."))
	case err != nil && ctx.Err() != nil:
		c.FinishReason = engine.FinishAbort // the client left: nobody to answer
		used = j.tokens
	case err != nil:
		c.Err = err
		writeError(w, generationError(err, param))
	default:
		c.FinishReason = engine.FinishStop
		used = tokens
		reply.write(w)
	}
	h.onComplete(c)
}

// sendable is a response ready to send.
type sendable interface{ write(w http.ResponseWriter) }

// runOnSession runs j on the slot's session and releases it: the answer,
// ready to send, and the tokens the model evaluated. A panic is an error.
func (h *Handler) runOnSession(ctx context.Context, sess *engine.Session, j *embedJob) (reply sendable, tokens int, err error) {
	defer h.sched.release(ctx, sess)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	if j.rerank != nil {
		scores, err := sess.Rerank(ctx, j.rerank.query, j.texts, j.opts)
		if err != nil {
			return nil, 0, err
		}
		resp := h.rerankResponse(j, scores)
		return encodeJSON(http.StatusOK, resp), resp.Usage.PromptTokens, nil
	}
	embs, err := sess.Embed(ctx, j.texts, j.opts)
	if err != nil {
		return nil, 0, err
	}
	l := &embeddingAnswer{embs: embs, base64: j.base64, model: h.name}
	for _, e := range embs {
		l.usage.PromptTokens += e.Tokens
	}
	l.usage.TotalTokens = l.usage.PromptTokens
	return l, l.usage.PromptTokens, nil
}

// embeddingAnswer is an embeddingList to send: its vectors, encoded one
// embedding object at a time as it is written, so that a response of
// 2,048 vectors (some 9 MB of JSON for 384 values each) never sits whole
// in memory beside them. The bytes are json.Marshal's of the list.
type embeddingAnswer struct {
	embs   []engine.Embedding
	base64 bool
	model  string
	usage  embeddingUsage
}

// embeddingPartBytes is how much of an embedding list is encoded before
// it is written.
const embeddingPartBytes = 32 << 10

func (a *embeddingAnswer) write(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	buf := append(make([]byte, 0, embeddingPartBytes+4<<10), `{"object":"list","data":[`...)
	for i, e := range a.embs {
		var vec any = e.Vector
		if a.base64 {
			vec = base64Floats(e.Vector)
		}
		obj, err := json.Marshal(embeddingObject{Object: "embedding", Index: i, Embedding: vec, Truncated: e.Truncated})
		if err != nil { // plain numbers and strings: a bug
			return
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, obj...)
		if len(buf) >= embeddingPartBytes {
			if _, err := w.Write(buf); err != nil {
				return // the client left
			}
			buf = buf[:0]
		}
	}
	model, _ := json.Marshal(a.model)
	usage, _ := json.Marshal(a.usage)
	buf = append(append(append(append(append(buf, `],"model":`...), model...), `,"usage":`...), usage...), "}\n"...)
	_, _ = w.Write(buf)
}

// base64Floats is OpenAI's base64 encoding of an embedding: its float32s'
// bytes, little-endian, in standard base64 (what the openai clients ask
// for by default, and decode).
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// readTexts reads param ("input", "documents"): an array of strings, or,
// when one is true, a lone string too. An array is read one element at a
// time and refused at its (engine.MaxEmbedInputs+1)th, so a body of
// 100,000 strings never becomes a slice of them. A text must be valid
// UTF-8: encoding/json would replace a lone surrogate escape ("\ud800") or
// bytes that are not UTF-8 with U+FFFD, and embed another text than sent.
func readTexts(raw json.RawMessage, param string, one bool) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	shape := "an array of strings"
	if one {
		shape = "a string or an array of strings"
	}
	switch {
	case openai.IsNull(raw):
		return nil, badRequest(param, "missing_required_parameter", "%s is required: %s", param, shape)
	case one && raw[0] == '"':
		s, e := readText(raw, param, param)
		if e != nil {
			return nil, e
		}
		return []string{s}, nil
	case raw[0] != '[':
		return nil, badRequest(param, "invalid_type", "%s must be %s, got %s", param, shape, openai.Describe(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, badRequest(param, "invalid_json", "%s is not a valid array", param)
	}
	texts := []string{}
	for i := 0; dec.More(); i++ {
		if i == engine.MaxEmbedInputs {
			return nil, badRequest(param, "invalid_value", "%s must have at most %d elements, got more", param, engine.MaxEmbedInputs)
		}
		var item json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return nil, badRequest(param, "invalid_json", "%s is not a valid array", param)
		}
		name := fmt.Sprintf("%s[%d]", param, i)
		if item[0] != '"' {
			if param == "input" && i == 0 && (item[0] == '[' || openai.Describe(item) == "a number") {
				return nil, badRequest(param, "invalid_type", "%s: token ids (OpenAI's arrays of numbers) are not taken here; send the text", param)
			}
			return nil, badRequest(name, "invalid_type", "%s must be a string, got %s", name, openai.Describe(item))
		}
		s, e := readText(item, name, name)
		if e != nil {
			return nil, e
		}
		texts = append(texts, s)
	}
	if len(texts) == 0 {
		return nil, badRequest(param, "invalid_value", "%s must not be an empty array", param)
	}
	return texts, nil
}

// readText decodes raw, a JSON string (the text name of param), refusing
// one that is not valid UTF-8 once decoded.
func readText(raw []byte, param, name string) (string, *apiError) {
	if !utf8.Valid(raw) || loneSurrogate(raw) {
		return "", badRequest(param, "invalid_value",
			"%s is not valid UTF-8 (bytes that are not UTF-8, or a lone surrogate escape such as \\ud800)", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", badRequest(param, "invalid_json", "%s is not a valid JSON string", name)
	}
	return s, nil
}

// loneSurrogate reports whether the JSON string raw has a \u escape of a
// UTF-16 surrogate that is not half of a pair (high, then low).
func loneSurrogate(raw []byte) bool {
	escape := func(i int) (rune, bool) { // the \uXXXX at raw[i:], if it is one
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		var r rune
		for _, c := range raw[i+2 : i+6] {
			switch {
			case '0' <= c && c <= '9':
				r = r<<4 | rune(c-'0')
			case 'a' <= c && c <= 'f':
				r = r<<4 | rune(c-'a'+10)
			case 'A' <= c && c <= 'F':
				r = r<<4 | rune(c-'A'+10)
			default:
				return 0, false
			}
		}
		return r, true
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		switch {
		case !ok:
			i++ // a two-byte escape (\", \\, \n, ...): skip its second byte
		case 0xDC00 <= r && r <= 0xDFFF:
			return true // a low half first
		case 0xD800 <= r && r <= 0xDBFF:
			low, ok := escape(i + 6)
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

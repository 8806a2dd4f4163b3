package openai

import (
	"math"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// unlikely stands for a log-probability of -Inf, which JSON cannot write:
// OpenAI's own floor.
const unlikely = -9999.0

// ChatLogprob is one token of a chat choice's logprobs.content: its text,
// log-probability and UTF-8 bytes (a token may hold part of a character),
// and the most likely tokens at its place with theirs.
type ChatLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one of a token's most likely alternatives.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// ChatLogprobs is a chat choice's (or chunk's) logprobs: every generated
// token in content, the reasoning's and the tool calls' too.
type ChatLogprobs struct {
	Content []ChatLogprob `json:"content"`
	Refusal []ChatLogprob `json:"refusal"` // always null: no refusals
}

// TextLogprobs is a text completion choice's (or chunk's) logprobs, in the
// completions endpoint's shape: the tokens, their log-probabilities, each
// place's most likely tokens as {text: logprob}, and where each token
// starts in the completion's text.
type TextLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

// askLogprobs sets j to report each token's log-probability when on, with
// its top most likely alternatives (nil: none); param names top's field.
func (j *Job) askLogprobs(on bool, top *int, param string) *Error {
	n := 0
	if top != nil {
		n = *top
	}
	switch {
	case n < 0 || n > engine.MaxTopLogprobs:
		return BadRequest(param, "invalid_value", "%s = %d, must be in [0, %d]", param, n, engine.MaxTopLogprobs)
	case !on && n > 0:
		return BadRequest(param, "invalid_value", "%s needs logprobs: true", param)
	}
	j.Options.Logprobs, j.Options.TopLogprobs = on, n
	return nil
}

// Logprobs collects a generation's log-probabilities (engine.Token's) as
// OpenAI writes them: Add each token, then Chat or Text for the whole
// answer, or Pending for what a stream has not sent yet.
type Logprobs struct {
	tok     tokenizer.Tokenizer
	prev    int // the token before the next one, for its text
	entries []ChatLogprob
	offsets []int // where each entry starts in the completion's text
	end     int   // the text's length so far
	sent    int   // entries Pending has returned
	piece   []byte
}

// NewLogprobs collects the log-probabilities of j's generation by m; nil
// when j does not ask for them.
func NewLogprobs(j *Job, m *engine.Model) *Logprobs {
	if !j.Options.Logprobs {
		return nil
	}
	prev := -1
	if n := len(j.Prompt.Tokens); n > 0 {
		prev = j.Prompt.Tokens[n-1]
	}
	return &Logprobs{tok: m.Tokenizer(), prev: prev}
}

// Add records t's log-probabilities (a token without any, such as the
// text released at the end, adds nothing).
func (l *Logprobs) Add(t engine.Token) {
	if l == nil || t.Logprobs == nil {
		return
	}
	text, bytes := l.text(t.ID)
	e := ChatLogprob{Token: text, Logprob: finite(t.Logprobs.Logprob), Bytes: bytes, TopLogprobs: []TopLogprob{}}
	for _, alt := range t.Logprobs.Top {
		text, bytes := l.text(alt.ID)
		e.TopLogprobs = append(e.TopLogprobs, TopLogprob{Token: text, Logprob: finite(alt.Logprob), Bytes: bytes})
	}
	l.entries = append(l.entries, e)
	l.offsets = append(l.offsets, l.end)
	l.end += len(bytes)
	l.prev = t.ID
}

// text is token id's text after l.prev, and its bytes.
func (l *Logprobs) text(id int) (string, []int) {
	l.piece = l.tok.AppendPiece(l.piece[:0], l.prev, id)
	bytes := make([]int, len(l.piece))
	for i, c := range l.piece {
		bytes[i] = int(c)
	}
	return string(l.piece), bytes
}

// finite is v, or unlikely for -Inf.
func finite(v float64) float64 {
	if math.IsInf(v, -1) || math.IsNaN(v) {
		return unlikely
	}
	return v
}

// Chat is every token's logprobs in a chat choice's shape; nil for nil.
func (l *Logprobs) Chat() *ChatLogprobs {
	if l == nil {
		return nil
	}
	return &ChatLogprobs{Content: append([]ChatLogprob{}, l.entries...)}
}

// Last is the last token's logprobs, as Chat's content has it (none
// when nothing was added or l is nil).
func (l *Logprobs) Last() []ChatLogprob {
	if l == nil || len(l.entries) == 0 {
		return []ChatLogprob{}
	}
	return l.entries[len(l.entries)-1:]
}

// Text is every token's logprobs in a text completion choice's shape; nil
// for nil.
func (l *Logprobs) Text() *TextLogprobs {
	if l == nil {
		return nil
	}
	return l.textOf(0, len(l.entries))
}

// textOf is the entries [from, to) in the completions shape.
func (l *Logprobs) textOf(from, to int) *TextLogprobs {
	t := &TextLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for i := from; i < to; i++ {
		e := l.entries[i]
		top := map[string]float64{}
		for _, alt := range e.TopLogprobs {
			if _, seen := top[alt.Token]; !seen { // two tokens may write one text: the likelier stays
				top[alt.Token] = alt.Logprob
			}
		}
		t.Tokens = append(t.Tokens, e.Token)
		t.TokenLogprobs = append(t.TokenLogprobs, e.Logprob)
		t.TopLogprobs = append(t.TopLogprobs, top)
		t.TextOffset = append(t.TextOffset, l.offsets[i])
	}
	return t
}

// pending is the range of entries no chunk carried yet, which it marks
// sent; empty when l is nil or all are.
func (l *Logprobs) pending() (from, to int) {
	if l == nil {
		return 0, 0
	}
	from, l.sent = l.sent, len(l.entries)
	return from, l.sent
}

// entriesOf is the entries [from, to); none for nil.
func (l *Logprobs) entriesOf(from, to int) []ChatLogprob {
	if l == nil {
		return nil
	}
	return l.entries[from:to]
}

// attach sets, on the first choice of out's first chunk, the logprobs of
// the tokens no chunk carried yet; with no chunk, they wait for the next.
func (l *Logprobs) attach(out []Chunk) {
	if l == nil || len(out) == 0 {
		return
	}
	from, to := l.pending()
	if from == to {
		return
	}
	switch c := out[0].Choices.(type) {
	case []ChunkChoice:
		c[0].Logprobs = &ChatLogprobs{Content: append([]ChatLogprob{}, l.entries[from:to]...)}
	case []TextChoice:
		c[0].Logprobs = l.textOf(from, to)
	}
}

package openai

import (
	"encoding/json"
	"time"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// Chunk is a streamed completion chunk: object "text_completion" (Choices
// a []TextChoice) or "chat.completion.chunk" (a []ChunkChoice).
type Chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices any      `json:"choices"`
	Usage   any      `json:"usage,omitempty"` // null on every chunk but the last with include_usage
	Timings *Timings `json:"timings,omitempty"`
}

// ChunkChoice is a chat chunk's choice.
type ChunkChoice struct {
	Index        int           `json:"index"`
	Delta        Delta         `json:"delta"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// Delta is a chat chunk's delta: the role (first chunk), or a piece of the
// reply's content or of its reasoning, as llama.cpp's server sends them (a
// piece of each in two chunks, the reasoning first), or a tool call.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is a call in a streamed chunk: first with its id, type and
// name (and arguments ""), then its arguments, as OpenAI streams them.
type ToolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function ToolFunctionDelta `json:"function"`
}

// ToolFunctionDelta is the function of a ToolCallDelta.
type ToolFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// Stream makes the chunks of one streamed completion in OpenAI's order:
// for chat a first chunk with the assistant role (Start), then the chunks
// of each token's text (Token: a chat's reasoning and content apart, what
// may be a tool call held back), then the chunks of what was held back,
// the calls, the finish reason and, when asked for, the usage (Finish).
type Stream struct {
	id           string
	created      int64
	model        string
	chat         bool
	includeUsage bool
	reply        *ReplyStream // chat only
	logprobs     *Logprobs    // nil unless the request asks for logprobs
}

// NewStream is the stream of a completion (chat or text) with id, created
// and model, whose chat reply is read for calls (nil: text) after
// replyPrefix (the job's ReplyPrefix). includeUsage
// (stream_options.include_usage) adds the usage chunk.
func NewStream(id string, created int64, model string, chat, includeUsage bool, calls *Calls, replyPrefix string) *Stream {
	s := &Stream{id: id, created: created, model: model, chat: chat, includeUsage: includeUsage}
	if chat {
		s.reply = NewReplyStream(calls, replyPrefix)
	}
	return s
}

// newChunk is a chunk carrying one choice: text (nil: none) for a text
// completion, or a delta for a chat completion.
func (s *Stream) newChunk(text *string, role string, finish *string) Chunk {
	c := Chunk{ID: s.id, Created: s.created, Model: s.model}
	if s.includeUsage {
		c.Usage = json.RawMessage("null") // explicit: omitempty would drop a nil
	}
	if s.chat {
		c.Object = "chat.completion.chunk"
		c.Choices = []ChunkChoice{{Delta: Delta{Role: role, Content: text}, FinishReason: finish}}
		return c
	}
	c.Object = "text_completion"
	t := ""
	if text != nil {
		t = *text
	}
	c.Choices = []TextChoice{{Text: t, FinishReason: finish}}
	return c
}

// Start is the chunks before the first token: a chat's role chunk.
func (s *Stream) Start() []Chunk {
	if !s.chat {
		return nil
	}
	empty := ""
	return []Chunk{s.newChunk(&empty, "assistant", nil)}
}

// SetLogprobs has the chunks carry the log-probabilities l collects: each
// chunk with text those of the tokens no chunk carried yet (Add each token
// to l before its text reaches Token).
func (s *Stream) SetLogprobs(l *Logprobs) { s.logprobs = l }

// Token is the chunks of a token's text: a text completion's piece, or
// the pieces of a chat reply's reasoning and content the text completes (a
// reasoning_content chunk, then a content chunk, each only if it has text;
// none for a tag's first bytes or content that may be a call).
func (s *Stream) Token(text string) []Chunk {
	var out []Chunk
	if !s.chat {
		out = []Chunk{s.newChunk(&text, "", nil)}
	} else {
		reasoning, content := s.reply.Write(text)
		out = s.pieces(nil, reasoning, content)
	}
	s.logprobs.attach(out)
	return out
}

// pieces appends the chunks of a reply's pieces (Deltas).
func (s *Stream) pieces(out []Chunk, reasoning, content string) []Chunk {
	for _, d := range Deltas(reasoning, content) {
		out = append(out, s.deltaChunk(d))
	}
	return out
}

// deltaChunk is a chat chunk carrying d.
func (s *Stream) deltaChunk(d Delta) Chunk {
	c := s.newChunk(nil, "", nil)
	c.Choices.([]ChunkChoice)[0].Delta = d
	return c
}

// Deltas are the deltas of a chat reply's pieces, as llama.cpp's server
// streams them: a reasoning_content delta, then a content delta, each only
// if it has text.
func Deltas(reasoning, content string) []Delta {
	var out []Delta
	if reasoning != "" {
		out = append(out, Delta{ReasoningContent: &reasoning})
	}
	if content != "" {
		out = append(out, Delta{Content: &content})
	}
	return out
}

// CallDeltas are the deltas of a streamed reply's calls, as OpenAI streams
// them: for each, one that opens it (index, id, type, name, arguments "")
// and one with its arguments.
func CallDeltas(calls []chat.ToolCall) []Delta {
	var out []Delta
	for i, c := range calls {
		open := ToolCallDelta{Index: i, ID: c.ID, Type: "function", Function: ToolFunctionDelta{Name: c.Name}}
		args := ToolCallDelta{Index: i, Function: ToolFunctionDelta{Arguments: c.Arguments}}
		out = append(out, Delta{ToolCalls: []ToolCallDelta{open}}, Delta{ToolCalls: []ToolCallDelta{args}})
	}
	return out
}

// Finish is the chunks that end a stream of res, which waited queued in
// the queue: for chat what the reply held back, its calls (per call, a
// chunk that opens it and one with its arguments) and the finish chunk
// ("tool_calls" when there are calls and the generation stopped on its
// own: callsFinish); for text an empty finish chunk; then
// the usage chunk if asked for. The [DONE] line is the transport's.
func (s *Stream) Finish(res engine.Result, queued time.Duration) []Chunk {
	reason := FinishReason(res.FinishReason)
	var out []Chunk
	if s.chat {
		reasoning, content, rest, calls := s.reply.Finish(res.FinishReason)
		out = s.pieces(out, reasoning, content)
		out = s.pieces(out, "", rest)
		for _, d := range CallDeltas(calls) {
			out = append(out, s.deltaChunk(d))
		}
		reason = callsFinish(reason, len(calls))
		out = append(out, s.newChunk(nil, "", &reason))
	} else {
		empty := ""
		out = append(out, s.newChunk(&empty, "", &reason))
	}
	s.logprobs.attach(out)
	if s.includeUsage {
		u, t := UsageOf(res), TimingsOf(res.Timings, queued)
		c := Chunk{ID: s.id, Created: s.created, Model: s.model, Usage: &u, Timings: &t}
		c.Object = "text_completion"
		c.Choices = []TextChoice{}
		if s.chat {
			c.Object = "chat.completion.chunk"
			c.Choices = []ChunkChoice{}
		}
		out = append(out, c)
	}
	return out
}

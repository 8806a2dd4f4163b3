package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/openai"
)

// eventStream writes one completion as Server-Sent Events in OpenAI's order:
// for chat a first chunk with the assistant role, then one chunk per piece of
// text, a chunk with the finish reason, optionally a usage chunk, and
// "data: [DONE]". Every event is written in one Write and flushed at once,
// so a client (or the edge worker's stream) sees each token as it comes.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	j       *job
	model   string
	started bool
	err     error // the first write error: the client is gone
	// reply splits a chat reply's reasoning from its content as it
	// streams and, when the job takes calls (job.calls), holds back the
	// part of the content that may be a tool call.
	reply *openai.ReplyStream
}

// chunk is a streamed completion chunk (object "text_completion" or
// "chat.completion.chunk").
type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices any      `json:"choices"`         // []textChoice or []chatChunkChoice
	Usage   any      `json:"usage,omitempty"` // null on every chunk but the last with include_usage
	Timings *timings `json:"timings,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// chatDelta is a chat chunk's delta: the role (first chunk), or a piece of
// the reply's content or of its reasoning, as llama.cpp's server sends them
// (a piece of each in two chunks, the reasoning first).
type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

// newChunk is a chunk carrying one choice: text (nil: none) for a text
// completion, or a delta for a chat completion.
func (s *eventStream) newChunk(text *string, role string, finish *string) chunk {
	c := chunk{ID: s.j.id, Created: s.j.created, Model: s.model}
	if s.j.includeUsage {
		c.Usage = json.RawMessage("null") // explicit: omitempty would drop a nil
	}
	if s.j.chat {
		c.Object = "chat.completion.chunk"
		c.Choices = []chatChunkChoice{{Delta: chatDelta{Role: role, Content: text}, FinishReason: finish}}
		return c
	}
	c.Object = "text_completion"
	t := ""
	if text != nil {
		t = *text
	}
	c.Choices = []textChoice{{Text: t, FinishReason: finish}}
	return c
}

// start sends the headers, and for chat the role chunk.
func (s *eventStream) start() error {
	if s.started {
		return s.err
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell reverse proxies not to buffer the stream
	s.w.WriteHeader(http.StatusOK)
	if s.j.chat {
		empty := ""
		return s.send("", s.newChunk(&empty, "assistant", nil))
	}
	s.flush()
	return s.err
}

// content sends a piece of generated text.
func (s *eventStream) content(text string) error {
	if err := s.start(); err != nil {
		return err
	}
	return s.send("", s.newChunk(&text, "", nil))
}

// pieces sends the pieces of a chat reply's reasoning and content that the
// reply stream released: a reasoning_content chunk, then a content chunk,
// each only if it has text (content that may be a tool call is held back).
// Nothing released (a tag's first bytes, say) sends nothing, but the
// stream's headers go out with the first token all the same.
func (s *eventStream) pieces(reasoning, content string) error {
	if err := s.start(); err != nil {
		return err
	}
	return s.sendPieces(reasoning, content)
}

// sendPieces sends a reasoning_content chunk and a content chunk, each only if
// it has text.
func (s *eventStream) sendPieces(reasoning, content string) error {
	if reasoning != "" {
		c := s.newChunk(nil, "", nil)
		c.Choices.([]chatChunkChoice)[0].Delta.ReasoningContent = &reasoning
		if err := s.send("", c); err != nil {
			return err
		}
	}
	if content != "" {
		return s.send("", s.newChunk(&content, "", nil))
	}
	return nil
}

// finish sends the finish chunk, the usage chunk if asked for, and [DONE].
func (s *eventStream) finish(res engine.Result, queued time.Duration) {
	if s.start() != nil {
		return
	}
	reason := finishReason(res.FinishReason)
	if s.j.chat {
		reasoning, content, rest, calls := s.reply.Finish()
		if s.sendPieces(reasoning, content) != nil || s.sendPieces("", rest) != nil || s.toolCalls(calls) != nil {
			return
		}
		if len(calls) > 0 {
			reason = "tool_calls"
		}
		s.send("", s.newChunk(nil, "", &reason))
	} else {
		empty := ""
		s.send("", s.newChunk(&empty, "", &reason))
	}
	if s.j.includeUsage {
		u, t := usageOf(res), timingsOf(res.Timings, queued)
		c := chunk{ID: s.j.id, Created: s.j.created, Model: s.model, Usage: &u, Timings: &t}
		c.Object = "text_completion"
		c.Choices = []textChoice{}
		if s.j.chat {
			c.Object = "chat.completion.chunk"
			c.Choices = []chatChunkChoice{}
		}
		s.send("", c)
	}
	s.write([]byte("data: [DONE]\n\n"))
}

// fail ends a started stream with an "error" event carrying an OpenAI error
// object; no [DONE] follows, so no client mistakes the text for complete.
func (s *eventStream) fail(e *apiError) {
	s.send("error", e.body())
}

// send writes one event: an optional event name and v as JSON data.
func (s *eventStream) send(event string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return err
	}
	b := make([]byte, 0, len(data)+len(event)+16)
	if event != "" {
		b = append(append(append(b, "event: "...), event...), '\n')
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	return s.write(b)
}

// write sends b in one Write and flushes it.
func (s *eventStream) write(b []byte) error {
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	s.flush()
	return s.err
}

func (s *eventStream) flush() {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = err
	}
}

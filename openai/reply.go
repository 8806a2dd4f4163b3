package openai

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/wasmlm/wasmlm/chat"
	"github.com/wasmlm/wasmlm/engine"
)

// Calls is how a chat reply is read for tool calls: in the prompt's tool
// format (policy.ChatPrompt.ToolFormat), ids from Seed (CallSeed), at most
// one call unless Parallel (the request's parallel_tool_calls), arguments
// typed by Tools' schemas where the format writes them untyped
// (chat.ParseToolCallsFor).
type Calls struct {
	Format   chat.ToolFormat
	Seed     uint64
	Parallel bool
	Tools    []chat.Tool
}

// CallSeed is the seed of a reply's call ids (chat.ToolCallID): the
// request's seed mixed with its prompt, so that the same request gets the
// same ids but a conversation's next turn (a longer prompt) gets new ones,
// never the ids of the calls in its own history.
func CallSeed(seed uint64, prompt []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	for _, id := range prompt {
		binary.LittleEndian.PutUint64(b[:], uint64(id))
		h.Write(b[:])
	}
	return h.Sum64()
}

// keep takes a reply's calls as parsed: the first only unless Parallel (a
// reply the grammar did not force may hold several), every id the
// server's (a model may write ids, as Mistral's format and the generic one
// let it: they need not be unique).
func (c *Calls) keep(calls []chat.ToolCall) []chat.ToolCall {
	if !c.Parallel && len(calls) > 1 {
		calls = calls[:1]
	}
	for i := range calls {
		calls[i].ID = chat.ToolCallID(c.Format, c.Seed, i)
	}
	return calls
}

// Reply is a finished chat reply read apart: the reasoning it started
// with ("<think>...</think>"), its content, and the tool calls parsed out
// of the content.
type Reply struct {
	Reasoning string
	Content   string
	ToolCalls []chat.ToolCall
}

// ParseReply reads a finished generation's text: the reasoning apart (as
// llama.cpp's server returns it) and, when calls is not nil (the request
// offers tools the reply may call), the calls parsed out. The text is the
// job's ReplyPrefix and the generated text after it; end is how the
// generation ended: a reply cut off (a token limit, a full context, an abort) keeps
// the calls it completed and drops a call it left unfinished, its markup
// never in the content (chat.ParseCutToolCallsFor). The error is
// chat.ParseToolCallsFor's: only for a format it does not know.
func ParseReply(text string, calls *Calls, end engine.FinishReason) (Reply, error) {
	var r Reply
	r.Reasoning, r.Content = chat.SplitReasoning(text)
	if calls == nil {
		return r, nil
	}
	parse := chat.ParseToolCallsFor
	if cutOff(end) {
		parse = chat.ParseCutToolCallsFor
	}
	content, parsed, err := parse(calls.Format, r.Content, calls.Seed, calls.Tools)
	if err != nil {
		return r, err
	}
	r.Content, r.ToolCalls = content, calls.keep(parsed)
	return r, nil
}

// ReplyStream reads a chat reply as it streams: the reasoning apart
// (chat.ReasoningParser) and, when it takes calls, the content that may be
// a call held back to the end (chat.ToolCallStream). The pieces it
// returns, joined, and its calls are ParseReply's, however the reply is
// split into tokens.
type ReplyStream struct {
	reasoning chat.ReasoningParser
	calls     *Calls
	stream    *chat.ToolCallStream // nil without calls
	// The reasoning and content prefix made final, returned with the
	// first Write (or Finish).
	prefixReasoning, prefixContent string
}

// NewReplyStream reads a reply for calls (nil: the reply is text) that
// continues prefix (the job's ReplyPrefix), read first: a template's
// opening returns nothing, and the beginning a request gave its reply
// (a final assistant message with prefix: true) comes with the first
// piece, as ParseReply returns it.
func NewReplyStream(calls *Calls, prefix string) *ReplyStream {
	s := &ReplyStream{calls: calls}
	if calls != nil {
		s.stream = chat.NewToolCallStreamFor(calls.Format, calls.Seed, calls.Tools)
	}
	s.prefixReasoning, s.prefixContent = s.reasoning.Write(prefix)
	return s
}

// withPrefix is reasoning and content after what the prefix made final,
// which it returns once.
func (s *ReplyStream) withPrefix(reasoning, content string) (string, string) {
	reasoning, content = s.prefixReasoning+reasoning, s.prefixContent+content
	s.prefixReasoning, s.prefixContent = "", ""
	return reasoning, content
}

// Write takes the next piece of the reply's text and returns the
// reasoning and the content it makes final (either may be "": a tag's
// first bytes, content that may be a call).
func (s *ReplyStream) Write(text string) (reasoning, content string) {
	reasoning, content = s.withPrefix(s.reasoning.Write(text))
	if s.stream != nil {
		content = s.stream.Write(content)
	}
	return reasoning, content
}

// Finish ends the reply, whose generation ended with end: the reasoning
// and content the reasoning parser still held (content as Write returns
// it), then the rest of the content that the call parser held and is not a
// call, and the calls — for a reply cut off, without a call it left
// unfinished (as ParseReply).
func (s *ReplyStream) Finish(end engine.FinishReason) (reasoning, content, rest string, calls []chat.ToolCall) {
	reasoning, content = s.withPrefix(s.reasoning.Flush())
	if s.stream == nil {
		return reasoning, content, "", nil
	}
	content = s.stream.Write(content)
	if cutOff(end) {
		rest, calls = s.stream.FinishCut()
	} else {
		rest, calls = s.stream.Finish()
	}
	return reasoning, content, rest, s.calls.keep(calls)
}

// cutOff reports whether a generation that ended with end stopped before
// the reply's end: at the token limit, in a full context, or aborted.
func cutOff(end engine.FinishReason) bool {
	return end == engine.FinishLength || end == engine.FinishContext || end == engine.FinishAbort
}

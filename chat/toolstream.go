package chat

import "strings"

// ToolCallStream separates a streamed reply's content from its tool calls
// as the reply is generated: Write returns at once the text that is content
// whatever comes next, and holds back what may be (or be part of) a call;
// Finish parses the whole reply as ParseToolCalls does and returns the rest
// of the content and the calls. For any split of a reply into chunks, the
// contents returned joined, and the calls, are ParseToolCalls's.
//
// What is held back: for hermes, qwen-xml, lfm2, gemma4 and mistral,
// everything from the first <tool_call> / <|tool_call_start|> /
// <|tool_call> / [TOOL_CALLS] on (for harmony, from the first "<|" or
// " to=") (and a trailing part of that tag, and the
// whitespace before it, which a call would remove); for llama3 and generic,
// whose calls fill the reply from its start, a reply that starts with "{"
// (or <|python_tag|>) is held to the end, and any other is streamed as it
// comes. A generic reply {"response": ...} is thus sent whole, at the end.
//
// A host streams the content deltas, then emits the calls as OpenAI's
// tool-call deltas (index, id, type "function", name, arguments) and ends
// with finish_reason "tool_calls" if there are any. Run a ReasoningParser
// first for a model that thinks; a ToolCallStream takes its content.
type ToolCallStream struct {
	format ToolFormat
	seed   uint64
	tools  []Tool          // the request's, for ParseToolCallsFor
	text   strings.Builder // the reply so far
	sent   int             // bytes of text returned as content
	// decided: for llama3 and generic, the reply is known to hold no call
	// (it does not start with one), so everything is content.
	decided bool
	// tagAt is the offset of the first call tag (hermes, mistral); -1
	// until one is seen.
	tagAt int
}

// NewToolCallStream returns a stream for a reply in format, with the id
// seed that ParseToolCalls takes.
func NewToolCallStream(format ToolFormat, seed uint64) *ToolCallStream {
	return NewToolCallStreamFor(format, seed, nil)
}

// NewToolCallStreamFor returns a stream whose Finish is ParseToolCallsFor's
// with tools.
func NewToolCallStreamFor(format ToolFormat, seed uint64, tools []Tool) *ToolCallStream {
	return &ToolCallStream{format: format, seed: seed, tools: tools, tagAt: -1}
}

// Write takes the next piece of the reply and returns the content it makes
// certain (often all of it, sometimes "").
func (s *ToolCallStream) Write(chunk string) (content string) {
	s.text.WriteString(chunk)
	text := s.text.String()
	safe := s.safe(text)
	if safe <= s.sent {
		return ""
	}
	content = text[s.sent:safe]
	s.sent = safe
	return content
}

// safe returns the length of the prefix of text that is content whatever
// follows: ParseToolCalls's content for text and any continuation of it
// starts with it.
func (s *ToolCallStream) safe(text string) int {
	switch s.format {
	case ToolFormatHermes, ToolFormatQwenXML:
		return s.safeTagged(text, hermesCallOpen)
	case ToolFormatLFM2:
		return s.safeTagged(text, lfm2CallStart)
	case ToolFormatGemma4:
		return s.safeTagged(text, gemma4CallOpen)
	case ToolFormatHarmony:
		// A call starts with a marker ("<|start|>", "<|channel|>") or
		// its recipient (" to="): hold back from the first.
		return s.safeMarkers(text, "<|", " to=")
	case ToolFormatMistral:
		return s.safeTagged(text, mistralCalls)
	case ToolFormatLlama3, ToolFormatGeneric:
		if s.decided {
			return len(text)
		}
		rest := trimLeftSpace(text)
		switch {
		case rest == "", strings.HasPrefix(rest, "{"):
			return 0
		case s.format == ToolFormatLlama3 && (strings.HasPrefix(rest, llama3PythonTag) ||
			strings.HasPrefix(llama3PythonTag, rest)):
			return 0
		}
		s.decided = true
		return len(text)
	}
	return 0 // an unknown format: everything at Finish
}

// safeTagged is safe for a format whose calls start with tag anywhere: the
// text before the first tag (or before a trailing part of one), less its
// trailing whitespace.
func (s *ToolCallStream) safeTagged(text, tag string) int {
	end := s.tagAt
	if end < 0 {
		// A tag cannot start before s.sent: what was sent had none.
		from := max(0, s.sent)
		if i := strings.Index(text[from:], tag); i >= 0 {
			s.tagAt = from + i
			end = s.tagAt
		} else {
			end = len(text) - tagPrefixAtEnd(text, tag)
		}
	}
	return len(trimRightSpace(text[:end]))
}

// safeMarkers is safe for a format whose calls start with one of markers:
// the text before the first one (or before a trailing part of one), less
// its trailing whitespace.
func (s *ToolCallStream) safeMarkers(text string, markers ...string) int {
	end := s.tagAt
	if end < 0 {
		from := max(0, s.sent)
		end = len(text)
		for _, m := range markers {
			if i := strings.Index(text[from:], m); i >= 0 && from+i < end {
				end = from + i
			}
		}
		if end < len(text) {
			s.tagAt = end
		} else {
			for _, m := range markers {
				end = min(end, len(text)-tagPrefixAtEnd(text, m))
			}
		}
	}
	return len(trimRightSpace(text[:end]))
}

// Finish ends the reply: it returns the content not yet returned and the
// reply's tool calls, and resets the stream for another reply (same format
// and seed).
func (s *ToolCallStream) Finish() (content string, calls []ToolCall) {
	return s.finish(ParseToolCallsFor)
}

// FinishCut is Finish for a reply cut off before its end (a token limit, a
// full context, an abort): what it returns, with the content returned
// before, is ParseCutToolCallsFor's, so the markup of a call the cut left
// unfinished never reaches the content.
func (s *ToolCallStream) FinishCut() (content string, calls []ToolCall) {
	return s.finish(ParseCutToolCallsFor)
}

// ParseCutToolCallsFor is ParseToolCallsFor for a reply cut off before its
// end (by a token limit, a full context or an abort): the calls it
// completed stay, and its content ends where a ToolCallStream holds the
// content back — before the first call that did not parse (and the
// whitespace before it), or before all of it for a llama3 or generic reply
// that starts as a call. The markup of a call the cut left unfinished is
// dropped, never returned as text.
func ParseCutToolCallsFor(format ToolFormat, text string, seed uint64, tools []Tool) (content string, calls []ToolCall, err error) {
	content, calls, err = ParseToolCallsFor(format, text, seed, tools)
	if err != nil {
		return content, calls, err
	}
	if format == ToolFormatGeneric {
		if _, _, whole := parseGeneric(text); whole {
			return content, calls, nil // its JSON is whole: the content is text
		}
	}
	held := NewToolCallStreamFor(format, seed, tools)
	return content[:held.safe(content)], calls, nil
}

// finish ends the reply as parse reads it whole.
func (s *ToolCallStream) finish(parse func(ToolFormat, string, uint64, []Tool) (string, []ToolCall, error)) (content string, calls []ToolCall) {
	text := s.text.String()
	all, calls, _ := parse(s.format, text, s.seed, s.tools)
	// all starts with what was sent (see safe); cut it off.
	content = all
	if rest, ok := strings.CutPrefix(all, text[:s.sent]); ok {
		content = rest
	}
	s.text.Reset()
	s.sent, s.decided, s.tagAt = 0, false, -1
	return content, calls
}

package chat

import "strings"

// The tags around a reply's reasoning (Qwen3, SmolLM3, DeepSeek-R1 and the
// models distilled from it).
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// SplitReasoning separates a reply's reasoning from its content as
// llama.cpp's server does with its default reasoning_format ("auto", that is
// deepseek: common_chat_msg_parser::try_parse_reasoning): if the reply starts,
// after optional whitespace, with "<think>", the text up to "</think>" is
// reasoning, trimmed of whitespace; whitespace after "</think>" is skipped,
// another "<think>" right there opens another block (their texts are joined),
// and the rest is content. The whitespace before the first "<think>" stays
// content. A block that is never closed is reasoning to the end (less a
// trailing prefix of "</think>"). A reply that does not start with "<think>"
// is all content.
//
// It is what a ReasoningParser returns when it is given text in one piece;
// the two agree for any split of the text.
func SplitReasoning(text string) (reasoning, content string) {
	var p ReasoningParser
	r1, c1 := p.Write(text)
	r2, c2 := p.Flush()
	return r1 + r2, c1 + c2
}

// parserState is where a ReasoningParser is in a reply.
type parserState uint8

const (
	atStart     parserState = iota // before anything but whitespace
	inReasoning                    // after "<think>"
	afterClose                     // after "</think>"
	inContent                      // the rest: all content
)

// ReasoningParser splits a streamed reply into reasoning and content as it
// arrives, with SplitReasoning's rules, whatever the pieces: "<think>" or
// "</think>" may come split across tokens. Text that cannot be classified
// yet (a prefix of a tag, whitespace that trimming may drop) is held back
// until the next Write or Flush decides it; the rest is returned at once.
// The zero value is ready to use.
type ReasoningParser struct {
	state   parserState
	pending string // text received but not yet returned
	leading bool   // in reasoning, before its first non-space byte
}

// Write takes the next piece of the reply and returns the reasoning and the
// content it completes (either may be empty).
func (p *ReasoningParser) Write(text string) (reasoning, content string) {
	p.pending += text
	var r, c strings.Builder
	for {
		switch p.state {
		case atStart:
			rest := trimLeftSpace(p.pending)
			switch {
			case rest == "" || (len(rest) < len(thinkOpen) && strings.HasPrefix(thinkOpen, rest)):
				return r.String(), c.String() // whitespace or part of "<think>": wait
			case strings.HasPrefix(rest, thinkOpen):
				c.WriteString(p.pending[:len(p.pending)-len(rest)]) // the whitespace before it
				p.openBlock(rest)
			default:
				p.state = inContent
			}
		case inReasoning:
			if p.leading {
				p.pending = trimLeftSpace(p.pending)
				if p.pending == "" {
					return r.String(), c.String()
				}
				p.leading = false
			}
			if i := strings.Index(p.pending, thinkClose); i >= 0 {
				r.WriteString(trimRightSpace(p.pending[:i]))
				p.pending = p.pending[i+len(thinkClose):]
				p.state = afterClose
				continue
			}
			// Hold back trailing whitespace (the block's end trims it) and a
			// trailing part of "</think>".
			body := p.pending[:len(p.pending)-tagPrefixAtEnd(p.pending, thinkClose)]
			sure := trimRightSpace(body)
			r.WriteString(sure)
			p.pending = p.pending[len(sure):]
			return r.String(), c.String()
		case afterClose:
			p.pending = trimLeftSpace(p.pending)
			switch rest := p.pending; {
			case rest == "" || (len(rest) < len(thinkOpen) && strings.HasPrefix(thinkOpen, rest)):
				return r.String(), c.String()
			case strings.HasPrefix(rest, thinkOpen):
				p.openBlock(rest)
			default:
				p.state = inContent
			}
		case inContent:
			c.WriteString(p.pending)
			p.pending = ""
			return r.String(), c.String()
		}
	}
}

// openBlock starts a reasoning block; rest begins with "<think>".
func (p *ReasoningParser) openBlock(rest string) {
	p.pending = rest[len(thinkOpen):]
	p.state = inReasoning
	p.leading = true
}

// Flush ends the reply and returns what was held back. Held whitespace
// around reasoning is dropped and so is a part of "</think>" at the end of
// an unclosed block, as in llama.cpp. A reply that is only whitespace is
// that content. A lone prefix of "<think>" at the start, or right after a
// block, is kept as content where llama.cpp drops it: it is text the model
// wrote, and no tag.
func (p *ReasoningParser) Flush() (reasoning, content string) {
	if p.state != inReasoning {
		content = p.pending
	}
	p.pending, p.state, p.leading = "", atStart, false
	return "", content
}

// tagPrefixAtEnd is the length of the longest proper prefix of tag that s
// ends with.
func tagPrefixAtEnd(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

// trimLeftSpace and trimRightSpace trim C's isspace bytes, as llama.cpp's
// parser does (see trim).
func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return s[i:]
}

func trimRightSpace(s string) string {
	i := len(s)
	for i > 0 && isSpace(s[i-1]) {
		i--
	}
	return s[:i]
}

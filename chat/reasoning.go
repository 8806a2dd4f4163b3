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
// Gemma 4's and gpt-oss's replies mark their reasoning with channels
// instead, and are read by the same rules (see reasoningSyntaxes): Gemma 4's
// "<|channel>thought ... <channel|>", gpt-oss's "<|channel|>analysis<|message|>
// ... <|end|>", after which "<|start|>assistant" and the final channel's
// opening "<|channel|>final<|message|>" are dropped (a reply may also start
// in the final channel at once). The first opening decides the reply's
// syntax.
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
	pending string           // text received but not yet returned
	leading bool             // in reasoning, before its first non-space byte
	syntax  *reasoningSyntax // the reply's, once its first opening is seen
}

// reasoningSyntax is how a family's replies mark their reasoning.
type reasoningSyntax struct {
	open, close string // around a reasoning block
	// next opens the message after a block, and content opens the content
	// (gpt-oss's harmony format writes its reasoning and its answer as two
	// messages, each opened so); both are dropped.
	next, content string
}

// reasoningSyntaxes are the syntaxes a reply may use, told apart by how it
// starts: "<think>" (Qwen3, Qwen3.5, DeepSeek-R1 and others), Gemma 4's
// thought channel, and gpt-oss's analysis channel (or its final channel
// at once: no reasoning). The markers are special tokens of each
// vocabulary that the vocabulary renders, so no other reply starts so.
var reasoningSyntaxes = []reasoningSyntax{
	{open: thinkOpen, close: thinkClose},
	{open: "<|channel>thought", close: "<channel|>"},
	{open: "<|channel|>analysis<|message|>", close: "<|end|>", next: "<|start|>assistant", content: "<|channel|>final<|message|>"},
}

// openings are the texts that open a block or the content: at the start
// of a reply, or after a block (where the next message's opening may come
// first).
func (s *reasoningSyntax) openings(afterBlock bool) []string {
	out := []string{s.open}
	if s.content != "" {
		out = append(out, s.content)
	}
	if afterBlock && s.next != "" {
		out = append(out, s.next+s.open, s.next+s.content)
	}
	return out
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
			s, opening, wait := startOf(rest, nil)
			switch {
			case rest == "" || wait:
				return r.String(), c.String() // whitespace or part of an opening: wait
			case s != nil:
				c.WriteString(p.pending[:len(p.pending)-len(rest)]) // the whitespace before it
				p.syntax = s
				p.open(rest, opening)
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
			end := p.syntax.close
			if i := strings.Index(p.pending, end); i >= 0 {
				r.WriteString(trimRightSpace(p.pending[:i]))
				p.pending = p.pending[i+len(end):]
				p.state = afterClose
				continue
			}
			// Hold back trailing whitespace (the block's end trims it) and a
			// trailing part of the closing tag.
			body := p.pending[:len(p.pending)-tagPrefixAtEnd(p.pending, end)]
			sure := trimRightSpace(body)
			r.WriteString(sure)
			p.pending = p.pending[len(sure):]
			return r.String(), c.String()
		case afterClose:
			p.pending = trimLeftSpace(p.pending)
			rest := p.pending
			_, opening, wait := startOf(rest, p.syntax)
			switch {
			case rest == "" || wait:
				return r.String(), c.String()
			case opening != "":
				p.open(rest, opening)
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

// open goes past opening, the start of rest: into a reasoning block, or
// into the content where opening is a syntax's content opening.
func (p *ReasoningParser) open(rest, opening string) {
	p.pending = rest[len(opening):]
	if strings.HasSuffix(opening, p.syntax.content) && p.syntax.content != "" {
		p.state = inContent
		return
	}
	p.state = inReasoning
	p.leading = true
}

// startOf finds which opening rest starts with: of any syntax at the start
// of a reply (only), or of syntax s after one of its blocks. wait reports
// that rest is a proper prefix of an opening, which more text decides.
func startOf(rest string, s *reasoningSyntax) (syntax *reasoningSyntax, opening string, wait bool) {
	for i := range reasoningSyntaxes {
		x := &reasoningSyntaxes[i]
		if s != nil && x != s {
			continue
		}
		for _, o := range x.openings(s != nil) {
			switch {
			case strings.HasPrefix(rest, o):
				return x, o, false
			case len(rest) < len(o) && strings.HasPrefix(o, rest):
				wait = true
			}
		}
	}
	return nil, "", wait
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
	p.pending, p.state, p.leading, p.syntax = "", atStart, false, nil
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

package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// llamaCppSplit is the naive reference: llama.cpp's
// common_chat_msg_parser::try_parse_reasoning("<think>", "</think>")
// followed by the rest as content (common_chat_parse_content_only), on a
// complete reply, with the default reasoning_format (reasoning not in the
// content, thinking not forced open), written out one step after another.
// dropped reports the one case where llama.cpp drops text (a lone prefix of
// "<think>" at the start or after a block), which ReasoningParser keeps as
// content.
func llamaCppSplit(in string) (reasoning, content string, dropped bool) {
	isPrefixOfOpen := func(s string) bool { return len(s) < len(thinkOpen) && strings.HasPrefix(thinkOpen, s) }
	ws := 0
	for ws < len(in) && isSpace(in[ws]) {
		ws++
	}
	if ws == len(in) {
		return "", in, false // no reasoning: all content
	}
	if isPrefixOfOpen(in[ws:]) {
		return "", "", true
	}
	if !strings.HasPrefix(in[ws:], thinkOpen) {
		return "", in, false
	}
	content = in[:ws]
	cursor := ws + len(thinkOpen)
	for {
		if cursor >= len(in) {
			return reasoning, content, false
		}
		end := strings.Index(in[cursor:], thinkClose)
		if end < 0 {
			// string_find_partial_stop: a trailing part of </think> is not reasoning.
			rest := in[cursor:]
			for n := len(thinkClose) - 1; n > 0; n-- {
				if strings.HasSuffix(rest, thinkClose[:n]) {
					rest = rest[:len(rest)-n]
					break
				}
			}
			return reasoning + strings.TrimFunc(rest, isSpaceRune), content, false
		}
		reasoning += strings.TrimFunc(in[cursor:cursor+end], isSpaceRune)
		cursor += end + len(thinkClose)
		for cursor < len(in) && isSpace(in[cursor]) {
			cursor++
		}
		next := in[cursor:]
		switch {
		case next == "":
			return reasoning, content, false
		case isPrefixOfOpen(next):
			return reasoning, content, true
		case strings.HasPrefix(next, thinkOpen):
			cursor += len(thinkOpen)
		default:
			return reasoning, content + next, false
		}
	}
}

func isSpaceRune(r rune) bool { return r < 0x80 && isSpace(byte(r)) }

func TestSplitReasoning(t *testing.T) {
	cases := []struct {
		in, reasoning, content string
	}{
		{"<think>\nLet me add.\n</think>\n\n4", "Let me add.", "4"}, // Qwen3's shape
		{"<think>\n\n</think>\n\nHello", "", "Hello"},               // an empty block (thinking off)
		{"Hello <think>x</think>", "", "Hello <think>x</think>"},    // not at the start: content
		{"  \n<think> a b </think> c ", "a b", "  \nc "},            // whitespace before stays content
		{"<think>a</think>\n<think>b</think>c", "ab", "c"},          // blocks one after another
		{"<think>never closed\n", "never closed", ""},               // reasoning to the end
		{"<think>almost</thi", "almost", ""},                        // a part of </think> is dropped
		{"<think>x</think>", "x", ""},                               // nothing after
		{"", "", ""},                                                // nothing at all
		{" \n ", "", " \n "},                                        // whitespace only: content
		{"<thin", "", "<thin"},                                      // ours: kept (llama.cpp drops it)
		{"<think>x</think> <th", "x", "<th"},                        // ours: kept after a block too
		{"<think>\u00a0y\u00a0</think>z", "\u00a0y\u00a0", "z"},     // only ASCII whitespace is trimmed
		{"<think>a</think></think>b", "a", "</think>b"},             // a second close is content
		{"plain story text", "", "plain story text"},
	}
	for _, tc := range cases {
		r, c := SplitReasoning(tc.in)
		assert.Equal(t, tc.reasoning, r, "reasoning of %q", tc.in)
		assert.Equal(t, tc.content, c, "content of %q", tc.in)
		if lr, lc, dropped := llamaCppSplit(tc.in); !dropped {
			assert.Equal(t, lr, r, "llama.cpp's reasoning of %q", tc.in)
			assert.Equal(t, lc, c, "llama.cpp's content of %q", tc.in)
		}
	}
}

// streamSplit feeds in to a ReasoningParser in pieces cut at cuts and
// returns all it returned, pieces and Flush together.
func streamSplit(in string, cuts []int) (reasoning, content string) {
	var p ReasoningParser
	var r, c strings.Builder
	prev := 0
	for _, cut := range cuts {
		if cut < prev || cut > len(in) {
			continue
		}
		dr, dc := p.Write(in[prev:cut])
		r.WriteString(dr)
		c.WriteString(dc)
		prev = cut
	}
	dr, dc := p.Write(in[prev:])
	r.WriteString(dr)
	c.WriteString(dc)
	dr, dc = p.Flush()
	r.WriteString(dr)
	c.WriteString(dc)
	return r.String(), c.String()
}

// TestReasoningParserEveryCut: the tags split at every byte, one byte at a
// time, give SplitReasoning's result.
func TestReasoningParserEveryCut(t *testing.T) {
	for _, in := range []string{
		"<think>\nI should greet.\n</think>\n\nHello!",
		" <think> a </think> <think>b</think>  c",
		"<think>x</thinking></think>y",
		"no tags <think>",
	} {
		wantR, wantC := SplitReasoning(in)
		for cut := 0; cut <= len(in); cut++ {
			r, c := streamSplit(in, []int{cut})
			assert.Equal(t, wantR, r, "%q cut at %d", in, cut)
			assert.Equal(t, wantC, c, "%q cut at %d", in, cut)
		}
		all := make([]int, len(in))
		for i := range all {
			all[i] = i
		}
		r, c := streamSplit(in, all)
		assert.Equal(t, wantR, r, "%q byte by byte", in)
		assert.Equal(t, wantC, c, "%q byte by byte", in)
	}
}

// TestReasoningParserIsEager: text is returned as soon as it is sure, so a
// stream shows the reasoning as it is written; only a possible tag and
// whitespace that trimming may drop are held.
func TestReasoningParserIsEager(t *testing.T) {
	var p ReasoningParser
	steps := []struct{ in, r, c string }{
		{"<th", "", ""},
		{"ink>\n", "", ""},
		{"Let me", "Let me", ""},
		{" think. ", " think.", ""},
		{"</thi", "", ""},
		{"nk>\n\n", "", ""},
		{"Hi", "", "Hi"},
		{" there", "", " there"},
	}
	for _, s := range steps {
		r, c := p.Write(s.in)
		assert.Equal(t, s.r, r, "reasoning after %q", s.in)
		assert.Equal(t, s.c, c, "content after %q", s.in)
	}
	r, c := p.Flush()
	assert.Empty(t, r+c)
}

// FuzzReasoningParser: for any reply cut anywhere, the parser's pieces add
// up to SplitReasoning's result, which is llama.cpp's (llamaCppSplit) except
// where llama.cpp drops text.
func FuzzReasoningParser(f *testing.F) {
	f.Add("<think>\nplan\n</think>\n\nanswer", 3, 12)
	f.Add("  <think>a</think> <think> b </think>c", 1, 20)
	f.Add("<thi", 2, 3)
	f.Add("x<think>y</think>", 0, 9)
	f.Fuzz(func(t *testing.T, in string, a, b int) {
		r, c := SplitReasoning(in)
		if lr, lc, dropped := llamaCppSplit(in); !dropped && (lr != r || lc != c) {
			t.Fatalf("%q: got (%q, %q), llama.cpp (%q, %q)", in, r, c, lr, lc)
		}
		if a > b {
			a, b = b, a
		}
		sr, sc := streamSplit(in, []int{a, b})
		if sr != r || sc != c {
			t.Fatalf("%q cut at %d, %d: got (%q, %q), whole (%q, %q)", in, a, b, sr, sc, r, c)
		}
	})
}

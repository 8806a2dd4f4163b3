package chat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// streamChunks runs text through a ToolCallStream in the given pieces and
// returns the content joined and the calls.
func streamChunks(format ToolFormat, seed uint64, chunks []string) (string, []ToolCall) {
	s := NewToolCallStream(format, seed)
	var content strings.Builder
	for _, c := range chunks {
		content.WriteString(s.Write(c))
	}
	rest, calls := s.Finish()
	content.WriteString(rest)
	return content.String(), calls
}

// splitAt cuts text at the given offsets (sorted, within text).
func splitAt(text string, cuts ...int) []string {
	var out []string
	at := 0
	for _, c := range cuts {
		out = append(out, text[at:c])
		at = c
	}
	return append(out, text[at:])
}

// TestToolCallStreamSplits: for every reply of the parse table, the stream
// gives ParseToolCalls's content and calls for the whole reply at once, byte
// by byte, and cut in two or three anywhere.
func TestToolCallStreamSplits(t *testing.T) {
	const seed = 9
	for format, cases := range parseCases {
		for _, c := range cases {
			t.Run(format.String()+"/"+c.name, func(t *testing.T) {
				wantContent, wantCalls, err := ParseToolCalls(format, c.text, seed)
				require.NoError(t, err)
				check := func(chunks []string) {
					content, calls := streamChunks(format, seed, chunks)
					require.Equal(t, wantContent, content, "%q", chunks)
					require.Equal(t, wantCalls, calls, "%q", chunks)
				}
				check([]string{c.text})
				check(strings.Split(c.text, ""))
				for i := 0; i <= len(c.text); i++ {
					check(splitAt(c.text, i))
					for j := i; j <= len(c.text); j += 3 {
						check(splitAt(c.text, i, j))
					}
				}
			})
		}
	}
}

// TestToolCallStreamEarly: content is returned as soon as it is certain;
// a possible call is held back.
func TestToolCallStreamEarly(t *testing.T) {
	s := NewToolCallStream(ToolFormatHermes, 0)
	assert.Equal(t, "Let me", s.Write("Let me "))
	assert.Equal(t, " check.", s.Write("check.\n<tool"))
	assert.Equal(t, "", s.Write("_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"))
	content, calls := s.Finish()
	assert.Equal(t, "", content)
	require.Len(t, calls, 1)
	assert.Equal(t, "f", calls[0].Name)

	// Finish resets the stream: a tag prefix that was not one is content.
	assert.Equal(t, "a", s.Write("a <tool"))
	content, calls = s.Finish()
	assert.Equal(t, " <tool", content)
	assert.Empty(t, calls)

	l := NewToolCallStream(ToolFormatLlama3, 0)
	assert.Equal(t, "", l.Write(" "))
	assert.Equal(t, " It is", l.Write("It is"))
	assert.Equal(t, " {sunny}", l.Write(" {sunny}"))

	g := NewToolCallStream(ToolFormatGeneric, 0)
	assert.Equal(t, "", g.Write(`{"response": "hi`))
	content, _ = g.Finish()
	assert.Equal(t, `{"response": "hi`, content, "a cut-off response is the text")
}

// FuzzToolCallStream: for any reply and any chunking, in every format, the
// stream agrees with ParseToolCalls, and parsing keeps every byte that is
// not part of a call (no call: the content is the reply, unless it is a
// generic {"response": ...}).
func FuzzToolCallStream(f *testing.F) {
	for format, cases := range parseCases {
		for i, c := range cases {
			f.Add(uint8(format), c.text, uint64(i)*0x9e3779b97f4a7c15)
		}
	}
	f.Fuzz(func(t *testing.T, format uint8, text string, cuts uint64) {
		tf := ToolFormat(format%4 + 1)
		content, calls, err := ParseToolCalls(tf, text, cuts)
		if err != nil {
			t.Fatal(err)
		}
		_, isResponse, _ := parseGeneric(text)
		if len(calls) == 0 && content != text && !(tf == ToolFormatGeneric && isResponse == nil) {
			t.Fatalf("%v: no call, yet content %q differs from %q", tf, content, text)
		}
		for _, c := range calls {
			if c.Name == "" || c.ID == "" {
				t.Fatalf("%v: call without name or id: %+v", tf, c)
			}
			if n, err := parseJSON(c.Arguments); err != nil || n.kind != '{' || n.format(compactJSON) != c.Arguments {
				t.Fatalf("%v: arguments %q are not compact JSON object text", tf, c.Arguments)
			}
		}
		// Cut where the bits of cuts say (one bit a byte, cycling).
		var chunks []string
		at := 0
		for i := 1; i < len(text); i++ {
			if cuts>>(uint(i)%64)&1 == 1 {
				chunks = append(chunks, text[at:i])
				at = i
			}
		}
		chunks = append(chunks, text[at:])
		gotContent, gotCalls := streamChunks(tf, cuts, chunks)
		if gotContent != content {
			t.Fatalf("%v: streamed content %q, parsed %q (chunks %q)", tf, gotContent, content, chunks)
		}
		if len(gotCalls) != len(calls) {
			t.Fatalf("%v: streamed %d calls, parsed %d", tf, len(gotCalls), len(calls))
		}
		for i := range calls {
			if gotCalls[i] != calls[i] {
				t.Fatalf("%v: call %d: streamed %+v, parsed %+v", tf, i, gotCalls[i], calls[i])
			}
		}
	})
}

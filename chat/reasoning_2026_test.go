package chat

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestReasoningChannels: Gemma 4's thought channel and gpt-oss's analysis
// channel are reasoning, as llama.cpp's parsers for them read a reply
// (common/chat.cpp: thinking_start_tag "<|channel>thought", end tag
// "<channel|>"; "<|channel|>analysis<|message|>" ... "<|end|>", then the
// final channel's message as content, each message opened by
// "<|start|>assistant", which the generation prompt writes for the first),
// trimmed as "<think>" blocks are; the whole reply and every cut of it
// give the same split.
func TestReasoningChannels(t *testing.T) {
	for _, tc := range []struct {
		in, reasoning, content string
	}{
		{"<|channel>thought\nThe user greets me.<channel|>Hello!", "The user greets me.", "Hello!"},
		{"<|channel>thought\n<channel|>Hi", "", "Hi"},
		{"<|channel|>analysis<|message|>User says hi.<|end|><|start|>assistant<|channel|>final<|message|>Hello!", "User says hi.", "Hello!"},
		{"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|><|start|>assistant<|channel|>final<|message|>c", "ab", "c"},
		{"<|channel|>final<|message|>Straight answer.", "", "Straight answer."},
		{"<|channel|>analysis<|message|>unfinished", "unfinished", ""},
		// Not an opening of these: content, as any reply that starts
		// otherwise.
		{"<|channel|>commentary<|message|>x", "", "<|channel|>commentary<|message|>x"},
		{"Hello <|channel>thought\nx<channel|>", "", "Hello <|channel>thought\nx<channel|>"},
		// A think block's syntax holds for the whole reply.
		{"<think>a</think><|channel|>final<|message|>b", "a", "<|channel|>final<|message|>b"},
	} {
		r, c := SplitReasoning(tc.in)
		assert.Equal(t, tc.reasoning, r, "%q", tc.in)
		assert.Equal(t, tc.content, c, "%q", tc.in)
		for cut := 0; cut <= len(tc.in); cut++ {
			r, c := streamSplit(tc.in, []int{cut})
			assert.Equal(t, tc.reasoning, r, "%q cut at %d", tc.in, cut)
			assert.Equal(t, tc.content, c, "%q cut at %d", tc.in, cut)
		}
		all := make([]int, len(tc.in))
		for i := range all {
			all[i] = i
		}
		r, c = streamSplit(tc.in, all)
		assert.Equal(t, tc.reasoning, r, "%q byte by byte", tc.in)
		assert.Equal(t, tc.content, c, "%q byte by byte", tc.in)
	}
}

// TestHarmonyEndsOfGeneration: a gpt-oss reply stops at each of llama.cpp's
// end-of-generation tokens for the harmony vocabulary (src/llama-vocab.cpp:
// <|return|>, <|call|>, <|endoftext|>), never at <|end|>, which closes the
// reasoning channel and which llama.cpp drops from the list when <|return|>
// and <|call|> are there.
func TestHarmonyEndsOfGeneration(t *testing.T) {
	tmpl, err := Named("gpt-oss")
	if err != nil {
		t.Fatal(err)
	}
	assert.ElementsMatch(t, []string{"<|return|>", "<|call|>", "<|endoftext|>"}, tmpl.Stop())
	assert.NotContains(t, tmpl.Stop(), "<|end|>")
}

// TestHarmonyDate: gpt-oss's system message writes Options.Date as given,
// and today's UTC date when it is empty.
func TestHarmonyDate(t *testing.T) {
	tmpl, err := Named("gpt-oss")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	out, err := tmpl.ApplyWith(msgs, true, Options{Date: "2026-01-02"})
	if err != nil {
		t.Fatal(err)
	}
	assert.Contains(t, out, "Current date: 2026-01-02\n")

	// Today's date, read before and after (the day may turn meanwhile).
	before := time.Now().UTC().Format("2006-01-02")
	out, err = tmpl.ApplyWith(msgs, true, Options{})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC().Format("2006-01-02")
	today := strings.Contains(out, "Current date: "+before+"\n") || strings.Contains(out, "Current date: "+after+"\n")
	assert.True(t, today, "%q, today %s", out, after)
}

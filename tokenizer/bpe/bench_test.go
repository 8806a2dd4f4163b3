package bpe

import (
	"strings"
	"testing"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// benchText is about 10 KB of mixed text: the reference strings (prose in
// many scripts, code, numbers, emoji, white space) in order.
func benchText(b testing.TB) string {
	b.Helper()
	ref := readReference(b)
	var sb strings.Builder
	for _, c := range ref.Cases {
		if sb.Len() >= 10<<10 {
			break
		}
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// BenchmarkEncodeLlama3 encodes ~10 KB of mixed text with Llama 3.
func BenchmarkEncodeLlama3(b *testing.B) {
	tok := llama3(b)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeQwen3 is the same with Qwen3 (one digit per word, no
// whole-word shortcut).
func BenchmarkEncodeQwen3(b *testing.B) {
	tok := qwen3(b)
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tok.Encode(text, tokenizer.EncodeOptions{ParseSpecial: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeLongWord encodes one 16 KB word without spaces, where the
// merge queue's O(n log n) matters.
func BenchmarkEncodeLongWord(b *testing.B) {
	tok := llama3(b)
	text := strings.Repeat("漢字かな", 1<<10)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := tok.Encode(text, tokenizer.EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadHFLlama3 parses Llama 3's 9 MB tokenizer.json.
func BenchmarkLoadHFLlama3(b *testing.B) {
	tj, _ := hfFiles(b, "llama3")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadHF(tj, nil); err != nil {
			b.Fatal(err)
		}
	}
}

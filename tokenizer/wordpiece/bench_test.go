package wordpiece

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// mixedText is a paragraph in several scripts, with accents, CJK, emoji and
// punctuation: the slow paths of the normaliser.
const mixedText = "Déjà vu: the café on the Straße served crème brûlée. " +
	"Москва — столица России. Ελληνικά γράμματα, ΣΟΦΙΑ! " +
	"東京は日本の首都です。北京是中国的首都。 서울은 한국의 수도입니다. " +
	"नमस्ते दुनिया, مرحبا بالعالم! 🦙 llamas 😀 and emoji… “quotes” ¿qué? "

// BenchmarkWordPiece encodes embedding-sized inputs (a few hundred tokens)
// with the bge vocabulary: English prose (tokenizer's stories_en.txt, about
// 430 tokens) and mixed scripts (mixedText, about 500). ns/token is the
// time per id produced.
func BenchmarkWordPiece(b *testing.B) {
	tok := bge(b)
	story, err := os.ReadFile(filepath.Join("..", "testdata", "stories_en.txt"))
	require.NoError(b, err)
	for _, bc := range []struct{ name, text string }{
		{"english", string(story)},
		{"mixed", strings.Repeat(mixedText, 3)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := tokenizer.EncodeOptions{AddSpecial: true}
			ids, err := tok.Encode(bc.text, opts)
			require.NoError(b, err)
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tok.Encode(bc.text, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
			b.ReportMetric(float64(len(ids)), "tokens")
		})
	}
}

// BenchmarkNew builds the bge tokenizer (30522 tokens): the cost of loading
// a BERT model's vocabulary.
func BenchmarkNew(b *testing.B) {
	cfg := bgeVocab(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

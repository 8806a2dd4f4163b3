package modelgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// EmbedSpec is one measurement of the embedding benchmark (wasmlm bench
// -embed, tools/benchrun -mode embed): Batch texts of Tokens tokens each,
// [CLS] and [SEP] included, in one call.
type EmbedSpec struct {
	Tokens int `json:"tokens"`
	Batch  int `json:"batch"`
}

// String is the spec as ParseEmbedSpecs reads it: "32x16".
func (s EmbedSpec) String() string { return fmt.Sprintf("%dx%d", s.Tokens, s.Batch) }

// ParseEmbedSpecs reads a comma-separated list of TOKENSxBATCH specs,
// "32x1,256x16": at least 3 tokens (BERT's [CLS] and [SEP] and a word)
// and 1 text each.
func ParseEmbedSpecs(list string) ([]EmbedSpec, error) {
	var out []EmbedSpec
	for _, s := range strings.Split(list, ",") {
		t, b, ok := strings.Cut(strings.TrimSpace(s), "x")
		tokens, err1 := strconv.Atoi(t)
		batch, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || tokens < 3 || batch < 1 {
			return nil, fmt.Errorf("%w: %q is not TOKENSxBATCH with TOKENS >= 3 ([CLS] and [SEP] included) and BATCH >= 1", ErrSpec, s)
		}
		out = append(out, EmbedSpec{tokens, batch})
	}
	return out, nil
}

// Texts are the spec's texts: EmbedTexts(s.Tokens, s.Batch).
func (s EmbedSpec) Texts() ([]string, error) { return EmbedTexts(s.Tokens, s.Batch) }

// Rate is how the benchmark rates a spec on every host from the wall
// times of its measured rounds, one call each: Batch embeddings over the
// median round (the middle one, or the mean of the two middles of an even
// count), and that median; 0 without rounds.
func (s EmbedSpec) Rate(seconds []float64) (perSecond, median float64) {
	if len(seconds) == 0 {
		return 0, 0
	}
	x := slices.Sorted(slices.Values(seconds))
	median = x[len(x)/2]
	if len(x)%2 == 0 {
		median = (x[len(x)/2-1] + x[len(x)/2]) / 2
	}
	if median <= 0 {
		return 0, median
	}
	return float64(s.Batch) / median, median
}

// EmbedTexts are batch texts to benchmark BERT-family models with, each
// exactly tokens tokens long with its [CLS] and [SEP]: tokens−2 words of
// BERT's vocabulary that WordPiece keeps whole — lowercase ASCII words of
// 3 to 10 letters, each a token of its own ("▁" and the word, as llama.cpp's
// converter writes a word's first piece) — separated by spaces. The words
// are spread over the vocabulary by fixed strides, differ from text to
// text, and are the same for the same arguments, so every host embeds the
// same texts (and checks their length: its tokenizer decides).
func EmbedTexts(tokens, batch int) ([]string, error) {
	if tokens < 3 || batch < 1 {
		return nil, fmt.Errorf("%w: EmbedTexts(%d, %d): want at least 3 tokens and 1 text", ErrSpec, tokens, batch)
	}
	words, err := bertWords()
	if err != nil {
		return nil, err
	}
	texts := make([]string, batch)
	for b := range texts {
		picked := make([]string, tokens-2)
		for i := range picked {
			picked[i] = words[(b*7919+i*104729)%len(words)] // primes: a text's words and the texts' first words differ
		}
		texts[b] = strings.Join(picked, " ")
	}
	return texts, nil
}

// bertWords are the whole words of the embedded BERT vocabulary that
// EmbedTexts takes, in the vocabulary's order.
func bertWords() ([]string, error) {
	f, err := bertVocabFile()
	if err != nil {
		return nil, err
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	var words []string
	for _, t := range tokens {
		w, ok := strings.CutPrefix(t, "▁")
		if ok && len(w) >= 3 && len(w) <= 10 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			words = append(words, w)
		}
	}
	if len(words) < 1000 {
		return nil, fmt.Errorf("%w: the embedded BERT vocabulary has %d whole lowercase words", ErrSpec, len(words))
	}
	return words, nil
}

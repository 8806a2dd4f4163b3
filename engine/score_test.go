package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// Score's logits after each token are Forward's, bit for bit, whatever
// the block, and fn sees every token once, in order.
func TestScoreIsForwardTokenByToken(t *testing.T) {
	for _, tt := range []struct {
		arch  string
		typ   tensor.Type
		block int
	}{{"llama", tensor.Q8_0, 0}, {"qwen3", tensor.F32, 5}, {"gemma2", tensor.Q4_0, 1}} {
		sp := modelgen.Spec{Arch: tt.arch, Type: tt.typ, Seed: 3,
			Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 300, ContextLength: 128}}
		m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scoring, err := m.NewSession(SessionOptions{PromptBlock: tt.block})
		if err != nil {
			t.Fatal(err)
		}
		forward, err := m.NewSession(SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tokens := make([]int, 70)
		for i := range tokens {
			tokens[i] = (i*37 + 11) % 300
		}
		const pos = 3
		for p := range pos { // the cache below pos, as Score finds it
			if err := scoring.Forward(tokens[p], p, false); err != nil {
				t.Fatal(err)
			}
			if err := forward.Forward(tokens[p], p, false); err != nil {
				t.Fatal(err)
			}
		}
		next := 0
		err = scoring.Score(tokens[pos:], pos, func(i int, logits []float32) error {
			if i != next {
				t.Fatalf("%s: token %d scored after %d", tt.arch, i, next-1)
			}
			next++
			if err := forward.Forward(tokens[pos+i], pos+i, true); err != nil {
				return err
			}
			if !slices.Equal(logits, forward.Logits()) {
				t.Fatalf("%s block %d: token %d's logits differ from Forward's", tt.arch, tt.block, i)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next != len(tokens)-pos {
			t.Errorf("%s: %d tokens scored, want %d", tt.arch, next, len(tokens)-pos)
		}
	}
}

func TestScoreRefuses(t *testing.T) {
	sp := modelgen.Spec{Seed: 1, Shape: modelgen.Shape{Dim: 64, HiddenDim: 128, Layers: 1, Heads: 4, KVHeads: 4, VocabSize: 300, ContextLength: 16}}
	m, err := Load(testmodel.GGUF(t, sp), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.NewSession(SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	for _, tt := range []struct {
		name   string
		tokens []int
		pos    int
		fn     func(int, []float32) error
		want   string
	}{
		{"past the context", make([]int, 10), 7, nil, "engine: invalid option: position must be in 0..15 for every token, got 7..16"},
		{"a token out of range", []int{1, 300}, 0, nil, "engine: invalid option: token must be in 0..299, got 300 (tokens[1])"},
		{"fn's error", []int{1, 2, 3}, 0, func(int, []float32) error { calls++; return stop }, "stop"},
	} {
		err := s.Score(tt.tokens, tt.pos, tt.fn)
		if err == nil || err.Error() != tt.want && !errors.Is(err, stop) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	if calls != 1 {
		t.Errorf("fn called %d times after returning an error, want once", calls)
	}
	// The session is usable after each refusal.
	if err := s.Score([]int{1, 2}, 0, func(int, []float32) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

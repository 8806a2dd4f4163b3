package engine

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/race"
	"github.com/wasmlm/wasmlm/sampling"
)

const onceUpon = "Once upon a time"

// greedyOnceUpon is llama2.c's greedy completion of "Once upon a time".
func greedyOnceUpon(t *testing.T) string {
	for _, r := range golden.RuncStories260K(t).Runs {
		if r.Prompt == onceUpon {
			return strings.TrimPrefix(r.Text, onceUpon)
		}
	}
	t.Fatal("no golden run for " + onceUpon)
	return ""
}

func TestStopStringStreaming(t *testing.T) {
	m := loadStories260K(t)
	opts := GenerateOptions{MaxTokens: 60}
	plain, err := newSession(t, m).Generate(context.Background(), onceUpon, opts, nil)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(greedyOnceUpon(t), plain.Text))

	for _, stop := range []string{"Lily", " named", ". She", "\n", "zzz-never"} {
		t.Run(stop, func(t *testing.T) {
			var chunks []string
			opts := opts
			opts.Stop = []string{stop}
			res, err := newSession(t, m).Generate(context.Background(), onceUpon, opts,
				func(tok Token) error { chunks = append(chunks, tok.Text); return nil })
			require.NoError(t, err)
			streamed := strings.Join(chunks, "")
			assert.Equal(t, res.Text, streamed)
			assert.NotContains(t, streamed, stop, "the stream never shows the stop string")
			if i := strings.Index(plain.Text, stop); i >= 0 {
				assert.Equal(t, plain.Text[:i], res.Text, "text ends right before the stop string")
				assert.Equal(t, FinishStop, res.FinishReason)
			} else {
				assert.Equal(t, plain.Text, res.Text)
				assert.Equal(t, FinishLength, res.FinishReason)
			}
		})
	}
}

func TestMaxTokensAndContextLimit(t *testing.T) {
	m := loadStories260K(t)
	s := newSession(t, m)
	res, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 7}, nil)
	require.NoError(t, err)
	assert.Len(t, res.Tokens, 7)
	assert.Equal(t, FinishLength, res.FinishReason)

	// A 16-position session with a 5-token prompt: tokens are sampled after
	// positions 4..15, i.e. 12 of them, and the last cannot be evaluated.
	small, err := m.NewSession(SessionOptions{ContextLength: 16})
	require.NoError(t, err)
	res, err = small.Generate(context.Background(), onceUpon, GenerateOptions{}, nil)
	require.NoError(t, err)
	assert.Len(t, res.Tokens, 12)
	assert.Equal(t, FinishContext, res.FinishReason)
	assert.True(t, strings.HasPrefix(greedyOnceUpon(t), res.Text))
}

func TestPromptTooLong(t *testing.T) {
	m := loadStories260K(t)
	s, err := m.NewSession(SessionOptions{ContextLength: 8})
	require.NoError(t, err)
	_, err = s.Generate(context.Background(), "Once upon a time there was a dog and a cat", GenerateOptions{}, nil)
	require.ErrorIs(t, err, ErrPromptTooLong)
	assert.Contains(t, err.Error(), "the context holds 8")
	// The session still works.
	res, err := s.Generate(context.Background(), "Once", GenerateOptions{MaxTokens: 2}, nil)
	require.NoError(t, err)
	assert.Len(t, res.Tokens, 2)
}

func TestCancelStopsAndSessionStaysUsable(t *testing.T) {
	m := loadStories260K(t)
	s := newSession(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := s.Generate(ctx, onceUpon, GenerateOptions{MaxTokens: 100}, func(Token) error {
		n++
		if n == 5 {
			cancel()
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, FinishAbort, res.FinishReason)
	assert.Len(t, res.Tokens, 5)

	res, err = s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 20}, nil)
	require.NoError(t, err)
	assert.Equal(t, FinishLength, res.FinishReason)
	assert.True(t, strings.HasPrefix(greedyOnceUpon(t), res.Text))
}

func TestCallbackErrorAborts(t *testing.T) {
	s := newSession(t, loadStories260K(t))
	boom := errors.New("boom")
	res, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 50}, func(tok Token) error { return boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, FinishAbort, res.FinishReason)
	assert.Len(t, res.Tokens, 1)
}

func TestConcurrentGenerateIsRejected(t *testing.T) {
	s := newSession(t, loadStories260K(t))
	var inner error
	_, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 3}, func(Token) error {
		if inner == nil {
			_, inner = s.Generate(context.Background(), "x", GenerateOptions{MaxTokens: 1}, nil)
		}
		return nil
	})
	require.NoError(t, err)
	require.ErrorIs(t, inner, ErrBusy)
}

func TestPromptCacheReuse(t *testing.T) {
	s := newSession(t, loadStories260K(t))
	first, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 30}, nil)
	require.NoError(t, err)
	assert.Equal(t, 5, first.Timings.PrefillTokens)
	again, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 30}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, again.Timings.PrefillTokens, "only the last prompt token runs again")
	assert.Equal(t, first.Tokens, again.Tokens)
	// A prompt that extends the cached conversation evaluates only the new part.
	ext, err := s.Generate(context.Background(), onceUpon+first.Text, GenerateOptions{MaxTokens: 5}, nil)
	require.NoError(t, err)
	assert.Less(t, ext.Timings.PrefillTokens, len(ext.PromptTokens))
}

func TestInvalidOptions(t *testing.T) {
	s := newSession(t, loadStories260K(t))
	tests := []struct {
		name  string
		opts  GenerateOptions
		field string
	}{
		{"negative max tokens", GenerateOptions{MaxTokens: -1}, "max_tokens"},
		{"empty stop string", GenerateOptions{Stop: []string{""}}, "stop[0]"},
		{"too many stop strings", GenerateOptions{Stop: make([]string, 17)}, "stop"},
		{"negative temperature", GenerateOptions{Sampling: sampling.Params{Temperature: -1}}, "temperature"},
		{"top_p above 1", GenerateOptions{Sampling: sampling.Params{TopP: 1.5}}, "top_p"},
		{"logit bias outside the vocabulary", GenerateOptions{Sampling: sampling.Params{LogitBias: map[int]float32{512: 1}}}, "logit_bias.512"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Generate(context.Background(), onceUpon, tt.opts, nil)
			require.ErrorIs(t, err, ErrInvalidOption)
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.field, oe.Field, "the field, for hosts to name in their own spelling")
			assert.Contains(t, err.Error(), tt.field)
			assert.Equal(t, err, tt.opts.Validate(512), "Validate finds what a generation finds")
		})
	}
	_, err := s.GenerateTokens(context.Background(), []int{1, 9999}, GenerateOptions{}, nil)
	require.ErrorIs(t, err, ErrInvalidOption)
	var oe *OptionError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "prompt", oe.Field)
	_, err = s.GenerateTokens(context.Background(), nil, GenerateOptions{}, nil)
	require.ErrorIs(t, err, ErrEmptyPrompt)
	_, err = s.Generate(context.Background(), "bad \xff utf-8", GenerateOptions{}, nil)
	require.Error(t, err)
}

// TestSeededSamplingIsReproducible: the same seed gives the same tokens; a
// different seed (almost surely) does not.
func TestSeededSamplingIsReproducible(t *testing.T) {
	m := loadStories260K(t)
	gen := func(seed uint64) []int {
		s := newSession(t, m)
		res, err := s.Generate(context.Background(), onceUpon, GenerateOptions{
			MaxTokens: 40, Sampling: sampling.Params{Temperature: 1, TopP: 0.9, Seed: seed},
		}, nil)
		require.NoError(t, err)
		return res.Tokens
	}
	assert.Equal(t, gen(42), gen(42))
	assert.NotEqual(t, gen(42), gen(43))
}

func TestTraceDescribesEachChoice(t *testing.T) {
	s := newSession(t, loadStories260K(t))
	n := 0
	res, err := s.Generate(context.Background(), onceUpon, GenerateOptions{
		MaxTokens: 10, Trace: true, Sampling: sampling.Params{Temperature: 0.8, TopK: 5, Seed: 1},
	}, func(tok Token) error {
		require.NotNil(t, tok.Trace)
		assert.Equal(t, tok.ID, tok.Trace.Chosen)
		assert.LessOrEqual(t, tok.Trace.Kept, 5)
		n++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, len(res.Tokens), n)
}

// TestPromptProgress: the hook sees every evaluated block of prompt
// tokens, and a cancel from inside it stops the prefill.
func TestPromptProgress(t *testing.T) {
	s, err := loadStories260K(t).NewSession(SessionOptions{PromptBlock: 2})
	require.NoError(t, err)
	var seen [][2]int
	res, err := s.Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 1, PromptProgress: func(done, total int) {
		seen = append(seen, [2]int{done, total})
	}}, nil)
	require.NoError(t, err)
	assert.Equal(t, [][2]int{{2, 5}, {4, 5}, {5, 5}}, seen)
	assert.Len(t, res.Tokens, 1)

	s.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	res, err = s.Generate(ctx, onceUpon, GenerateOptions{PromptProgress: func(done, _ int) {
		if done == 2 {
			cancel()
		}
	}}, nil)
	require.NoError(t, err)
	assert.Equal(t, FinishAbort, res.FinishReason)
	assert.Empty(t, res.Tokens)
	assert.Equal(t, 2, res.Timings.PrefillTokens, "the block evaluated before the abort")
	assert.Positive(t, res.Timings.Prefill)
}

// TestGeneratedTokensAllocateNothing: once a generation has started, a
// generated token allocates nothing — sampling, the forward pass, streaming
// its text (with and without stop strings to watch) and the callback — so a
// generation of 200 tokens allocates exactly as much as one of 100.
func TestGeneratedTokensAllocateNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	m := loadStories260K(t)
	noEnd := map[int]float32{1: float32(math.Inf(-1)), 2: float32(math.Inf(-1))} // never BOS or EOS: run to MaxTokens
	tests := []struct {
		name     string
		opts     GenerateOptions
		callback bool
	}{
		{"greedy", GenerateOptions{}, false},
		{"greedy with a callback", GenerateOptions{}, true},
		{"sampled with stop strings", GenerateOptions{
			Sampling: sampling.Params{Temperature: 1, TopK: 40, TopP: 0.9, RepeatPenalty: 1.1, Seed: 7, LogitBias: noEnd},
			Stop:     []string{"the end of the story", "zzz"},
		}, true},
		{"greedy with logprobs", GenerateOptions{Logprobs: true, TopLogprobs: MaxTopLogprobs}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := func(n int) uint64 {
				best := uint64(math.MaxUint64)
				for range 3 {
					s := newSession(t, m)
					opts := tt.opts
					opts.MaxTokens = n
					var cb TokenFunc
					if tt.callback {
						var got int
						cb = func(tok Token) error { got += len(tok.Text); return nil }
					}
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					res, err := s.Generate(context.Background(), "", opts, cb)
					runtime.ReadMemStats(&after)
					require.NoError(t, err)
					require.Len(t, res.Tokens, n)
					best = min(best, after.Mallocs-before.Mallocs)
				}
				return best
			}
			a100, a200 := allocs(100), allocs(200)
			t.Logf("allocations: %d for 100 tokens, %d for 200", a100, a200)
			assert.Equal(t, a100, a200, "100 more tokens allocated %d times", int64(a200)-int64(a100))
		})
	}
}

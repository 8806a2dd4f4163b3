package engine

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// stateRun is what a greedy generation gave: its tokens, the logits each
// was sampled from, and how many prompt tokens it evaluated.
type stateRun struct {
	tokens  []int
	logits  [][]float32
	prefill int
}

// generateLogged generates greedily from prompt in s, keeping each
// token's logits.
func generateLogged(t *testing.T, s *Session, prompt []int, n int) stateRun {
	t.Helper()
	var run stateRun
	res, err := s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: n}, func(tok Token) error {
		if tok.ID >= 0 {
			run.logits = append(run.logits, append([]float32(nil), s.Logits()...))
		}
		return nil
	})
	require.NoError(t, err)
	run.tokens, run.prefill = res.Tokens, res.Timings.PrefillTokens
	return run
}

// saved is the state of a session of m that evaluated prompt (and
// sampled one token from it, not evaluated).
func saved(t *testing.T, m *Model, opts SessionOptions, prompt []int) []byte {
	t.Helper()
	s, err := m.NewSession(opts)
	require.NoError(t, err)
	_, err = s.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, s.SaveState(&buf))
	return buf.Bytes()
}

func requireSameRun(t *testing.T, want, got stateRun, what string) {
	t.Helper()
	require.Equal(t, want.tokens, got.tokens, "%s: tokens", what)
	require.Len(t, got.logits, len(want.logits), "%s: logits", what)
	for i := range want.logits {
		requireSameBits(t, want.logits[i], got.logits[i], "%s: token %d's logits", what, i)
	}
}

// TestSavedStateContinuesBitForBit: a session saved after its prompt and
// loaded into a fresh session generates, without evaluating any token
// again, the tokens and the logits, bit for bit, that the uninterrupted
// session does; saved again after generating and loaded once more, it
// continues the next turn as the uninterrupted one. Over the families
// whose caches differ: whole-context layers, sliding-window rings that
// wrap, layers sharing another's cache, and the recurrent states of short
// convolutions, Gated DeltaNet and Mamba-2; F32 and F16 caches.
func TestSavedStateContinuesBitForBit(t *testing.T) {
	models := []struct {
		name string
		load func(t testing.TB) *Model
	}{
		{"llama (stories260K)", loadStories260K},
		{"gemma3 sliding window 8", func(t testing.TB) *Model { return loadGemma(t, "gemma3", tensor.F32, 8) }},
		{"gemma4 shared caches", func(t testing.TB) *Model { return loadGemma4(t, tensor.Q8_0) }},
		{"lfm2 short convolutions", func(t testing.TB) *Model { return loadLFM2(t, tensor.F32) }},
		{"qwen35 Gated DeltaNet", func(t testing.TB) *Model { return loadQwen35(t, tensor.F32) }},
		{"granitehybrid Mamba-2", func(t testing.TB) *Model {
			m, err := Load(testmodel.GGUF(t, graniteHybridSpec(tensor.F32)), LoadOptions{})
			require.NoError(t, err)
			return m
		}},
	}
	const generated = 12
	for _, tc := range models {
		m := tc.load(t)
		prompt := randomPrompt(5, 40, m.config.VocabSize)
		for _, kv := range []KVType{KVF32, KVF16} {
			t.Run(tc.name+" "+kv.String(), func(t *testing.T) {
				opts := SessionOptions{KVType: kv, ContextLength: 128}
				whole, err := m.NewSession(opts)
				require.NoError(t, err)
				want := generateLogged(t, whole, prompt, generated)

				state := saved(t, m, opts, prompt)
				n := len(prompt)
				c := m.config
				bound := c.KVCacheBytes(opts.ContextLength, kv)*int64(n)/int64(opts.ContextLength) +
					c.RecurrentStateBytes() + int64(4*(c.VocabSize+n+4*c.Layers)) + 256
				if c.slidingWindow() == 0 {
					assert.LessOrEqual(t, int64(len(state)), bound, "the state of %d tokens holds the used slots only", n)
				}
				restored, err := m.NewSession(opts)
				require.NoError(t, err)
				require.NoError(t, restored.LoadState(bytes.NewReader(state)))
				got := generateLogged(t, restored, prompt, generated)
				requireSameRun(t, want, got, "restored after the prompt")
				assert.Zero(t, got.prefill, "a restored session evaluates no prompt token again")

				// Saved after generating, the next turn continues alike.
				var buf bytes.Buffer
				require.NoError(t, restored.SaveState(&buf))
				again, err := m.NewSession(opts)
				require.NoError(t, err)
				require.NoError(t, again.LoadState(&buf))
				next := append(append(append([]int(nil), prompt...), want.tokens[:len(want.tokens)-1]...), randomPrompt(6, 5, c.VocabSize)...)
				wantNext := generateLogged(t, whole, next, generated)
				gotNext := generateLogged(t, again, next, generated)
				requireSameRun(t, wantNext, gotNext, "restored after generating, the next turn")
				assert.Equal(t, wantNext.prefill, gotNext.prefill, "the next turn evaluates only its new tokens")
			})
		}
	}
}

// nopDevice stands for a device: its methods are never called.
type nopDevice struct{ Device }

// TestLoadStateRefusals: a state of another model or KV type, or of more
// tokens than the session's context, is refused with ErrStateMismatch; a
// truncated or corrupt one with ErrStateFormat, leaving the session reset
// and usable; sessions whose state the engine cannot read refuse to save.
func TestLoadStateRefusals(t *testing.T) {
	m := loadStories260K(t)
	prompt := randomPrompt(3, 40, m.config.VocabSize)
	opts := SessionOptions{KVType: KVF32, ContextLength: 128}
	state := saved(t, m, opts, prompt)
	fresh, err := m.NewSession(opts)
	require.NoError(t, err)
	want := generateLogged(t, fresh, prompt, 8)

	corrupt := func(at int) []byte {
		b := bytes.Clone(state)
		b[at] ^= 0x10
		return b
	}
	other := loadGemma(t, "gemma3", tensor.F32, 8)
	for _, tc := range []struct {
		name  string
		model *Model
		opts  SessionOptions
		state []byte
		want  error
	}{
		{"another model", other, opts, state, ErrStateMismatch},
		{"another KV type", m, SessionOptions{KVType: KVF16, ContextLength: 128}, state, ErrStateMismatch},
		{"a context too small", m, SessionOptions{KVType: KVF32, ContextLength: 32}, state, ErrStateMismatch},
		{"empty", m, opts, nil, ErrStateFormat},
		{"not a state", m, opts, []byte("GGUF and the rest of a model file"), ErrStateFormat},
		{"another version", m, opts, corrupt(4), ErrStateFormat},
		{"truncated in the header", m, opts, state[:30], ErrStateFormat},
		{"truncated in the tokens", m, opts, state[:70], ErrStateFormat},
		{"truncated in the keys", m, opts, state[:len(state)/2], ErrStateFormat},
		{"truncated in the checksum", m, opts, state[:len(state)-1], ErrStateFormat},
		{"a flipped bit in the keys", m, opts, corrupt(len(state) / 2), ErrStateFormat},
		{"a flipped bit in the logits", m, opts, corrupt(len(state) - 10), ErrStateFormat},
		{"a token out of the vocabulary", m, opts, corrupt(4 + 4 + 32 + 4 + 4 + 4 + 3), ErrStateFormat},
		{"bytes after the checksum", m, opts, append(bytes.Clone(state), 0), ErrStateFormat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.model.NewSession(tc.opts)
			require.NoError(t, err)
			err = s.LoadState(bytes.NewReader(tc.state))
			require.ErrorIs(t, err, tc.want)
			t.Log(err)
			assert.Empty(t, s.tokens, "a refused state leaves nothing cached")
			if tc.model == m && tc.opts == opts {
				got := generateLogged(t, s, prompt, 8)
				requireSameRun(t, want, got, "after the refusal")
				assert.Equal(t, len(prompt), got.prefill, "the prompt is evaluated from the start")
			}
		})
	}

	t.Run("a longer context", func(t *testing.T) {
		s, err := m.NewSession(SessionOptions{KVType: KVF32, ContextLength: 256})
		require.NoError(t, err)
		require.NoError(t, s.LoadState(bytes.NewReader(state)))
		requireSameRun(t, want, generateLogged(t, s, prompt, 8), "restored in a longer context")
	})
	t.Run("a device session", func(t *testing.T) {
		s, err := m.NewSession(opts)
		require.NoError(t, err)
		s.device = nopDevice{}
		require.ErrorIs(t, s.SaveState(&bytes.Buffer{}), ErrStateUnsupported)
		require.ErrorIs(t, s.LoadState(bytes.NewReader(state)), ErrStateUnsupported)
	})
	t.Run("busy", func(t *testing.T) {
		s, err := m.NewSession(opts)
		require.NoError(t, err)
		s.mu.Lock()
		defer s.mu.Unlock()
		require.ErrorIs(t, s.SaveState(&bytes.Buffer{}), ErrBusy)
		require.ErrorIs(t, s.LoadState(bytes.NewReader(state)), ErrBusy)
	})
}

// TestModelIdentity: the identity tells models apart, and a model's does
// not change when its first session packs the weights in place.
func TestModelIdentity(t *testing.T) {
	data := testmodel.GGUF(t, gemmaSpec("gemma3", tensor.Q8_0, 8))
	m, err := Load(bytes.Clone(data), LoadOptions{})
	require.NoError(t, err)
	before := m.Identity()
	_, err = m.NewSession(SessionOptions{})
	require.NoError(t, err)
	assert.Equal(t, before, m.Identity(), "after the first session")
	twin, err := Load(bytes.Clone(data), LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, before, twin.Identity(), "the same file loaded again")
	other, err := Load(testmodel.GGUF(t, gemmaSpec("gemma3", tensor.F32, 8)), LoadOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, before, other.Identity(), "another type")
	assert.NotEqual(t, before, loadStories260K(t).Identity(), "another model")
}

// banOdd is a constraint that bans every odd token id: it masks the
// logits in place.
type banOdd struct{}

func (banOdd) Start([]int) ConstraintMatch { return banOdd{} }
func (banOdd) Mask(logits []float32, _ int) (bool, error) {
	for i := 1; i < len(logits); i += 2 {
		logits[i] = float32(math.Inf(-1))
	}
	return false, nil
}
func (banOdd) Accept([]byte) error { return nil }
func (banOdd) Accepting() bool     { return true }

// TestSavedStateAfterAConstraint: a generation under a constraint masks
// the logits in place, so its state keeps no logits: restored, the
// session evaluates the last token again and samples, unconstrained, what
// the uninterrupted session does; and a saved session, like a restored
// one, runs no pass for a prompt equal to its tokens.
func TestSavedStateAfterAConstraint(t *testing.T) {
	m := loadStories260K(t)
	prompt := randomPrompt(9, 20, m.config.VocabSize)
	opts := SessionOptions{KVType: KVF32}
	whole, err := m.NewSession(opts)
	require.NoError(t, err)
	res, err := whole.GenerateTokens(context.Background(), prompt, GenerateOptions{MaxTokens: 6, Constraint: banOdd{}}, nil)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, whole.SaveState(&buf))
	restored, err := m.NewSession(opts)
	require.NoError(t, err)
	require.NoError(t, restored.LoadState(&buf))
	conversation := append(append([]int(nil), prompt...), res.Tokens[:len(res.Tokens)-1]...)
	want := generateLogged(t, whole, conversation, 6)
	got := generateLogged(t, restored, conversation, 6)
	requireSameRun(t, want, got, "after a constrained generation")
	assert.Equal(t, 1, got.prefill, "the masked logits were not saved: the last token runs again")

	require.NoError(t, whole.SaveState(&bytes.Buffer{}))
	conversation = append(conversation, want.tokens[:len(want.tokens)-1]...)
	assert.Zero(t, generateLogged(t, whole, conversation, 2).prefill, "a saved session keeps its logits for the same prompt")
}

// TestSavedStateAfterAShift: a session saved after a context shift (its
// keys turned to their new positions, a sliding window's ring laid out
// again) continues, restored, as the shifted session does.
func TestSavedStateAfterAShift(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    *Model
	}{
		{"llama (stories260K)", loadStories260K(t)},
		{"gemma3 sliding window 8", loadGemma(t, "gemma3", tensor.F32, 8)},
	} {
		for _, kv := range []KVType{KVF32, KVF16} {
			t.Run(tc.name+" "+kv.String(), func(t *testing.T) {
				opts := SessionOptions{KVType: kv, ContextLength: 64}
				whole, err := tc.m.NewSession(opts)
				require.NoError(t, err)
				prompt := randomPrompt(11, 40, tc.m.config.VocabSize)
				generateLogged(t, whole, prompt, 8)
				require.NoError(t, whole.Shift(4, 16))
				var buf bytes.Buffer
				require.NoError(t, whole.SaveState(&buf))
				restored, err := tc.m.NewSession(opts)
				require.NoError(t, err)
				require.NoError(t, restored.LoadState(&buf))
				next := append(append([]int(nil), whole.tokens...), randomPrompt(12, 6, tc.m.config.VocabSize)...)
				want := generateLogged(t, whole, next, 8)
				got := generateLogged(t, restored, next, 8)
				requireSameRun(t, want, got, "after a shift")
				assert.Equal(t, want.prefill, got.prefill)
			})
		}
	}
}

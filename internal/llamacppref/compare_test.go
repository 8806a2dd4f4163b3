//go:build !js

package llamacppref

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

const fakeVocab = 40

// fakeLogits are the logits of a made-up model after seq: random, but a
// function of seq alone.
func fakeLogits(seq []int) []float32 {
	h := fnv.New64a()
	for _, id := range seq {
		h.Write([]byte{byte(id), byte(id >> 8)})
	}
	rng := rand.New(rand.NewPCG(h.Sum64(), 1))
	out := make([]float32, fakeVocab)
	for i := range out {
		out[i] = float32(2 * rng.NormFloat64())
	}
	return out
}

// fakeEngine is the engine's side: fakeLogits exactly.
type fakeEngine struct{}

func (fakeEngine) Greedy(prompt []int, n int) ([]int, error) {
	seq := slices.Clone(prompt)
	for len(seq)-len(prompt) < n {
		seq = append(seq, argmax(fakeLogits(seq)))
	}
	return seq[len(prompt):], nil
}

func (fakeEngine) Logits(tokens []int) ([][]float32, error) {
	out := make([][]float32, len(tokens))
	for i := range tokens {
		out[i] = fakeLogits(tokens[:i+1])
	}
	return out, nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// fakeLlama is llama.cpp's side: fakeLogits, but a sequence of a length in
// decode (when llama.cpp decodes its last token alone) or in batch (when
// that token is part of a batch) has one token's logit shifted.
type fakeLlama struct {
	decode, batch map[int]shift // by sequence length
	jobs          int
}

// shift raises one token's logit.
type shift struct {
	token int
	by    float32
}

func (f *fakeLlama) logits(seq []int, batch bool) []float32 {
	l := fakeLogits(seq)
	shifts := f.decode
	if batch {
		shifts = f.batch
	}
	if s, ok := shifts[len(seq)]; ok {
		l[s.token] += s.by
	}
	return l
}

func (f *fakeLlama) run(jobs []Job) ([]Output, error) {
	f.jobs++
	var outs []Output
	for _, job := range jobs {
		out := Output{Architecture: "fake"}
		for _, prompt := range job.Prompts {
			var r Run
			seq := slices.Clone(prompt)
			for len(r.Tokens) < job.Tokens {
				l := f.logits(seq, len(r.Tokens) == 0 && len(prompt) > 1)
				r.Steps = append(r.Steps, topProbs(l, job.TopK))
				tok := argmax(l)
				r.Tokens = append(r.Tokens, tok)
				seq = append(seq, tok)
			}
			out.Runs = append(out.Runs, r)
		}
		outs = append(outs, out)
	}
	return outs, nil
}

func topProbs(l []float32, k int) []Prob {
	maxL := math.Inf(-1)
	for _, v := range l {
		maxL = math.Max(maxL, float64(v))
	}
	sum := 0.0
	for _, v := range l {
		sum += math.Exp(float64(v) - maxL)
	}
	var out []Prob
	for i, v := range l {
		out = append(out, Prob{Token: i, P: math.Exp(float64(v)-maxL) / sum})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].P > out[j].P })
	return out[:k]
}

// TestCheckerClassifiesDifferences runs the checker over a fake engine and
// a fake llama.cpp that differ where each case says.
func TestCheckerClassifiesDifferences(t *testing.T) {
	prompt := []int{1, 5, 9}
	ours, _ := fakeEngine{}.Greedy(prompt, DefaultTokens)
	// swap makes the runner-up llama.cpp's choice at the step of the
	// continuation whose two best tokens are nearest (from step i on), as
	// rounding could: it returns the sequence's length there and the shift.
	swap := func(i int) (int, shift) {
		best, gap, other := 0, float32(math.Inf(1)), 0
		for j := i; j < DefaultTokens; j++ {
			l := fakeLogits(append(slices.Clone(prompt), ours[:j]...))
			second := -1
			for k := range l {
				if k != ours[j] && (second < 0 || l[k] > l[second]) {
					second = k
				}
			}
			if g := l[ours[j]] - l[second]; g < gap {
				best, gap, other = j, g, second
			}
		}
		return len(prompt) + best, shift{token: other, by: gap + 0.01}
	}
	nudge := func(i int) (int, shift) { // raises the chosen token's logit: moves the probabilities, not the choice
		return len(prompt) + i, shift{token: ours[i], by: 0.05}
	}
	at := func(f func(int) (int, shift), i int) map[int]shift {
		n, s := f(i)
		return map[int]shift{n: s}
	}
	tests := []struct {
		name      string
		typ       tensor.Type
		decode    map[int]shift
		batch     map[int]shift
		wantErr   string
		want      Report // the fields compared
		wantRound int    // node runs after the first
	}{
		{name: "the same", typ: tensor.F32, want: Report{Greedy: 64, GreedyTotal: 64}},
		{name: "decoding differs from the batch", typ: tensor.F32, decode: at(nudge, 10),
			want: Report{Greedy: 64, GreedyTotal: 64, Decoded: 1}, wantRound: 1},
		{name: "decoding parts the continuations, not the batch", typ: tensor.F32, decode: at(swap, 20),
			want: Report{Greedy: 63, GreedyTotal: 64, Continued: 1, Decoded: 1}, wantRound: 2},
		{name: "rounding moves a step", typ: tensor.Q8_0, decode: at(nudge, 10), batch: at(nudge, 10),
			want: Report{Greedy: 64, GreedyTotal: 64, Rounded: 1}, wantRound: 1},
		{name: "rounding parts the continuations", typ: tensor.Q8_0, decode: at(swap, 30), batch: at(swap, 30),
			want: Report{Greedy: 63, GreedyTotal: 64, Continued: 1, Rounded: 1}, wantRound: 2},
		{name: "a model that does not round", typ: tensor.F32, decode: at(nudge, 10), batch: at(nudge, 10),
			wantErr: "probabilities differ from llama.cpp's"},
		{name: "after the prompt", typ: tensor.Q8_0, batch: at(nudge, 0), want: Report{Greedy: 64, GreedyTotal: 64, Rounded: 1}},
		{name: "beyond the rounding tolerance", typ: tensor.Q8_0, batch: map[int]shift{len(prompt): {token: ours[0], by: 3}},
			wantErr: "probabilities differ from llama.cpp's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llama := &fakeLlama{decode: tt.decode, batch: tt.batch}
			c := Case{Name: tt.name, Spec: modelgen.Spec{Type: tt.typ}, Prompts: [][]int{prompt}}.withDefaults()
			job := Job{Prompts: c.Prompts, Tokens: DefaultTokens, TopK: DefaultTopK}
			outs, err := llama.run([]Job{job})
			require.NoError(t, err)
			ch := &checker{c: c, model: fakeEngine{}, run: llama.run, job: job, report: Report{MinMargin: math.Inf(1)}}
			err = ch.check(outs[0].Runs)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			r := ch.report
			assert.Equal(t, tt.want, Report{Greedy: r.Greedy, GreedyTotal: r.GreedyTotal, Continued: r.Continued, Decoded: r.Decoded, Rounded: r.Rounded})
			assert.Equal(t, tt.wantRound, llama.jobs-1, "node runs after the first")
			assert.GreaterOrEqual(t, r.Steps, 64)
			assert.LessOrEqual(t, r.ProbDiff, c.RoundingTolerance)
		})
	}
}

// TestGreedyPartingWhereTheProbabilitiesAgreeFails: tokens that differ
// where llama.cpp's probabilities are the engine's are an error, not a
// rounding.
func TestGreedyPartingWhereTheProbabilitiesAgreeFails(t *testing.T) {
	prompt := []int{1, 2}
	c := Case{Spec: modelgen.Spec{Type: tensor.Q8_0}, Prompts: [][]int{prompt}}.withDefaults()
	llama := &fakeLlama{}
	outs, err := llama.run([]Job{{Prompts: c.Prompts, Tokens: DefaultTokens, TopK: DefaultTopK}})
	require.NoError(t, err)
	runs := outs[0].Runs
	runs[0].Tokens[5] = (runs[0].Tokens[5] + 1) % fakeVocab // a token its probabilities did not choose
	ch := &checker{c: c, model: fakeEngine{}, run: llama.run, report: Report{MinMargin: math.Inf(1)}}
	err = ch.check(runs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "greedy tokens differ from llama.cpp's at token 5, where the probabilities agree")
}

func TestPrompts(t *testing.T) {
	p := Prompts(300, 3)
	require.Len(t, p, 3)
	assert.Equal(t, []int{1}, p[0])
	assert.Len(t, p[1], 9)
	assert.Len(t, p[2], 17)
	for _, id := range p[2][1:] {
		assert.True(t, id >= 3 && id < 300, "id %d", id)
	}
	assert.Equal(t, p, Prompts(300, 3), "the same every time")
}

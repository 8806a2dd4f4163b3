//go:build !js

package llamacppref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// What a check runs unless its Case says otherwise.
const (
	// DefaultTokens are the greedy tokens generated after each prompt.
	DefaultTokens = 64
	// DefaultTopK are the most probable tokens compared at each step.
	DefaultTopK = 10
	// DefaultTolerance bounds |p - p(llama.cpp)| over the top tokens of a
	// step. Where nothing is rounded to a coarser type than float32 (F32
	// weights and cache) the engine differs from llama.cpp only in the
	// order of float32 sums, and every step must be within it: measured
	// up to 4e-6.
	DefaultTolerance = 1e-4
	// DefaultRoundingTolerance bounds the steps of a model that rounds
	// values to a coarser type: quantized weights, whose products quantize their input vector
	// (Q8_0 for Q8_0 weights), and an F16 cache. There a value within a
	// few float32 ulps of a rounding boundary (one Q8_0 step, one F16 ulp)
	// rounds one way here and the other in llama.cpp, whose float32 sums
	// run in another order; the key or value it lands in stays in the
	// cache, and the steps that attend to it differ by up to a few 1e-2
	// in a small random model, whose attention is sharp (measured up to
	// 3.5e-2). That is below half of what quantizing such a model moves
	// its probabilities (Q8_0 against F32, same weights: 7e-2 to 9e-2).
	DefaultRoundingTolerance = 5e-2
	// maxRounds bounds the continuations of one case (see Check).
	maxRounds = 8
)

// Model is the engine's side of a check: one model, loaded by the test
// from the GGUF bytes the Case describes.
type Model interface {
	// Greedy generates up to n tokens after prompt (evaluated from an
	// empty context), always the most probable (ties: the lowest id),
	// stopping before an end-of-generation token. Its continuation of a
	// prompt followed by the first k of its tokens must be the rest of
	// them, as the engine's is: a token's logits do not depend on how
	// the tokens before it were evaluated.
	Greedy(prompt []int, n int) ([]int, error)
	// Logits evaluates tokens from an empty context and returns the
	// next-token logits after each of them: (len(tokens), vocab).
	Logits(tokens []int) ([][]float32, error)
}

// Case is one random-weight model checked against llama.cpp.
type Case struct {
	Name string
	Spec modelgen.Spec
	// Prompts are token ids; nil means Prompts(Spec.VocabSize, 3).
	Prompts [][]int
	// KVType is the KV cache llama.cpp keeps (KVF32 when empty); the
	// engine's Model should keep the same.
	KVType KVType
	// Tolerance and RoundingTolerance bound the probability differences
	// (DefaultTolerance and DefaultRoundingTolerance when 0): Tolerance at
	// every step of a case that does not round (Rounds); in one that
	// does, RoundingTolerance at the steps beyond Tolerance (which the
	// report counts).
	Tolerance, RoundingTolerance float64
}

// Rounds reports whether the case's model rounds values to a type coarser
// than float32 as it runs: quantized weights (and so their products'
// input vectors), an F16 cache, or an activation that ggml's CPU backend
// looks up in an F16 table (gemma's GELU: see f16Activations).
func (c Case) Rounds() bool {
	return c.Spec.Type != tensor.F32 || c.KVType == KVF16 || f16Activations[c.Spec.Arch]
}

// f16Activations are the architectures whose feed-forward activation
// llama.cpp's CPU backend computes through an F16 table
// (ggml_table_gelu_f16: the input rounded to F16, the result an F16), as
// the engine does too. A float32 difference in the order of sums that
// moves an input across an F16 rounding boundary moves its unit by an F16
// step, about 5e-4 of it, so an F32 model of these rounds like a quantized
// one: one ulp more in gemma3's token embeddings moves its probabilities
// by up to 2e-4 (in the engine, or in llama.cpp, whose one-token decoding
// then differs from its own batches by as much).
var f16Activations = map[string]bool{"gemma2": true, "gemma3": true, "gemma4": true, "gemma3n": true}

// withDefaults fills in c's zero fields.
func (c Case) withDefaults() Case {
	if c.Prompts == nil {
		c.Prompts = Prompts(c.Spec.VocabSize, 3)
	}
	if c.KVType == "" {
		c.KVType = KVF32
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.RoundingTolerance == 0 {
		c.RoundingTolerance = DefaultRoundingTolerance
	}
	if !c.Rounds() {
		c.RoundingTolerance = c.Tolerance
	}
	return c
}

// Report is what one Case measured.
type Report struct {
	Case         string
	Architecture string // general.architecture, as llama.cpp read it
	// Steps counts the next-token distributions compared (one for each
	// token of each continuation, and one for an end of generation).
	Steps int
	// Greedy counts the tokens the engine generated that are llama.cpp's
	// after the same tokens, of GreedyTotal. Continued counts the tokens
	// where they differed on a step that rounding (or llama.cpp's
	// decoding, see Decoded) had moved, after which the check continued
	// llama.cpp from the engine's token; any other difference fails.
	Greedy, GreedyTotal, Continued int
	// ProbDiff is max |p - p(llama.cpp)| over the top tokens of every
	// step; PromptProbDiff the same after the prompts alone.
	PromptProbDiff, ProbDiff float64
	// Rounded counts the steps beyond the tolerance (see
	// DefaultRoundingTolerance).
	Rounded int
	// Decoded counts the steps that llama.cpp decoded, token by token,
	// unlike its own evaluation of the same tokens as one batch, which
	// agreed with the engine within the tolerance: its one-token kernels
	// do not always give its batch kernels' bits (seen with Q8_0 weights),
	// while the engine computes one result whether it evaluates a token
	// alone or in a block. Such a step counts in ProbDiff against the
	// batch. (A rounded step counts the nearer of the two.)
	Decoded int
	// MinMargin is the smallest gap between llama.cpp's two most probable
	// tokens, log(p1/p2), over every step: how near a tie greedy decoding
	// came.
	MinMargin float64
}

// String is the report as a row of a Markdown table: case, architecture,
// greedy tokens (those continued after a rounded step), the largest
// probability differences after the prompts and at every step, the
// rounded steps of all, the steps llama.cpp decoded unlike its batch, the
// smallest margin.
func (r Report) String() string {
	return fmt.Sprintf("| %s | %s | %d/%d (%d) | %.1e | %.1e | %d/%d | %d | %.2g |",
		r.Case, r.Architecture, r.Greedy, r.GreedyTotal, r.Continued, r.PromptProbDiff, r.ProbDiff,
		r.Rounded, r.Steps, r.Decoded, r.MinMargin)
}

// Prompts are n prompts of token ids for a vocabulary of vocab tokens,
// the same every time: BOS alone, then BOS and 8·i more ids drawn from
// the vocabulary past its control tokens (modelgen's byte tokens and
// pieces).
func Prompts(vocab, n int) [][]int {
	rng := rand.New(rand.NewPCG(uint64(vocab), 14))
	out := make([][]int, n)
	for i := range out {
		p := []int{1} // modelgen's BOS
		for range 8 * i {
			p = append(p, 3+rng.IntN(vocab-3))
		}
		out[i] = p
	}
	return out
}

// Check builds every case's model, has llama.cpp run them all (one Node.js
// process), and for each case, in a subtest, loads the model with load and
// compares, prompt by prompt, the engine's greedy continuation with
// llama.cpp's, token by token, and the probabilities of llama.cpp's top
// DefaultTopK tokens at every step (the engine evaluating llama.cpp's
// tokens) within the case's tolerances. A step beyond the tolerance is
// evaluated again by llama.cpp, its tokens up to there as one batch (see
// Report.Decoded). Where the greedy tokens differ on a step whose
// probabilities rounding (or llama.cpp's decoding) has moved, llama.cpp
// continues from the engine's token, in a further round, and the check
// goes on; where they differ on any other step the case fails. A model
// llama.cpp refuses to load fails its case. It returns the reports of the
// cases that ran.
func Check(t *testing.T, cases []Case, load func(t testing.TB, c Case, gguf []byte) Model) []Report {
	t.Helper()
	runner := Need(t)
	dir := t.TempDir()
	files := make([][]byte, len(cases))
	jobs := make([]Job, len(cases))
	for i := range cases {
		c := cases[i].withDefaults()
		cases[i] = c
		data, err := modelgen.Build(c.Spec)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.gguf", i))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files[i] = data
		jobs[i] = Job{Model: path, Prompts: c.Prompts, Tokens: DefaultTokens, TopK: DefaultTopK, KVType: c.KVType}
	}
	outs, err := runner.Run(jobs)
	if err != nil {
		t.Fatal(err)
	}
	var reports []Report
	for i, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			out := outs[i]
			if out.Error != "" {
				t.Fatalf("llama.cpp refused the model: %s", out.Error)
			}
			if len(out.Runs) != len(c.Prompts) {
				t.Fatalf("llama.cpp ran %d of %d prompts", len(out.Runs), len(c.Prompts))
			}
			ch := &checker{c: c, model: load(t, c, files[i]), run: runner.Run, job: jobs[i],
				report: Report{Case: c.Name, Architecture: out.Architecture, MinMargin: math.Inf(1)}}
			if err := ch.check(out.Runs); err != nil {
				t.Error(err)
			}
			t.Logf("%v", ch.report)
			reports = append(reports, ch.report)
		})
	}
	return reports
}

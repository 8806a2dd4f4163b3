//go:build !js

package llamacppref

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// checker compares one case's model with llama.cpp.
type checker struct {
	c      Case
	model  Model
	run    func([]Job) ([]Output, error) // Runner.Run
	job    Job                           // the case's first job: its model, cache and top-k
	report Report
}

// segment is a stretch of one prompt's continuation compared with one run
// of llama.cpp: its continuation of the prompt followed by the first
// offset tokens of the engine's.
type segment struct {
	prompt []int
	ours   []int // the engine's whole continuation of prompt
	offset int
	ref    Run
}

// prefix is what llama.cpp continued: the prompt and ours[:offset].
func (s *segment) prefix() []int {
	return append(slices.Clip(s.prompt), s.ours[:s.offset]...)
}

// outlier is a step whose probabilities differ from llama.cpp's by more
// than the tolerance.
type outlier struct {
	tokens      []int     // the tokens before the step
	logits      []float32 // the engine's after them
	diff        float64
	afterPrompt bool // the first step of a prompt
	batch       bool // llama.cpp evaluated tokens as one batch already
}

// check compares the engine's continuation of every prompt with runs,
// llama.cpp's, in rounds: each round compares segments, has llama.cpp
// evaluate the outliers again as batches, and continues llama.cpp after
// the tokens where the continuations parted on an outlier.
func (ch *checker) check(runs []Run) error {
	var segs []segment
	for p, prompt := range ch.c.Prompts {
		ours, err := ch.model.Greedy(prompt, DefaultTokens)
		if err != nil {
			return err
		}
		segs = append(segs, segment{prompt: prompt, ours: ours, ref: runs[p]})
	}
	var errs []error
	for round := 0; len(segs) > 0; round++ {
		if round == maxRounds {
			return fmt.Errorf("the continuations still part after %d rounds", maxRounds)
		}
		var outliers []outlier
		var next []segment
		for i := range segs {
			s := &segs[i]
			o, cont, err := ch.segment(s)
			outliers = append(outliers, o...)
			if err != nil {
				errs = append(errs, fmt.Errorf("prompt %v: %w", s.prompt, err))
			}
			if cont > 0 {
				next = append(next, segment{prompt: s.prompt, ours: s.ours, offset: cont})
			}
		}
		if err := ch.recheck(outliers); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return joinErrors(errs)
		}
		if err := ch.continueRuns(next); err != nil {
			return err
		}
		segs = next
	}
	return nil
}

// segment compares the probabilities at every step of s and the greedy
// tokens. It returns the steps beyond the tolerance and, when the
// continuations parted on one of them, the offset to continue llama.cpp
// from (0: none).
func (ch *checker) segment(s *segment) (outliers []outlier, cont int, err error) {
	r, ref := &ch.report, s.ref
	if len(ref.Steps) == 0 || len(ref.Steps) < len(ref.Tokens) || len(ref.Steps) > len(ref.Tokens)+1 {
		return nil, 0, fmt.Errorf("llama.cpp reported %d steps for %d tokens", len(ref.Steps), len(ref.Tokens))
	}
	prefix := s.prefix()
	seq := append(slices.Clip(prefix), ref.Tokens...)
	logits, err := ch.model.Logits(seq)
	if err != nil {
		return nil, 0, err
	}
	diffs := make([]float64, len(ref.Steps))
	for i, top := range ref.Steps {
		at := len(prefix) - 1 + i
		d, err := probDiff(logits[at], top)
		if err != nil {
			return nil, 0, fmt.Errorf("step %d: %w", s.offset+i, err)
		}
		diffs[i] = d
		r.Steps++
		if len(top) >= 2 {
			r.MinMargin = math.Min(r.MinMargin, math.Log(top[0].P/top[1].P))
		}
		afterPrompt := s.offset == 0 && i == 0
		switch {
		case d <= ch.c.Tolerance:
			ch.measured(d, afterPrompt)
		case i == 0 && len(prefix) > 1:
			// llama.cpp evaluated the prefix as one batch already.
			outliers = append(outliers, outlier{tokens: seq[:at+1], diff: d, afterPrompt: afterPrompt, batch: true})
		default:
			outliers = append(outliers, outlier{tokens: seq[:at+1], logits: logits[at], diff: d, afterPrompt: afterPrompt})
		}
	}

	ours := s.ours[s.offset:]
	n := commonPrefix(ours, ref.Tokens)
	r.Greedy += n
	if n == len(ours) && n == len(ref.Tokens) {
		r.GreedyTotal += n
		return outliers, 0, nil
	}
	// They part at token n: one has another token there, or ends.
	r.GreedyTotal += min(n+1, len(ours))
	if diffs[n] <= ch.c.Tolerance {
		why := "one continuation ends first"
		if n < len(ours) {
			why = fmt.Sprintf("llama.cpp's top probabilities there: %v", ref.Steps[n][:min(3, len(ref.Steps[n]))])
		}
		return outliers, 0, fmt.Errorf("greedy tokens differ from llama.cpp's at token %d, where the probabilities agree (%s):\n got %v\nwant %v",
			s.offset+n, why, ours, ref.Tokens)
	}
	r.Continued++
	if n == len(ours) || s.offset+n+1 >= DefaultTokens {
		return outliers, 0, nil // nothing of ours left to compare
	}
	return outliers, s.offset + n + 1, nil
}

// measured records a step's difference, d, in the report.
func (ch *checker) measured(d float64, afterPrompt bool) {
	r := &ch.report
	r.ProbDiff = math.Max(r.ProbDiff, d)
	if afterPrompt {
		r.PromptProbDiff = math.Max(r.PromptProbDiff, d)
	}
}

// recheck has llama.cpp evaluate the tokens before each outlier as one
// batch and classifies the outliers: within the tolerance of the batch
// (Report.Decoded); in a case that rounds, within the rounding tolerance
// (Report.Rounded); or an error.
func (ch *checker) recheck(outliers []outlier) error {
	var batch [][]int
	for _, o := range outliers {
		if !o.batch {
			batch = append(batch, o.tokens)
		}
	}
	var runs []Run
	if len(batch) > 0 {
		job := ch.job
		job.Prompts, job.Tokens = batch, 1
		outs, err := ch.run([]Job{job})
		if err != nil {
			return err
		}
		if out := outs[0]; out.Error != "" || len(out.Runs) != len(batch) {
			return fmt.Errorf("llama.cpp's batch evaluation failed: %s", out.Error)
		}
		runs = outs[0].Runs
	}
	r := &ch.report
	var errs []error
	for _, o := range outliers {
		d := o.diff
		if !o.batch {
			run := runs[0]
			runs = runs[1:]
			if len(run.Steps) == 0 {
				return fmt.Errorf("llama.cpp's batch evaluation of %d tokens gave no step", len(o.tokens))
			}
			db, err := probDiff(o.logits, run.Steps[0])
			if err != nil {
				return err
			}
			if db <= ch.c.Tolerance {
				r.Decoded++
				ch.measured(db, o.afterPrompt)
				continue
			}
			d = math.Min(d, db)
		}
		ch.measured(d, o.afterPrompt)
		if d > ch.c.RoundingTolerance {
			errs = append(errs, fmt.Errorf("after %d tokens %v: probabilities differ from llama.cpp's by %.2e > %.0e",
				len(o.tokens), o.tokens, d, ch.c.RoundingTolerance))
			continue
		}
		r.Rounded++
	}
	return joinErrors(errs)
}

// continueRuns has llama.cpp continue each segment's prefix, filling in
// its ref: one job for them all, each run cut to the tokens left to
// compare.
func (ch *checker) continueRuns(segs []segment) error {
	if len(segs) == 0 {
		return nil
	}
	job := ch.job
	job.Prompts, job.Tokens = nil, 0
	for i := range segs {
		job.Prompts = append(job.Prompts, segs[i].prefix())
		job.Tokens = max(job.Tokens, DefaultTokens-segs[i].offset)
	}
	outs, err := ch.run([]Job{job})
	if err != nil {
		return err
	}
	if out := outs[0]; out.Error != "" || len(out.Runs) != len(segs) {
		return fmt.Errorf("llama.cpp's continuation failed: %s", out.Error)
	}
	for i := range segs {
		ref, n := outs[0].Runs[i], DefaultTokens-segs[i].offset
		ref.Tokens = ref.Tokens[:min(n, len(ref.Tokens))]
		ref.Steps = ref.Steps[:min(n, len(ref.Steps))]
		segs[i].ref = ref
	}
	return nil
}

// probDiff is max |p - p(llama.cpp)| over llama.cpp's top tokens, p the
// softmax of logits (in float64).
func probDiff(logits []float32, top []Prob) (float64, error) {
	maxL := math.Inf(-1)
	for _, l := range logits {
		maxL = math.Max(maxL, float64(l))
	}
	sum := 0.0
	for _, l := range logits {
		sum += math.Exp(float64(l) - maxL)
	}
	worst := 0.0
	for _, p := range top {
		if p.Token < 0 || p.Token >= len(logits) {
			return 0, fmt.Errorf("llama.cpp's token %d is outside the vocabulary of %d", p.Token, len(logits))
		}
		ours := math.Exp(float64(logits[p.Token])-maxL) / sum
		worst = math.Max(worst, math.Abs(ours-p.P))
	}
	return worst, nil
}

func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// joinErrors is errors.Join, keeping the first few.
func joinErrors(errs []error) error {
	const most = 4
	if len(errs) > most {
		errs = append(errs[:most], fmt.Errorf("and %d more", len(errs)-most))
	}
	return errors.Join(errs...)
}

package sampling

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// Params configures a Sampler; the zero value is greedy decoding with no
// penalties. It is a flat struct so that CLI flags, JS options and HTTP
// request fields map onto it one to one; Validate checks it once, at that
// boundary.
type Params struct {
	// Temperature divides the logits before softmax; 0 means greedy (argmax,
	// ties → lowest id). Must be finite and >= 0.
	Temperature float32
	// TopK keeps the K most likely tokens; 0 = off; < 0 is an error.
	TopK int
	// TopP is nucleus sampling: keep the smallest set of most likely tokens
	// whose cumulative probability is >= TopP; 0 or 1 = off; must be in [0, 1].
	TopP float32
	// MinP keeps tokens with p >= MinP * p_max; 0 = off; must be in [0, 1].
	MinP float32
	// RepeatPenalty is llama.cpp's: for a token in the window a logit > 0 is
	// divided by it and any other logit multiplied by it; 0 or 1 = off; must be
	// finite and >= 0.
	RepeatPenalty float32
	// PresencePenalty is OpenAI's: subtracted once from the logit of every token
	// that occurs in the window; must be in [-2, 2].
	PresencePenalty float32
	// FrequencyPenalty is OpenAI's: count*FrequencyPenalty is subtracted from
	// the logit of a token that occurs count times in the window; must be in [-2, 2].
	FrequencyPenalty float32
	// PenaltyLastN is the window of the three penalties: the most recent
	// accepted tokens; 0 = 64; -1 = every token accepted since Reset; < -1 is an error.
	PenaltyLastN int
	// LogitBias is added to a token's logit before anything else (OpenAI's
	// logit_bias). Ids must be in [0, vocabSize); values finite or -Inf, which
	// bans the token.
	LogitBias map[int]float32
	// Seed seeds the PRNG; any value, 0 included, is a valid seed.
	Seed uint64
}

// DefaultPenaltyLastN is the penalty window used when Params.PenaltyLastN is 0
// (llama.cpp's default).
const DefaultPenaltyLastN = 64

// MaxVocabSize bounds the vocabulary New accepts, because its buffers are
// sized by it (44 bytes a token at most, so 92 MB here): 8 times the largest
// vocabulary in use today (262144).
const MaxVocabSize = 1 << 21

// ParamError is an invalid field of Params: its name in snake_case (as the
// HTTP API and the CLI spell it: "top_p", "logit_bias.7", the entry of
// token id 7 in the logit_bias object) and what is wrong
// with its value. It matches ErrInvalidParams with errors.Is.
type ParamError struct {
	Field   string
	Problem string // e.g. "must be in [0, 1] (0 or 1 = off), got 1.5"
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrInvalidParams, e.Field, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidParams) true.
func (e *ParamError) Is(target error) bool { return target == ErrInvalidParams }

// Validate reports whether p is usable with a vocabulary of vocabSize tokens.
// The error is a *ParamError naming the first offending field (in the order
// of the struct); for logit_bias it names the lowest offending token id. NaN
// is never valid.
func (p Params) Validate(vocabSize int) error {
	invalid := func(field string, v any, rule string) error {
		return &ParamError{Field: field, Problem: fmt.Sprintf("%s, got %v", rule, v)}
	}
	if vocabSize <= 0 || vocabSize > MaxVocabSize {
		return invalid("vocab_size", vocabSize, fmt.Sprintf("must be in [1, %d]", MaxVocabSize))
	}
	if !isFinite(p.Temperature) || p.Temperature < 0 {
		return invalid("temperature", p.Temperature, "must be finite and >= 0")
	}
	if p.TopK < 0 {
		return invalid("top_k", p.TopK, "must be >= 0 (0 = off)")
	}
	if !inRange(p.TopP, 0, 1) {
		return invalid("top_p", p.TopP, "must be in [0, 1] (0 or 1 = off)")
	}
	if !inRange(p.MinP, 0, 1) {
		return invalid("min_p", p.MinP, "must be in [0, 1] (0 = off)")
	}
	if !isFinite(p.RepeatPenalty) || p.RepeatPenalty < 0 {
		return invalid("repeat_penalty", p.RepeatPenalty, "must be finite and >= 0 (0 or 1 = off)")
	}
	if !inRange(p.PresencePenalty, -2, 2) {
		return invalid("presence_penalty", p.PresencePenalty, "must be in [-2, 2]")
	}
	if !inRange(p.FrequencyPenalty, -2, 2) {
		return invalid("frequency_penalty", p.FrequencyPenalty, "must be in [-2, 2]")
	}
	if p.PenaltyLastN < -1 {
		return invalid("penalty_last_n", p.PenaltyLastN, "must be >= -1 (0 = 64, -1 = all)")
	}
	// Sorted ids make the reported offender the same on every run, whatever
	// order the map iterates in.
	if len(p.LogitBias) == 0 {
		return nil // (sorting no keys would still allocate)
	}
	for _, id := range slices.Sorted(maps.Keys(p.LogitBias)) {
		v := p.LogitBias[id]
		field := fmt.Sprintf("logit_bias.%d", id)
		if id < 0 || id >= vocabSize {
			return &ParamError{Field: field, Problem: fmt.Sprintf("names a token id outside [0, %d)", vocabSize)}
		}
		if !isFinite(v) && !math.IsInf(float64(v), -1) {
			return invalid(field, v, "must be finite or -Inf")
		}
	}
	return nil
}

// isFinite reports whether x is neither NaN nor ±Inf.
func isFinite(x float32) bool {
	return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
}

// inRange reports whether lo <= x <= hi; NaN is in no range.
func inRange(x, lo, hi float32) bool {
	return x >= lo && x <= hi
}

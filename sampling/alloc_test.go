package sampling

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/race"
)

const benchVocab = 32000

// benchLogits returns a reproducible logit vector shaped like a language
// model's: a few strong candidates over a broad tail.
func benchLogits() []float32 {
	rng := rand.New(rand.NewPCG(8, 8))
	logits := make([]float32, benchVocab)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 2)
	}
	for range 20 {
		logits[rng.IntN(benchVocab)] += 8
	}
	return logits
}

// chainConfigs covers every path through the chain.
var chainConfigs = []struct {
	name string
	p    Params
}{
	{"greedy", Params{}},
	{"greedy with bias and penalties", Params{RepeatPenalty: 1.1, PresencePenalty: 0.5, FrequencyPenalty: 0.5, LogitBias: map[int]float32{5: -inf32, 9: 2}}},
	{"temperature only", Params{Temperature: 0.8, Seed: 1}},
	{"top_k 40", Params{Temperature: 0.8, TopK: 40, Seed: 1}},
	{"top_k 5000 (sorted)", Params{Temperature: 0.8, TopK: 5000, Seed: 1}},
	{"top_p 0.9", Params{Temperature: 0.8, TopP: 0.9, Seed: 1}},
	{"min_p 0.05", Params{Temperature: 0.8, MinP: 0.05, Seed: 1}},
	{"every stage", Params{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1,
		PresencePenalty: 0.5, FrequencyPenalty: 0.5, PenaltyLastN: 64, LogitBias: map[int]float32{5: -inf32, 9: 2}, Seed: 1}},
	{"every stage, whole history", Params{Temperature: 1.2, TopK: 2000, TopP: 0.95, MinP: 0.01, RepeatPenalty: 1.3,
		PresencePenalty: -0.5, FrequencyPenalty: 1, PenaltyLastN: -1, LogitBias: map[int]float32{1: 1}, Seed: 2}},
}

func TestSampleAllocatesNothing(t *testing.T) {
	race.SkipAllocationCount(t)
	logits := benchLogits()
	for _, c := range chainConfigs {
		t.Run(c.name, func(t *testing.T) {
			s := mustNew(t, c.p, benchVocab)
			for i := range 200 {
				s.Accept(i * 37 % benchVocab)
			}
			var tr Trace
			assert.Zero(t, testing.AllocsPerRun(5, func() { s.Sample(logits) }), "Sample")
			assert.Zero(t, testing.AllocsPerRun(5, func() { s.SampleTrace(logits, &tr) }), "SampleTrace")
			require.Equal(t, TraceLen, tr.N)
		})
	}
}

func BenchmarkSample(b *testing.B) {
	logits := benchLogits()
	for _, c := range chainConfigs {
		b.Run(c.name, func(b *testing.B) {
			s := mustNew(b, c.p, benchVocab)
			for i := range 64 {
				s.Accept(i * 37 % benchVocab)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits)
			}
		})
	}
}

func BenchmarkSampleTrace(b *testing.B) {
	logits := benchLogits()
	s := mustNew(b, chainConfigs[7].p, benchVocab)
	var tr Trace
	b.ReportAllocs()
	for b.Loop() {
		s.SampleTrace(logits, &tr)
	}
}

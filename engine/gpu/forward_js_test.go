//go:build js

package gpu_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/models"
)

// The whole forward pass on the GPU against the CPU's, on random-weight
// files: teacher-forced top-1 agreement over forcedPositions positions,
// counted where the CPU's top two logits are more than marginTolerance
// apart (a GPU sums in another order, so nearer ties may flip), and greedy
// generations from a prompt (the prompt evaluated in blocks) on 6
// prompt/file pairs. SwiftShader runs shaders on the CPU (a token takes
// 30–300 ms there), so make test gives the six greedy pairs to two cases
// (llama in Q4_K, gemma3) and one pair to each other, and the storage
// types one layer; make test-long (WASMLM_LONG=1) runs every case whole.
const (
	forcedPositions = 256
	marginTolerance = 1e-3 // relative to the largest |logit|
	greedyTokens    = 32
)

// parityCase is one file: an architecture in one storage type.
type parityCase struct {
	arch      string
	typ       tensor.Type
	family    modelgen.Family
	separated bool // an output matrix of its own (olmo2's files)
	layers    int  // 0: 2
	pairs     int  // greedy prompt/file pairs: 0 means 6
}

func (c parityCase) String() string { return fmt.Sprintf("%s-%v", c.arch, c.typ) }

// shape is small enough for SwiftShader, which runs shaders on the CPU
// (a token of the llama case takes about 25 ms there), with grouped-query
// attention, two layers and a vocabulary larger than a workgroup; the
// K-quants' rows are 256 values long at least.
func (c parityCase) shape() modelgen.Shape {
	s := modelgen.Shape{Dim: 128, HiddenDim: 256, Layers: 2, Heads: 4, KVHeads: 2, VocabSize: 512, ContextLength: 512}
	switch c.typ {
	case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.Q2_K, tensor.Q3_K:
		s.Dim = 256
	}
	if c.layers != 0 {
		s.Layers = c.layers
	}
	return s
}

func parityModel(t *testing.T, c parityCase, seed uint64) *engine.Model {
	t.Helper()
	data := testmodel.GGUF(t, modelgen.Spec{Arch: c.arch, Shape: c.shape(), Family: c.family, Type: c.typ, Seed: seed, SeparateOutput: c.separated})
	m, err := engine.Load(data, engine.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sessions makes a GPU session and a CPU session of the same file (two
// loads: the CPU's first session may reorder its weights in place).
func sessions(t *testing.T, h gpu.Host, c parityCase, seed uint64) (onGPU, onCPU *engine.Session) {
	t.Helper()
	m := parityModel(t, c, seed)
	dev, err := gpu.NewDevice(h, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	onGPU, err = m.NewSession(engine.SessionOptions{Device: dev, KVType: engine.KVF32})
	if err != nil {
		t.Fatal(err)
	}
	onCPU, err = parityModel(t, c, seed).NewSession(engine.SessionOptions{KVType: engine.KVF32})
	if err != nil {
		t.Fatal(err)
	}
	return onGPU, onCPU
}

// agreement is what teacher forcing measured.
type agreement struct {
	counted, agreed, raw int
	maxDiff, maxLogit    float64
}

// teacherForced feeds the same tokens to both: the GPU evaluates them as
// a prompt, in blocks, scoring every position (Session.Score: the tiled
// kernels), the CPU token by token (Forward: the reference).
func teacherForced(t *testing.T, onGPU, onCPU *engine.Session, vocab int, seed uint64) agreement {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	tokens := make([]int, forcedPositions)
	for i := range tokens {
		tokens[i] = r.IntN(vocab)
	}
	var a agreement
	err := onGPU.Score(tokens, 0, func(pos int, gpuLogits []float32) error {
		if err := onCPU.Forward(tokens[pos], pos, true); err != nil {
			return err
		}
		cpu := onCPU.Logits()
		first, second := top2(cpu)
		g, _ := top2(gpuLogits)
		for i := range cpu {
			a.maxDiff = max(a.maxDiff, math.Abs(float64(cpu[i]-gpuLogits[i])))
			a.maxLogit = max(a.maxLogit, math.Abs(float64(cpu[i])))
		}
		if g == first {
			a.raw++
		}
		if float64(cpu[first]-cpu[second]) > marginTolerance*a.maxLogit {
			a.counted++
			if g == first {
				a.agreed++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func top2(x []float32) (first, second int) {
	first, second = 0, -1
	for i := 1; i < len(x); i++ {
		switch {
		case x[i] > x[first]:
			first, second = i, first
		case second < 0 || x[i] > x[second]:
			second = i
		}
	}
	return first, second
}

func greedy(t *testing.T, s *engine.Session, prompt []int) []int {
	t.Helper()
	res, err := s.GenerateTokens(context.Background(), prompt, engine.GenerateOptions{MaxTokens: greedyTokens}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tokens
}

func checkParity(t *testing.T, h gpu.Host, c parityCase) {
	onGPU, onCPU := sessions(t, h, c, 1)
	a := teacherForced(t, onGPU, onCPU, c.shape().VocabSize, 2)
	t.Logf("%v: top-1 %d/%d where the CPU's margin > %g·max|logit| (raw %d/%d); largest logit difference %.3g (largest |logit| %.3g)",
		c, a.agreed, a.counted, marginTolerance, a.raw, forcedPositions, a.maxDiff, a.maxLogit)
	if a.counted == 0 || float64(a.agreed) < 0.99*float64(a.counted) {
		t.Errorf("%v: top-1 agreement %d/%d, below 99%%", c, a.agreed, a.counted)
	}
	same := 0
	const prompts = 3 // per file
	pairs := 6
	if c.pairs != 0 {
		pairs = c.pairs
	}
	for p := range pairs {
		if p%prompts == 0 {
			onGPU, onCPU = sessions(t, h, c, uint64(10+p))
		}
		r := rand.New(rand.NewPCG(uint64(p), 3))
		prompt := make([]int, 5+7*p)
		for i := range prompt {
			prompt[i] = r.IntN(c.shape().VocabSize)
		}
		g, want := greedy(t, onGPU, prompt), greedy(t, onCPU, prompt)
		if fmt.Sprint(g) == fmt.Sprint(want) {
			same++
		} else {
			t.Logf("%v pair %d: GPU %v\n CPU %v", c, p, g, want)
		}
	}
	t.Logf("%v: greedy %d tokens identical on %d of %d prompt/file pairs", c, greedyTokens, same, pairs)
	if want := pairs - pairs/6; same < want {
		t.Errorf("%v: greedy tokens identical on %d of %d pairs, want at least %d", c, same, pairs, want)
	}
}

// TestForwardMatchesCPU holds every storage type to the CPU on the llama
// family, and every family to it in one quantized type.
func TestForwardMatchesCPU(t *testing.T) {
	h := testHost(t)
	long := os.Getenv("WASMLM_LONG") != ""
	var cases []parityCase
	for _, typ := range gpu.Types() {
		c := parityCase{arch: "llama", typ: typ}
		if !long {
			c.layers = 1
			if typ != tensor.Q4_K {
				c.pairs = 1
			}
		}
		cases = append(cases, c)
	}
	for _, arch := range deviceFamilies[1:] { // llama's are above
		c := parityCase{arch: arch, typ: tensor.Q8_0}
		switch arch {
		case "gemma2", "gemma3":
			c.family.SlidingWindow = 48 // within the positions teacher forcing reaches
		case "olmo2":
			c.separated = true
		case "granite": // Granite-3's multipliers
			c.family = modelgen.Family{EmbeddingScale: 12, AttentionScale: 0.125, ResidualScale: 0.22, LogitScale: 8}
		}
		if !long && arch != "gemma3" {
			c.pairs = 1
		}
		cases = append(cases, c)
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) { checkParity(t, h, c) })
	}
}

// TestEmbeddingsMatchCPU pools a decoder's final states computed on the
// GPU (read back row by row) and on the CPU: cosine ≥ 0.9999.
func TestEmbeddingsMatchCPU(t *testing.T) {
	h := testHost(t)
	texts := []string{"Once upon a time", "a text long enough to take two prompt blocks of the GPU's, with words, commas, digits 0123456789 and more words after them"}
	for _, typ := range []tensor.Type{tensor.F32, tensor.Q8_0} {
		c := parityCase{arch: "llama", typ: typ}
		load := func() *engine.Model {
			data := testmodel.GGUF(t, modelgen.Spec{Arch: c.arch, Shape: c.shape(), Type: c.typ, Seed: 5})
			data, err := modelgen.SetKV(data, "llama.pooling_type", gguf.ValueOf(uint32(1)))
			if err != nil {
				t.Fatal(err)
			}
			m, err := engine.Load(data, engine.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		m := load()
		dev, err := gpu.NewDevice(h, m)
		if err != nil {
			t.Fatal(err)
		}
		onGPU, err := m.NewSession(engine.SessionOptions{Device: dev})
		if err != nil {
			t.Fatal(err)
		}
		onCPU, err := load().NewSession(engine.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		g, err := onGPU.Embed(context.Background(), texts, engine.EmbedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := onCPU.Embed(context.Background(), texts, engine.EmbedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range texts {
			cos := testmodel.Cosine(g[i].Vector, want[i].Vector)
			t.Logf("%v text %d (%d tokens): cosine %.7f", c, i, want[i].Tokens, cos)
			if cos < 0.9999 {
				t.Errorf("%v text %d: cosine %.7f < 0.9999", c, i, cos)
			}
		}
		onGPU.Close()
		dev.Close()
	}
}

// TestDefaultModelOnGPU: the default model (stories260K, whose
// feed-forward rows are 172 values: not whole chunks of the float kernels'
// 8, so uploaded padded) and its llama2.c checkpoint give the CPU's greedy
// tokens on the GPU.
func TestDefaultModelOnGPU(t *testing.T) {
	h := testHost(t)
	checkpoint, tok := testmodel.Stories260K()
	for name, load := range map[string]func() (*engine.Model, error){
		"models.Default (GGUF)": func() (*engine.Model, error) { return engine.Load(models.Default(), engine.LoadOptions{}) },
		"stories260K.bin": func() (*engine.Model, error) {
			return engine.Load(slices.Clone(checkpoint), engine.LoadOptions{Tokenizer: tok})
		},
	} {
		onGPU, onCPU := twoSessions(t, h, load)
		prompt, err := onCPU.Model().TextPrompt("Once upon a time", false)
		if err != nil {
			t.Fatal(err)
		}
		g, want := greedy(t, onGPU, prompt.Tokens), greedy(t, onCPU, prompt.Tokens)
		if !slices.Equal(g, want) {
			t.Errorf("%s: GPU %v\n CPU %v", name, g, want)
		}
	}
}

// twoSessions is a GPU session and a CPU session of two loads of a model.
func twoSessions(t *testing.T, h gpu.Host, load func() (*engine.Model, error)) (onGPU, onCPU *engine.Session) {
	t.Helper()
	m, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if err := gpu.Supports(m, h.Adapter()); err != nil {
		t.Fatal(err)
	}
	dev, err := gpu.NewDevice(h, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	if onGPU, err = m.NewSession(engine.SessionOptions{Device: dev}); err != nil {
		t.Fatal(err)
	}
	m2, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if onCPU, err = m2.NewSession(engine.SessionOptions{}); err != nil {
		t.Fatal(err)
	}
	return onGPU, onCPU
}

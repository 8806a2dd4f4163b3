package engine

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/engine/vocab"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// naiveModel is a direct float64 transcription of the llama / qwen2 /
// qwen3 architectures, written from the papers' formulas rather than from the
// engine's code, and reading its weights by name from the GGUF file and its
// hyper-parameters from the spec (never from the engine's Model), so it is an
// independent reference for the engine's loader and forward pass.
type naiveModel struct {
	f    *gguf.File
	sp   modelgen.Spec
	keys [][][]float64 // (layer, pos, kvDim)
	vals [][][]float64
}

func (n *naiveModel) tensor(name string) (*tensor.Matrix, bool) {
	ti, ok := n.f.Tensor(name)
	if !ok {
		return nil, false
	}
	rows := 1
	if len(ti.Dims) == 2 {
		rows = int(ti.Dims[1])
	}
	m, err := tensor.NewMatrix(ti.Type, rows, int(ti.Dims[0]), ti.Data)
	if err != nil {
		panic(err)
	}
	return m, true
}

func (n *naiveModel) vector(name string) []float64 {
	m, ok := n.tensor(name)
	if !ok {
		return nil
	}
	row := make([]float32, m.Cols)
	m.Row(row, 0)
	out := make([]float64, len(row))
	for i, v := range row {
		out[i] = float64(v)
	}
	return out
}

func (n *naiveModel) matVec(name string, x []float64) []float64 {
	mat, ok := n.tensor(name)
	if !ok && name == "output.weight" {
		mat, _ = n.tensor("token_embd.weight") // tied embeddings
	}
	row := make([]float32, mat.Cols)
	out := make([]float64, mat.Rows)
	for r := range out {
		mat.Row(row, r)
		for c, w := range row {
			out[r] += float64(w) * x[c]
		}
	}
	return out
}

func (n *naiveModel) rms(x []float64, weight string) []float64 {
	return n.rmsWith(x, n.vector(weight))
}

// rmsWith is RMSNorm of x with weights w.
func (n *naiveModel) rmsWith(x, w []float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+float64(n.sp.NormEps))
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = w[i] * v * s
	}
	return out
}

// headNorm applies RMSNorm with weights name to each head of v (qwen3's
// q and k norms: one set of weights for every head).
func (n *naiveModel) headNorm(v []float64, name string) {
	w := n.vector(name)
	for h := 0; h < len(v); h += len(w) {
		copy(v[h:h+len(w)], n.rmsWith(v[h:h+len(w)], w))
	}
}

// rope rotates each head of v by position pos: llama (and smollm3,
// granite) rotates adjacent pairs (GPT-J style; GGUF conversion permutes q
// and k for it), qwen2, qwen3, phi3 and olmo2 the first half of the
// rotated dimensions with the second (GPT-NeoX style). Only the first
// ropeDims dimensions of a head rotate (phi3's partial rotary), at
// frequencies theta^(-2i/ropeDims) divided by the factors (rope_freqs, or
// phi3's LongRoPE factors), and the rotated values are multiplied by
// phi3's attention factor.
func (n *naiveModel) rope(v []float64, pos int) {
	c := n.sp
	hd, dims := c.HeadSize(), n.ropeDims()
	scale := 1.0
	if n.sp.RopeLinearScale > 0 {
		scale = float64(n.sp.RopeLinearScale)
	}
	factors, attn := n.ropeFactors()
	for h := 0; h < len(v); h += hd {
		for i := 0; i < dims/2; i++ {
			freq := math.Pow(float64(c.RopeTheta), -float64(2*i)/float64(dims))
			if factors != nil {
				freq /= float64(factors[i])
			}
			angle := float64(pos) / scale * freq
			a, b := h+2*i, h+2*i+1
			if n.neox() {
				a, b = h+i, h+i+dims/2
			}
			x0, x1 := v[a], v[b]
			v[a] = attn * (x0*math.Cos(angle) - x1*math.Sin(angle))
			v[b] = attn * (x0*math.Sin(angle) + x1*math.Cos(angle))
		}
	}
}

func add(x, y []float64) {
	for i := range y {
		x[i] += y[i]
	}
}

// attend adds to out Σ_t softmax(scores)_t·v_t, v_t being vals[t] from
// offset on (a kv head's values), in float64.
func (n *naiveModel) attend(out, scores []float64, vals [][]float64, offset int) {
	maxS := math.Inf(-1)
	for _, v := range scores {
		maxS = math.Max(maxS, v)
	}
	sum := 0.0
	for t := range scores {
		scores[t] = math.Exp(scores[t] - maxS)
		sum += scores[t]
	}
	for t := range scores {
		for i := range out {
			out[i] += scores[t] / sum * vals[t][offset+i]
		}
	}
}

// embed returns token's embedding row in float64 and the position it
// goes to, making the caches on the first step.
func (n *naiveModel) embed(token int) (x []float64, pos int) {
	if n.keys == nil {
		n.keys = make([][][]float64, n.sp.Layers)
		n.vals = make([][][]float64, n.sp.Layers)
	}
	emb, _ := n.tensor("token_embd.weight")
	row := make([]float32, n.sp.Dim)
	emb.Row(row, token)
	x = make([]float64, n.sp.Dim)
	for i, v := range row {
		x[i] = float64(v)
	}
	return x, len(n.keys[0])
}

// step runs token at the next position and returns the logits.
func (n *naiveModel) step(token int) []float64 {
	c := n.sp
	x, pos := n.embed(token)
	n.scaleBy(x, float64(n.sp.EmbeddingScale))
	hd := c.HeadSize() // key_length when the file says, else dim/heads
	for l := range c.Layers {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		h := n.preNorm(x, name("attn_norm.weight"))
		q, k, v := n.qkv(l, h)
		switch n.sp.Arch {
		case "qwen2", "qwen2moe":
			add(q, n.vector(name("attn_q.bias")))
			add(k, n.vector(name("attn_k.bias")))
			add(v, n.vector(name("attn_v.bias")))
		case "qwen3", "qwen3moe":
			n.headNorm(q, name("attn_q_norm.weight"))
			n.headNorm(k, name("attn_k_norm.weight"))
		case "olmo2": // all the queries, the whole key
			q = n.rms(q, name("attn_q_norm.weight"))
			k = n.rms(k, name("attn_k_norm.weight"))
		}
		if n.rotates(l) {
			n.rope(q, pos)
			n.rope(k, pos)
		}
		n.keys[l] = append(n.keys[l], k)
		n.vals[l] = append(n.vals[l], v)
		att := make([]float64, c.Heads*hd)
		for head := range c.Heads {
			kvh := head * c.KVHeads / c.Heads // grouped-query attention
			scores := make([]float64, pos+1)
			for t := range scores {
				for i := range hd {
					scores[t] += q[head*hd+i] * n.keys[l][t][kvh*hd+i]
				}
				scores[t] *= n.attentionScale()
			}
			n.attend(att[head*hd:(head+1)*hd], scores, n.vals[l], kvh*hd)
		}
		add(x, n.sublayerOut(n.matVec(name("attn_output.weight"), att), name("post_attention_norm.weight")))
		h = n.preNorm(x, name("ffn_norm.weight"))
		if n.sp.Experts > 0 {
			add(x, n.moe(l, h))
			continue
		}
		gate, up := n.gateUp(l, h)
		for i, g := range gate {
			gate[i] = g / (1 + math.Exp(-g)) * up[i]
		}
		add(x, n.sublayerOut(n.matVec(name("ffn_down.weight"), gate), name("post_ffw_norm.weight")))
	}
	logits := n.matVec("output.weight", n.rms(x, "output_norm.weight"))
	if n.sp.LogitScale != 0 {
		n.scaleBy(logits, 1/float64(n.sp.LogitScale))
	}
	return logits
}

// referenceCase is a model the float64 reference checks the engine on.
type referenceCase struct {
	name string
	spec modelgen.Spec
}

var tinyShape = Config{
	Dim: 64, HiddenDim: 96, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 300, ContextLength: 32,
	RopeTheta: 10000, RopeScale: 1, NormEps: 1e-5,
}

// TestArchitecturesMatchNaiveReference builds random models of each
// supported family with the GGUF writer and checks the engine's logits at
// every position against the float64 reference.
func TestArchitecturesMatchNaiveReference(t *testing.T) {
	factors := make([]float32, tinyShape.HeadDim()/2)
	for i := range factors {
		factors[i] = 1 + float32(i)
	}
	qwenShape := tinyShape
	qwenShape.RopeTheta = 1000000
	llama, qwen2 := specOf("llama", tinyShape, 7, 0.1), specOf("qwen2", qwenShape, 7, 0.1)
	separate, linear, withFactors := llama, llama, llama
	separate.SeparateOutput = true
	linear.RopeLinearScale = 4
	withFactors.RopeFreqFactors = factors
	qwen2.SeparateOutput = true
	qwen3, qwen3Tied := specOf("qwen3", qwenShape, 7, 0.1), specOf("qwen3", qwenShape, 8, 0.1)
	qwen3.HeadDim, qwen3.SeparateOutput = 16, true // 8 heads of 16 over a 64-wide stream: queries 128 wide, as Qwen3's are wider than dim
	qwen3Tied.HeadDim = 32
	llamaWide := llama
	llamaWide.HeadDim = 4 // key_length narrower than dim/heads: any llama-family file may say it
	tests := []referenceCase{
		{"llama GQA tied output", llama},
		{"llama separate output", separate},
		{"llama linear rope scaling", linear},
		{"llama rope frequency factors", withFactors},
		{"qwen2 biases and NeoX rope", qwen2},
		{"qwen3 q/k norms, wide heads", qwen3},
		{"qwen3 wider heads, tied output", qwen3Tied},
		{"llama with key_length", llamaWide},
	}
	tests = append(tests, familyReferenceCases()...)
	tests = append(tests, moeReferenceCases()...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := testmodel.GGUF(t, tt.spec)
			m, err := Load(data, LoadOptions{})
			require.NoError(t, err)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			assert.Equal(t, tt.spec.Arch, m.Architecture())
			assert.Equal(t, tt.spec.SeparateOutput, m.weights.Output != m.weights.TokenEmbedding)
			ref := &naiveModel{f: f, sp: tt.spec}
			s := newSession(t, m)
			for pos, tok := range []int{1, 270, 5, 299, 42, 42, 100, 3, 260, 7, 8, 9} {
				want := ref.step(tok)
				require.NoError(t, s.forward(tok, pos, true))
				for i, w := range want {
					require.InDelta(t, w, s.logits[i], 1e-4*math.Max(1, math.Abs(w)), "pos %d logit %d", pos, i)
				}
			}
		})
	}
}

// TestGGUFModelErrors: unsupported architectures, tensor types and missing
// or malformed tensors are errors that name what is wrong.
func TestGGUFModelErrors(t *testing.T) {
	good := testmodel.GGUF(t, specOf("llama", tinyShape, 1, 0.1))
	f, err := gguf.Parse(good)
	require.NoError(t, err)

	// rebuild copies good's metadata (but dropKey) and tensors, letting edit
	// change the tensors.
	rebuildWithout := func(dropKey string, edit func(b *gguf.Builder, name string, ti gguf.TensorInfo) bool) []byte {
		b := gguf.NewBuilder()
		for _, kv := range f.KVs() {
			if kv.Key != dropKey {
				b.Set(kv.Key, kv.Value)
			}
		}
		for _, ti := range f.Tensors() {
			if edit(b, ti.Name, ti) {
				b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
			}
		}
		data, err := b.Bytes()
		require.NoError(t, err)
		return data
	}
	rebuild := func(edit func(b *gguf.Builder, name string, ti gguf.TensorInfo) bool) []byte {
		return rebuildWithout("", edit)
	}
	keep := func(*gguf.Builder, string, gguf.TensorInfo) bool { return true }
	withKV := func(key string, v gguf.Value) []byte {
		return rebuild(func(b *gguf.Builder, name string, ti gguf.TensorInfo) bool {
			b.Set(key, v)
			return true
		})
	}
	truncated := good[:len(good)-100]
	tests := []struct {
		name string
		data []byte
		want string
		kind error // what errors.Is finds besides ErrFormat or ErrUnsupported
		code Code
	}{
		{"unsupported architecture", withKV("general.architecture", gguf.ValueOf("mamba")), `architecture "mamba"`, ErrUnsupported, CodeUnsupportedModel},
		{"missing tensor", rebuild(func(_ *gguf.Builder, name string, _ gguf.TensorInfo) bool { return name != "blk.1.ffn_up.weight" }),
			"missing tensor blk.1.ffn_up.weight", ErrFormat, CodeInvalidModel},
		{"unsupported tensor type", rebuild(func(b *gguf.Builder, name string, ti gguf.TensorInfo) bool {
			if name != "blk.0.attn_q.weight" {
				return true
			}
			b.AddTensor(name, 16, []uint64{256, 16}, make([]byte, 16*66)) // IQ2_XXS
			return false
		}), "tensor blk.0.attn_q.weight has type IQ2_XXS", ErrUnsupported, CodeUnsupportedModel},
		{"wrong shape", rebuild(func(b *gguf.Builder, name string, ti gguf.TensorInfo) bool {
			if name != "blk.0.attn_k.weight" {
				return true
			}
			b.AddTensor(name, tensor.F32, []uint64{64, 32}, make([]byte, 64*32*4))
			return false
		}), "tensor blk.0.attn_k.weight is 32×64, want 16×64", ErrFormat, CodeInvalidModel},
		{"some of the q/k/v biases", rebuild(func(b *gguf.Builder, name string, ti gguf.TensorInfo) bool {
			if name == "blk.0.attn_q.weight" {
				b.AddTensor("blk.0.attn_q.bias", tensor.F32, []uint64{64}, make([]byte, 64*4))
			}
			return true
		}), "layer 0 has 1 of its 3 tensors of the qkv bias", ErrFormat, CodeInvalidModel},
		{"missing hyper-parameter", rebuildWithout("llama.block_count", keep), "llama.block_count", gguf.ErrNotFound, CodeInvalidModel},
		{"a part of a split model", firstPart(t, good), "this file is part 1 of 2 of a split model", ErrFormat, CodeInvalidModel},
		{"hyper-parameter of the wrong type", withKV("llama.block_count", gguf.ValueOf("two")), "llama.block_count", gguf.ErrType, CodeInvalidModel},
		{"linear scaling without factor", withKV("llama.rope.scaling.type", gguf.ValueOf("linear")), "llama.rope.scaling.factor", gguf.ErrNotFound, CodeInvalidModel},
		{"longrope scaling", withKV("llama.rope.scaling.type", gguf.ValueOf("longrope")), `rope scaling "longrope"`, ErrUnsupported, CodeUnsupportedModel},
		{"mixture of experts", withKV("llama.expert_count", gguf.ValueOf(uint32(8))), "mixture-of-experts", ErrUnsupported, CodeUnsupportedModel},
		{"values narrower than keys", withKV("llama.attention.value_length", gguf.ValueOf(uint32(4))), "values of 4 per head, keys of 8", ErrUnsupported, CodeUnsupportedModel},
		{"key_length the tensors do not have", withKV("llama.attention.key_length", gguf.ValueOf(uint32(16))),
			"tensor blk.0.attn_q.weight is 64×64, want 128×64", ErrFormat, CodeInvalidModel},
		{"vocabulary-only file", rebuild(func(*gguf.Builder, string, gguf.TensorInfo) bool { return false }), "no tensors", ErrFormat, CodeInvalidModel},
		{"unknown tokenizer", withKV("tokenizer.ggml.model", gguf.ValueOf("t5")), `"t5"`, vocab.ErrUnsupportedModel, CodeUnsupportedModel},
		{"chat template of the wrong type", withKV("tokenizer.chat_template", gguf.ValueOf(uint32(1))), "tokenizer.chat_template", gguf.ErrType, CodeInvalidModel},
		{"truncated file", truncated, "truncated", gguf.ErrTruncated, CodeInvalidModel},
		{"GGUF version 4", append([]byte("GGUF\x04\x00\x00\x00"), good[8:]...), "GGUF v4", gguf.ErrUnsupported, CodeUnsupportedModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Load(tt.data, LoadOptions{})
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), tt.want)
			assert.ErrorIs(t, err, tt.kind, "the error keeps its kind")
			assert.True(t, errors.Is(err, ErrFormat) != errors.Is(err, ErrUnsupported), "malformed or unsupported, one of the two: %v", err)
			assert.Equal(t, tt.code, CodeOf(err))
		})
	}
	m, err := Load(rebuild(keep), LoadOptions{})
	require.NoError(t, err, "the rebuilt file itself loads")
	assert.Equal(t, 4, m.Config().GroupSize())
}

// firstPart is the first of two parts of data split as llama-gguf-split
// splits a model.
func firstPart(t *testing.T, data []byte) []byte {
	t.Helper()
	parts, err := modelgen.Split(data, 2)
	require.NoError(t, err)
	return parts[0]
}

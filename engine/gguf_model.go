package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/engine/vocab"
)

// architecture is what differs between the model families the engine runs;
// everything else (tensor names, hyper-parameter keys) is shared llama-style.
type architecture struct {
	ropeStyle RopeStyle
	qkvBias   bool // attn_{q,k,v}.bias tensors are required
}

// architectures maps general.architecture to its family traits.
var architectures = map[string]architecture{
	"llama": {ropeStyle: RopeInterleaved},
	"qwen2": {ropeStyle: RopeHalves, qkvBias: true},
}

// tensor names in GGUF files (llama.cpp's LLM_TENSOR_NAMES for these families).
const (
	nameTokenEmbd  = "token_embd.weight"
	nameOutputNorm = "output_norm.weight"
	nameOutput     = "output.weight"
	nameRopeFreqs  = "rope_freqs.weight"
)

func layerTensor(i int, name string) string { return fmt.Sprintf("blk.%d.%s", i, name) }

// ggufConfig reads the hyper-parameters of architecture arch.
func ggufConfig(f *gguf.File, arch string, spec architecture) (Config, error) {
	key := func(k string) string { return arch + "." + k }
	var err error
	u32 := func(k string) int {
		if err != nil {
			return 0
		}
		var v uint32
		v, err = f.Uint32(key(k))
		return int(v)
	}
	c := Config{RopeStyle: spec.ropeStyle}
	c.ContextLength = u32("context_length")
	c.Dim = u32("embedding_length")
	c.HiddenDim = u32("feed_forward_length")
	c.Layers = u32("block_count")
	c.Heads = u32("attention.head_count")
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	kv, err := f.Uint32Or(key("attention.head_count_kv"), uint32(c.Heads))
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	c.KVHeads = int(kv)
	if c.RopeTheta, err = f.Float32Or(key("rope.freq_base"), 10000); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if c.NormEps, err = f.Float32Or(key("attention.layer_norm_rms_epsilon"), 1e-5); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	c.RopeScale = 1
	scaling, err := f.StringOr(key("rope.scaling.type"), "none")
	if err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	switch scaling {
	case "none":
	case "linear":
		if c.RopeScale, err = f.Float32(key("rope.scaling.factor")); err != nil {
			return Config{}, fmt.Errorf("%w: %v", ErrFormat, err)
		}
	default:
		return Config{}, fmt.Errorf("%w: rope scaling %q (supported: none, linear)", ErrUnsupported, scaling)
	}
	if n, err := f.Uint32Or(key("expert_count"), 0); err != nil || n > 0 {
		return Config{}, fmt.Errorf("%w: mixture-of-experts models (%d experts)", ErrUnsupported, n)
	}
	// Optional facts that must agree with the derived ones.
	if c.Heads > 0 {
		if d, err := f.Uint32Or(key("rope.dimension_count"), uint32(c.Dim/c.Heads)); err != nil || int(d) != c.Dim/c.Heads {
			return Config{}, fmt.Errorf("%w: rotary embeddings over %d of %d head dimensions", ErrUnsupported, d, c.Dim/c.Heads)
		}
		if d, err := f.Uint32Or(key("attention.key_length"), uint32(c.Dim/c.Heads)); err != nil || int(d) != c.Dim/c.Heads {
			return Config{}, fmt.Errorf("%w: head size %d differs from embedding_length/head_count = %d", ErrUnsupported, d, c.Dim/c.Heads)
		}
	}
	return c, nil
}

// LoadGGUF reads a GGUF model: llama or qwen2 architecture, any supported
// tensor types, tokenizer from the file's metadata. Quantized weights stay
// quantized: the matrices are views into data.
//
// A shard written by ShardGGUF loads as that shard of the model (see
// Model.Shard).
func LoadGGUF(data []byte) (*Model, error) {
	m, _, err := loadGGUF(data)
	return m, err
}

// loadGGUF is LoadGGUF, also returning the parsed file.
func loadGGUF(data []byte) (*Model, *gguf.File, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, nil, err
	}
	arch, err := f.String("general.architecture")
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	spec, ok := architectures[arch]
	if !ok {
		return nil, nil, fmt.Errorf("%w: architecture %q (supported: llama, qwen2)", ErrUnsupported, arch)
	}
	if len(f.Tensors()) == 0 {
		return nil, nil, fmt.Errorf("%w: the file has no tensors (a vocabulary-only GGUF?)", ErrFormat)
	}
	c, err := ggufConfig(f, arch, spec)
	if err != nil {
		return nil, nil, err
	}
	tok, err := vocab.FromGGUF(f)
	if err != nil {
		return nil, nil, err
	}
	c.VocabSize = tok.VocabSize()
	if err := c.validate(); err != nil {
		return nil, nil, err
	}
	p, sharded, err := ggufShardPlan(f, c)
	if err != nil {
		return nil, nil, err
	}
	w, err := ggufWeights(f, c, spec)
	if err != nil {
		return nil, nil, err
	}
	if err := w.checkShapes(c, p); err != nil {
		return nil, nil, err
	}
	tmpl, _ := f.StringOr("tokenizer.chat_template", "")
	m := &Model{
		Config: c, Weights: w, Tokenizer: tok, Format: FormatGGUF, Architecture: arch,
		FileSize: len(data), chatTemplate: tmpl, metadata: f.Summary(8),
	}
	if sharded {
		m.shard = &p
	}
	return m, f, nil
}

// ggufWeights binds the tensors of the table above to the weights.
func ggufWeights(f *gguf.File, c Config, spec architecture) (*Weights, error) {
	var firstErr error
	fail := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
	}
	matrix := func(name string, optional bool) *tensor.Matrix {
		ti, ok := f.Tensor(name)
		if !ok {
			if !optional {
				fail(fmt.Errorf("%w: missing tensor %s", ErrFormat, name))
			}
			return nil
		}
		if len(ti.Dims) != 2 {
			fail(fmt.Errorf("%w: tensor %s has %d dimensions, want 2", ErrFormat, name, len(ti.Dims)))
			return nil
		}
		if !tensor.Supported(ti.Type) {
			fail(fmt.Errorf("%w: tensor %s has type %v, which this engine cannot compute with", ErrUnsupported, name, ti.Type))
			return nil
		}
		m, err := tensor.NewMatrix(ti.Type, int(ti.Dims[1]), int(ti.Dims[0]), ti.Data)
		if err != nil {
			fail(fmt.Errorf("%w: tensor %s: %v", ErrFormat, name, err))
		}
		return m
	}
	vector := func(name string, optional bool) []float32 {
		ti, ok := f.Tensor(name)
		if !ok {
			if !optional {
				fail(fmt.Errorf("%w: missing tensor %s", ErrFormat, name))
			}
			return nil
		}
		if len(ti.Dims) != 1 {
			fail(fmt.Errorf("%w: tensor %s has %d dimensions, want 1", ErrFormat, name, len(ti.Dims)))
			return nil
		}
		if !tensor.Supported(ti.Type) {
			fail(fmt.Errorf("%w: tensor %s has type %v, which this engine cannot compute with", ErrUnsupported, name, ti.Type))
			return nil
		}
		m, err := tensor.NewMatrix(ti.Type, 1, int(ti.Dims[0]), ti.Data)
		if err != nil {
			fail(fmt.Errorf("%w: tensor %s: %v", ErrFormat, name, err))
			return nil
		}
		if m.Type == tensor.F32 {
			return tensor.Float32s(m.Data)
		}
		v := make([]float32, m.Cols) // small: decode once
		m.Row(v, 0)
		return v
	}

	w := &Weights{Layers: make([]LayerWeights, c.Layers)}
	w.TokenEmbedding = matrix(nameTokenEmbd, false)
	w.OutputNorm = vector(nameOutputNorm, false)
	if w.Output = matrix(nameOutput, true); w.Output == nil {
		w.Output = w.TokenEmbedding // tied embeddings
	}
	w.RopeFreqFactors = vector(nameRopeFreqs, true)
	for i := range w.Layers {
		l := &w.Layers[i]
		l.AttnNorm = vector(layerTensor(i, "attn_norm.weight"), false)
		l.Wq = matrix(layerTensor(i, "attn_q.weight"), false)
		l.Wk = matrix(layerTensor(i, "attn_k.weight"), false)
		l.Wv = matrix(layerTensor(i, "attn_v.weight"), false)
		l.Wo = matrix(layerTensor(i, "attn_output.weight"), false)
		l.Bq = vector(layerTensor(i, "attn_q.bias"), !spec.qkvBias)
		l.Bk = vector(layerTensor(i, "attn_k.bias"), !spec.qkvBias)
		l.Bv = vector(layerTensor(i, "attn_v.bias"), !spec.qkvBias)
		if (l.Bq == nil) != (l.Bk == nil) || (l.Bq == nil) != (l.Bv == nil) {
			fail(fmt.Errorf("%w: layer %d has some but not all of the q/k/v biases", ErrFormat, i))
		}
		l.FFNNorm = vector(layerTensor(i, "ffn_norm.weight"), false)
		l.WGate = matrix(layerTensor(i, "ffn_gate.weight"), false)
		l.WDown = matrix(layerTensor(i, "ffn_down.weight"), false)
		l.WUp = matrix(layerTensor(i, "ffn_up.weight"), false)
	}
	return w, firstErr
}

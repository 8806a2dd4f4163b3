package engine

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Device is a second compute backend (a GPU: engine/gpu): a session made
// with SessionOptions.Device runs its forward pass there. The engine still
// decides what each layer computes, from the layer's recipe, in the same
// order as on the CPU (forward_device.go); the device decides how, over
// buffers of its own: the weights, uploaded once in their stored form, the
// activations and the KV cache. Only the logits (or the final states an
// embedding pools) come back. A device sums in another order than the
// CPU, so its results differ from the CPU's within a tolerance its
// package states and measures.
type Device interface {
	// Name says what the device is ("webgpu").
	Name() string
	// Upload makes the device hold the weights w refers to (each matrix
	// and vector once, however many sessions ask); ops name them by
	// these pointers.
	Upload(w DeviceWeights) error
	// NewSession makes the device side of a session of shape s.
	NewSession(s DeviceShape) (DeviceSession, error)
}

// DeviceWeights are the tensors a model's forward pass reads, for
// Device.Upload: its matrices and its vectors (norm weights, biases),
// and the rotation tables of its layers.
type DeviceWeights struct {
	Matrices []*tensor.Matrix
	Vectors  [][]float32
	Ropes    []DeviceRope
}

// DeviceRope is a table of rotations: for positions 0..len(Cos)/Half-1,
// the cosine and sine of each of a head's Half rotating pairs (as
// ropeTable holds them), the pairs chosen as Style says.
type DeviceRope struct {
	Cos, Sin []float32 // (positions, Half)
	Half     int
	Style    RopeStyle
}

// DeviceShape is what a device session holds: blocks of up to Block
// tokens, a KV cache of Context positions of Layers layers of KVDim
// values as KV says, and the activations' widths (Vec). Slots are the
// positions each layer's cache holds: Context, or for a layer attending
// to a sliding window a ring of the window and a block less one (the
// block's keys are stored before its first token attends).
type DeviceShape struct {
	Block, Context, Layers int
	Slots                  []int
	KV                     KVType
	Heads, KVHeads         int
	HeadDim, KVDim         int
	Widths                 [VecCount]int // values per token of each activation
}

// Vec names one of a device session's activations: the vectors of a
// forward pass, Block tokens' rows each (activations, forward.go).
type Vec uint8

// The activations of a forward pass.
const (
	VecX      Vec = iota // the residual stream (dim)
	VecXN                // the normalised input of a sub-layer (dim)
	VecQ                 // queries (heads·headDim)
	VecK                 // keys (kvDim)
	VecV                 // values (kvDim)
	VecAttn              // the heads' outputs (heads·headDim)
	VecProj              // attention's output projected back (dim)
	VecGate              // the feed-forward gate, then the gated units (hidden)
	VecUp                // the feed-forward up projection (hidden)
	VecDown              // the feed-forward output (dim)
	VecLogits            // the next-token logits (vocabulary): the last token's, or every row's (Session.Score)
	VecCount             // how many there are
)

// DeviceProduct is one product of a step: Out's rows = M times the
// input's rows.
type DeviceProduct struct {
	Out Vec
	M   *tensor.Matrix
}

// DeviceSession is the device side of one session: the steps of the
// forward pass over its activations, each for the first n rows (tokens),
// recorded in order and run when the pass is flushed or read. Weights are
// named by the pointers Device.Upload was given.
type DeviceSession interface {
	// SetRows sets the first n rows of v to values (n·width floats).
	SetRows(v Vec, values []float32, n int)
	// Norm sets out = RMSNorm(in)·weight, row by row, over rows of width
	// values (heads: each head of a row alone, weight its headDim values);
	// ggml says the arithmetic is ggml's (rmsNormGGML) rather than
	// llama2.c's.
	Norm(out, in Vec, n int, weight []float32, width int, eps float32, ggml bool)
	// Copy sets out = in.
	Copy(out, in Vec, n int)
	// Products computes each product of ps over in's n rows.
	Products(in Vec, n int, ps ...DeviceProduct)
	// AddBias adds bias to each row of v.
	AddBias(v Vec, n int, bias []float32)
	// RopeQK rotates each head of VecQ's and VecK's rows, row i at
	// position pos+i, by table (given to Upload).
	RopeQK(n, pos int, table DeviceRope, headDim int)
	// Scale multiplies v by s.
	Scale(v Vec, n int, s float32)
	// SoftCap sets v = limit·tanh(v/limit).
	SoftCap(v Vec, n int, limit float32)
	// Attention stores the n rows of VecK and VecV at positions
	// pos..pos+n-1 of layer l's cache and sets VecAttn to each row of
	// VecQ's attention over the positions it sees: causal, within
	// a.Window when set, scores scaled by scale and soft-capped at
	// a.SoftCap.
	Attention(l, n, pos int, a AttentionSpec, scale float32)
	// GateUnits sets VecGate = act(VecGate) ⊙ VecUp (SwiGLU, GeGLU).
	GateUnits(ffn FFN, n int)
	// Add sets dst += src.
	Add(dst, src Vec, n int)
	// AddNorm sets VecX += add, then out = RMSNorm(VecX)·weight over rows
	// of VecX's width: a sub-layer's output added to the residual stream
	// and the next input normalised, Add then Norm (llama2.c's
	// arithmetic) at once.
	AddNorm(out, add Vec, n int, weight []float32, eps float32)
	// Flush runs what is recorded, without waiting for it.
	Flush() error
	// Read runs what is recorded and copies row of v into dst, waiting.
	Read(v Vec, row int, dst []float32) error
	// Close frees the session's buffers.
	Close()
}

// DeviceMatrices are the matrices a forward pass of m on a Device reads
// (the token embedding only where the output shares it: the rows of the
// others are looked up on the CPU).
func (m *Model) DeviceMatrices() []*tensor.Matrix {
	w := m.weights
	ms := []*tensor.Matrix{w.Output}
	for l := range w.Layers {
		lw := &w.Layers[l]
		ms = append(ms, lw.Wq, lw.Wk, lw.Wv, lw.Wo, lw.WGate, lw.WUp, lw.WDown)
	}
	return ms
}

// deviceWeights lists what the forward pass of s reads, for Device.Upload.
func (s *Session) deviceWeights() DeviceWeights {
	w := s.model.weights
	d := DeviceWeights{Matrices: s.model.DeviceMatrices(), Vectors: [][]float32{w.OutputNorm}}
	for l := range w.Layers {
		lw := &w.Layers[l]
		for _, v := range [][]float32{lw.AttnNorm, lw.FFNNorm, lw.AttnPostNorm, lw.FFNPostNorm, lw.Bq, lw.Bk, lw.Bv, lw.QNorm, lw.KNorm} {
			if v != nil {
				d.Vectors = append(d.Vectors, v)
			}
		}
	}
	seen := map[*ropeTable]bool{}
	for _, r := range s.layerRopes {
		if !seen[r] {
			seen[r] = true
			d.Ropes = append(d.Ropes, r.device(s.model.config.RopeStyle))
		}
	}
	return d
}

// device is the table as a DeviceRope.
func (t *ropeTable) device(style RopeStyle) DeviceRope {
	return DeviceRope{Cos: t.cos, Sin: t.sin, Half: t.half, Style: style}
}

// DeviceSupports says whether the forward pass of m can run on a Device:
// nil, or an error wrapping ErrUnsupported that names what cannot (the
// steps every decoder family of the CPU path takes are there; encoders,
// parts of split models and the recipes' steps a device does not have
// yet are not).
func (m *Model) DeviceSupports() error {
	switch {
	case m.arch.encoder:
		return fmt.Errorf("%w: %s is an encoder, which runs on the CPU only", ErrUnsupported, m.arch.name)
	case m.part != nil:
		return fmt.Errorf("%w: a part of a split model runs on the CPU only", ErrUnsupported)
	}
	for l := range m.config.Layers {
		spec := m.config.Layer(l)
		if spec.Kind != LayerAttention {
			return fmt.Errorf("%w: layer %d is a %s layer (recurrent), which runs on the CPU only", ErrUnsupported, l, spec.Kind)
		}
		if spec.FFN == FFNGELU {
			return fmt.Errorf("%w: layer %d's feed-forward (GELU) runs on the CPU only", ErrUnsupported, l)
		}
		if spec.Attention.Sinks {
			return fmt.Errorf("%w: layer %d's attention sinks (attn_sinks) run on the CPU only", ErrUnsupported, l)
		}
		if m.weights.Layers[l].Bo != nil {
			return fmt.Errorf("%w: layer %d's attention output bias (attn_output.bias) runs on the CPU only", ErrUnsupported, l)
		}
		if spec.Attention.Gated {
			return fmt.Errorf("%w: layer %d's gated attention runs on the CPU only", ErrUnsupported, l)
		}
		if spec.FFN == FFNMoE {
			return fmt.Errorf("%w: layer %d's feed-forward is a mixture of %d experts, which runs on the CPU only", ErrUnsupported, l, spec.MoE.Experts)
		}
		if why := m.config.deviceRefusal(l); why != "" {
			return fmt.Errorf("%w: layer %d runs on the CPU only: %s", ErrUnsupported, l, why)
		}
	}
	return nil
}

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// session is the device side of one engine session (engine.DeviceSession):
// its activations, its KV cache and the operations of its forward pass,
// each bound the first time the pass asks for it and recorded again at
// every pass. The engine asks for the same steps in the same order at
// every pass, so after the first token nothing is bound or compiled.
type session struct {
	d     *Device
	shape engine.DeviceShape
	pass  *Pass
	vecs  [engine.VecCount]Buffer
	kv    *KVCache
	ops   map[opKey]recorder
	err   error  // the first error of a step since the last Flush or Read
	bytes []byte // Read's and SetRows' staging
}

// recorder records a bound operation for n tokens at position pos.
type recorder func(n, pos int) error

// opKey identifies a bound operation: its kind, its activations, the
// weight or table it reads (by its first element or matrix) and its
// numbers.
type opKey struct {
	kind    string
	out, in engine.Vec
	weight  unsafe.Pointer
	a       int
	f       float32
}

// passSlots bounds the operations a session binds: about 25 per layer.
func passSlots(layers int) int { return 64 + 32*layers }

// NewSession makes the device side of a session of shape s.
func (d *Device) NewSession(s engine.DeviceShape) (engine.DeviceSession, error) {
	if d.closed {
		return nil, errClosed
	}
	pass, err := NewPass(d.host, passSlots(s.Layers))
	if err != nil {
		return nil, err
	}
	ss := &session{d: d, shape: s, pass: pass, ops: map[opKey]recorder{}}
	for v := range engine.VecCount {
		b, err := d.host.NewBuffer(vecNames[v], max(4*s.Block*s.Widths[v], 4), UsageReadback)
		if err != nil {
			ss.Close()
			return nil, err
		}
		ss.vecs[v] = b
	}
	slots := s.Slots
	if slots == nil {
		slots = make([]int, s.Layers)
		for l := range slots {
			slots[l] = s.Context
		}
	}
	if ss.kv, err = NewRingKVCache(d.host, s.Context, s.KVDim, s.KV == engine.KVF16, slots); err != nil {
		ss.Close()
		return nil, err
	}
	d.sessions[ss] = true
	return ss, nil
}

var vecNames = [engine.VecCount]string{"x", "xn", "q", "k", "v", "attn", "proj", "gate", "up", "down", "logits"}

// Close frees the session's buffers.
func (s *session) Close() {
	for i, b := range s.vecs {
		if b != nil {
			b.Destroy()
			s.vecs[i] = nil
		}
	}
	if s.kv != nil {
		s.kv.Destroy()
		s.kv = nil
	}
	if s.pass != nil {
		s.pass.Destroy()
	}
	delete(s.d.sessions, s)
}

func (s *session) vec(v engine.Vec) Binding { return Binding{Buffer: s.vecs[v]} }

// run binds the operation of key with bind the first time, then records it.
func (s *session) run(key opKey, n, pos int, bind func() (recorder, error)) {
	if s.err != nil {
		return
	}
	r, ok := s.ops[key]
	if !ok {
		var err error
		if r, err = bind(); err != nil {
			s.err = fmt.Errorf("gpu: binding %s: %w", key.kind, err)
			return
		}
		s.ops[key] = r
	}
	if err := r(n, pos); err != nil {
		s.err = err
	}
}

// SetRows writes the first n rows of v.
func (s *session) SetRows(v engine.Vec, values []float32, n int) {
	if s.err != nil {
		return
	}
	b := s.staging(4 * len(values))
	for i, f := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	// Recorded steps run before the write lands: submit them first.
	if s.pass.Dispatches() > 0 {
		s.err = s.pass.Submit()
	}
	s.d.host.Write(s.vecs[v], 0, b)
}

func (s *session) staging(n int) []byte {
	if cap(s.bytes) < n {
		s.bytes = make([]byte, n)
	}
	return s.bytes[:n]
}

func (s *session) Norm(out, in engine.Vec, n int, weight []float32, width int, eps float32, ggml bool) {
	w := s.d.vector(weight)
	rowWidth := s.shape.Widths[out]
	key := opKey{kind: "norm", out: out, in: in, weight: unsafe.Pointer(unsafe.SliceData(weight)), a: width, f: eps}
	s.run(key, n, 0, func() (recorder, error) {
		var r *RMSNorm
		var err error
		if width < rowWidth {
			if out != in {
				return nil, fmt.Errorf("a norm by heads is in place")
			}
			r, err = NewHeadsRMSNorm(s.d.lib, s.pass, s.vec(out), w, width, rowWidth/width, eps)
		} else {
			r, err = NewRMSNorm(s.d.lib, s.pass, s.vec(out), s.vec(in), w, width, eps, ggml)
		}
		if err != nil {
			return nil, err
		}
		return func(n, _ int) error { return r.Record(n) }, nil
	})
}

func (s *session) rows(kind string, dst, src engine.Vec, n int, f float32, weight []float32, bind func() (*Rows, error)) {
	key := opKey{kind: kind, out: dst, in: src, f: f, weight: unsafe.Pointer(unsafe.SliceData(weight))}
	s.run(key, n, 0, func() (recorder, error) {
		r, err := bind()
		if err != nil {
			return nil, err
		}
		return func(n, _ int) error { return r.Record(n) }, nil
	})
}

func (s *session) Copy(out, in engine.Vec, n int) {
	s.rows("copy", out, in, n, 0, nil, func() (*Rows, error) {
		return NewCopy(s.d.lib, s.pass, s.vec(out), s.vec(in), s.shape.Widths[out])
	})
}

func (s *session) AddBias(v engine.Vec, n int, bias []float32) {
	s.rows("bias", v, v, n, 0, bias, func() (*Rows, error) {
		return NewBias(s.d.lib, s.pass, s.vec(v), s.d.vector(bias), s.shape.Widths[v])
	})
}

func (s *session) Scale(v engine.Vec, n int, f float32) {
	s.rows("scale", v, v, n, f, nil, func() (*Rows, error) {
		return NewScale(s.d.lib, s.pass, s.vec(v), s.shape.Widths[v], f)
	})
}

func (s *session) SoftCap(v engine.Vec, n int, limit float32) {
	s.rows("softcap", v, v, n, limit, nil, func() (*Rows, error) {
		return NewSoftCap(s.d.lib, s.pass, s.vec(v), s.shape.Widths[v], limit)
	})
}

func (s *session) Add(dst, src engine.Vec, n int) {
	s.rows("add", dst, src, n, 0, nil, func() (*Rows, error) {
		return NewAdd(s.d.lib, s.pass, s.vec(dst), s.vec(src), s.shape.Widths[dst])
	})
}

func (s *session) GateUnits(ffn engine.FFN, n int) {
	s.rows("gate", engine.VecGate, engine.VecUp, n, float32(ffn), nil, func() (*Rows, error) {
		w := s.shape.Widths[engine.VecGate]
		if ffn == engine.FFNGeGLU {
			return NewGeGLU(s.d.lib, s.pass, s.vec(engine.VecGate), s.vec(engine.VecUp), w, true)
		}
		return NewSwiGLU(s.d.lib, s.pass, s.vec(engine.VecGate), s.vec(engine.VecUp), w)
	})
}

func (s *session) RopeQK(n, pos int, table engine.DeviceRope, headDim int) {
	key := opKey{kind: "rope", weight: unsafe.Pointer(unsafe.SliceData(table.Cos)), a: headDim}
	s.run(key, n, pos, func() (recorder, error) {
		t := s.d.ropes[unsafe.SliceData(table.Cos)]
		if t == nil {
			return nil, fmt.Errorf("the rotation table was not uploaded")
		}
		style := RopeAdjacent
		if table.Style == engine.RopeHalves {
			style = RopeHalves
		}
		r, err := NewRopeQK(s.d.lib, s.pass, s.vec(engine.VecQ), s.vec(engine.VecK), t,
			s.shape.Widths[engine.VecQ]/headDim, s.shape.Widths[engine.VecK]/headDim, headDim, 2*table.Half, style)
		if err != nil {
			return nil, err
		}
		return r.Record, nil
	})
}

func (s *session) AddNorm(out, add engine.Vec, n int, weight []float32, eps float32) {
	key := opKey{kind: "add norm", out: out, in: add, weight: unsafe.Pointer(unsafe.SliceData(weight)), f: eps}
	s.run(key, n, 0, func() (recorder, error) {
		r, err := NewAddRMSNorm(s.d.lib, s.pass, s.vec(out), s.vec(engine.VecX), s.vec(add), s.d.vector(weight), s.shape.Widths[engine.VecX], eps)
		if err != nil {
			return nil, err
		}
		return func(n, _ int) error { return r.Record(n) }, nil
	})
}

func (s *session) Attention(l, n, pos int, a engine.AttentionSpec, scale float32) {
	s.run(opKey{kind: "kv store", a: l}, n, pos, func() (recorder, error) {
		st, err := NewKVStore(s.d.lib, s.pass, s.kv, l, s.vec(engine.VecK), s.vec(engine.VecV))
		if err != nil {
			return nil, err
		}
		return st.Record, nil
	})
	s.run(opKey{kind: "attention", a: l}, n, pos, func() (recorder, error) {
		at, err := NewAttention(s.d.lib, s.pass, s.kv, l, s.vec(engine.VecQ), s.vec(engine.VecAttn), AttentionSpec{
			Heads: s.shape.Heads, KVHeads: s.shape.KVHeads, HeadDim: s.shape.HeadDim,
			Window: a.Window, SoftCap: a.SoftCap, Scale: scale, MaxTokens: s.shape.Block,
		})
		if err != nil {
			return nil, err
		}
		return at.Record, nil
	})
}

func (s *session) Products(in engine.Vec, n int, ps ...engine.DeviceProduct) {
	key := opKey{kind: "products", in: in, out: ps[0].Out, weight: unsafe.Pointer(ps[0].M)}
	s.run(key, n, 0, func() (recorder, error) {
		gps := make([]Product, len(ps))
		for i, p := range ps {
			m := s.d.matrices[p.M]
			if m == nil {
				return nil, fmt.Errorf("a %d×%d %v matrix was not uploaded", p.M.Rows, p.M.Cols, p.M.Type)
			}
			gps[i] = Product{M: m, Out: s.vec(p.Out)}
		}
		q, err := NewProducts(s.d.lib, s.pass, s.vec(in), s.shape.Block, gps...)
		if err != nil {
			return nil, err
		}
		return func(n, _ int) error { return q.Record(n) }, nil
	})
}

// Flush submits what is recorded.
func (s *session) Flush() error {
	if err := s.takeErr(); err != nil {
		return err
	}
	return s.pass.Submit()
}

// Read submits what is recorded and reads row of v into dst.
func (s *session) Read(v engine.Vec, row int, dst []float32) error {
	if err := s.Flush(); err != nil {
		return err
	}
	b := s.staging(4 * len(dst))
	if err := s.d.host.Read(s.vecs[v], 4*row*s.shape.Widths[v], b); err != nil {
		return err
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return nil
}

// takeErr returns and forgets the steps' first error; recorded dispatches
// are dropped with it.
func (s *session) takeErr() error {
	err := s.err
	s.err = nil
	if err == nil {
		err = s.d.host.Err()
	}
	return err
}

var _ engine.DeviceSession = (*session)(nil)
var _ engine.Device = (*Device)(nil)
var _ = tensor.F32

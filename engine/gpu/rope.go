package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Rotary embeddings from a table of every position's rotations, computed
// once by the CPU (the engine's ropeTable) and uploaded once: the cosines,
// (context, rotDims/2) values, then the sines, the same shape. The kernel
// turns one pair of one head of one token per invocation, as the engine's
// ropeTable.rotate does.

// The pairs a head's dimensions rotate in (the engine's RopeStyle).
const (
	RopeAdjacent = 0 // (2i, 2i+1): llama's "normal" rotation
	RopeHalves   = 1 // (i, i+rotDims/2): GPT-NeoX's, qwen2's
)

// NewRopeTable uploads a table of rotations: cos and sin, (context, pairs)
// values each, as the engine's ropeTable holds them.
func NewRopeTable(h Host, cos, sin []float32) (Buffer, error) {
	if len(cos) == 0 || len(cos) != len(sin) {
		return nil, fmt.Errorf("gpu: rope table: %d cosines and %d sines", len(cos), len(sin))
	}
	b, err := h.NewBuffer("rope table", 8*len(cos), UsageStorage|UsageCopyDst)
	if err != nil {
		return nil, err
	}
	data := make([]byte, 8*len(cos))
	for i, v := range cos {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint32(data[4*(len(cos)+i):], math.Float32bits(sin[i]))
	}
	h.Write(b, 0, data)
	return b, nil
}

// Rope rotates the heads of n rows of v by their positions.
type Rope struct {
	op
	v                           Binding
	heads, headDim, half, style int
	context                     int // positions the table holds
}

const ropeBody = `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  let i = groupIndex(wg, nwg) * WG + li;
  if (i >= p.count) { return; }
  let pair = i % p.half;
  let head = i / p.half; // of all the rows' heads
  let token = head / p.heads;
  var a = 2u * pair;
  var b = a + 1u;
  if (p.style == 1u) { a = pair; b = pair + p.half; }
  let at = head * p.headDim;
  let t = (p.pos + token) * p.half + pair;
  let c = table[t];
  let s = table[p.context * p.half + t];
  let x0 = v[at + a];
  let x1 = v[at + b];
  v[at + a] = x0 * c - x1 * s;
  v[at + b] = x0 * s + x1 * c;
}
`

// NewRope makes the rotation of v's rows, heads heads of headDim values
// each, whose first rotDims dimensions turn (the rest stay), paired as style
// says (RopeAdjacent, RopeHalves), by the rotations of table (NewRopeTable).
func NewRope(lib *Library, pass *Pass, v Binding, table Buffer, heads, headDim, rotDims int, style int) (*Rope, error) {
	switch {
	case heads < 1 || headDim < 2:
		return nil, fmt.Errorf("gpu: rope: heads %d and headDim %d must be at least 1 and 2", heads, headDim)
	case rotDims < 2 || rotDims%2 != 0 || rotDims > headDim:
		return nil, fmt.Errorf("gpu: rope: rotDims %d must be even, from 2 to headDim %d", rotDims, headDim)
	case style != RopeAdjacent && style != RopeHalves:
		return nil, fmt.Errorf("gpu: rope: style %d is neither RopeAdjacent nor RopeHalves", style)
	}
	half := rotDims / 2
	src := kernelSource("count: u32, heads: u32, headDim: u32, half: u32, style: u32, pos: u32, context: u32,",
		[]string{"v: array<f32>", "table: array<f32>"}, ropeBody)
	o, err := newOp(lib, pass, "rope", src, v, Binding{Buffer: table})
	if err != nil {
		return nil, err
	}
	return &Rope{op: o, v: v, heads: heads, headDim: headDim, half: half, style: style, context: table.Size() / (8 * half)}, nil
}

// Record records the rotation of n rows at positions pos..pos+n-1.
func (r *Rope) Record(n, pos int) error {
	if err := rowsFit("rope v", r.v, n, r.heads*r.headDim); err != nil {
		return err
	}
	if pos < 0 || pos+n > r.context {
		return fmt.Errorf("gpu: rope: positions %d..%d are past the table's %d", pos, pos+n-1, r.context)
	}
	count := n * r.heads * r.half
	for i, v := range [...]int{count, r.heads, r.headDim, r.half, r.style, pos, r.context} {
		r.params.SetU32(i, uint32(v))
	}
	r.dispatch((count + workgroup - 1) / workgroup)
	return nil
}

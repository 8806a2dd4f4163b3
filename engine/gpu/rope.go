package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
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

// Rope rotates the heads of n rows of one or two activations (the queries
// and the keys) by their positions.
type Rope struct {
	op
	vs                   []Binding // the rows rotated: v, or q and k
	heads                []int     // each one's heads
	headDim, half, style int
	context              int // positions the table holds
}

// ropeRotate turns invocation i's pair in V, rows of H heads.
const ropeRotate = `
  {
    let pair = i % p.half;
    let head = i / p.half; // of all the rows' heads
    let token = head / H;
    var a = 2u * pair;
    var b = a + 1u;
    if (p.style == 1u) { a = pair; b = pair + p.half; }
    let at = head * p.headDim;
    let t = (p.pos + token) * p.half + pair;
    let c = table[t];
    let s = table[p.context * p.half + t];
    let x0 = V[at + a];
    let x1 = V[at + b];
    V[at + a] = x0 * c - x1 * s;
    V[at + b] = x0 * s + x1 * c;
  }
`

// ropeSource is the kernel rotating one activation (v) or two (q, then k,
// an invocation per pair of either).
func ropeSource(pair bool) string {
	head := `
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u, @builtin(local_invocation_index) li: u32) {
  var i = groupIndex(wg, nwg) * WG + li;
`
	params := "count: u32, count2: u32, heads: u32, heads2: u32, headDim: u32, half: u32, style: u32, pos: u32, context: u32,"
	if !pair {
		return kernelSource(params, []string{"v: array<f32>", "table: array<f32>"}, head+`
  if (i >= p.count) { return; }
`+strings.NewReplacer("V[", "v[", "H;", "p.heads;").Replace(ropeRotate)+"}\n")
	}
	return kernelSource(params, []string{"q: array<f32>", "k: array<f32>", "table: array<f32>"}, head+`
  if (i >= p.count + p.count2) { return; }
  if (i < p.count) {
`+strings.NewReplacer("V[", "q[", "H;", "p.heads;").Replace(ropeRotate)+`
  } else {
    i -= p.count;
`+strings.NewReplacer("V[", "k[", "H;", "p.heads2;").Replace(ropeRotate)+`
  }
}
`)
}

// NewRope makes the rotation of v's rows, heads heads of headDim values
// each, whose first rotDims dimensions turn (the rest stay), paired as style
// says (RopeAdjacent, RopeHalves), by the rotations of table (NewRopeTable).
func NewRope(lib *Library, pass *Pass, v Binding, table Buffer, heads, headDim, rotDims int, style int) (*Rope, error) {
	return newRope(lib, pass, []Binding{v}, []int{heads}, table, headDim, rotDims, style)
}

// NewRopeQK makes the rotation of q's rows (heads heads) and k's (kvHeads
// heads) in one dispatch, as NewRope rotates each.
func NewRopeQK(lib *Library, pass *Pass, q, k Binding, table Buffer, heads, kvHeads, headDim, rotDims int, style int) (*Rope, error) {
	return newRope(lib, pass, []Binding{q, k}, []int{heads, kvHeads}, table, headDim, rotDims, style)
}

func newRope(lib *Library, pass *Pass, vs []Binding, heads []int, table Buffer, headDim, rotDims int, style int) (*Rope, error) {
	switch {
	case slices.Min(heads) < 1 || headDim < 2:
		return nil, fmt.Errorf("gpu: rope: heads %v and headDim %d must be at least 1 and 2", heads, headDim)
	case rotDims < 2 || rotDims%2 != 0 || rotDims > headDim:
		return nil, fmt.Errorf("gpu: rope: rotDims %d must be even, from 2 to headDim %d", rotDims, headDim)
	case style != RopeAdjacent && style != RopeHalves:
		return nil, fmt.Errorf("gpu: rope: style %d is neither RopeAdjacent nor RopeHalves", style)
	}
	half := rotDims / 2
	name := "rope"
	if len(vs) == 2 {
		name = "rope q k"
	}
	o, err := newOp(lib, pass, name, ropeSource(len(vs) == 2), append(slices.Clone(vs), Binding{Buffer: table})...)
	if err != nil {
		return nil, err
	}
	return &Rope{op: o, vs: vs, heads: heads, headDim: headDim, half: half, style: style, context: table.Size() / (8 * half)}, nil
}

// Record records the rotation of n rows at positions pos..pos+n-1.
func (r *Rope) Record(n, pos int) error {
	for i, v := range r.vs {
		if err := rowsFit("rope rows", v, n, r.heads[i]*r.headDim); err != nil {
			return err
		}
	}
	if pos < 0 || pos+n > r.context {
		return fmt.Errorf("gpu: rope: positions %d..%d are past the table's %d", pos, pos+n-1, r.context)
	}
	count, count2, heads2 := n*r.heads[0]*r.half, 0, 0
	if len(r.vs) == 2 {
		heads2 = r.heads[1]
		count2 = n * heads2 * r.half
	}
	for i, v := range [...]int{count, count2, r.heads[0], heads2, r.headDim, r.half, r.style, pos, r.context} {
		r.params.SetU32(i, uint32(v))
	}
	r.dispatch((count + count2 + workgroup - 1) / workgroup)
	return nil
}

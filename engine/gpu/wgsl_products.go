package gpu

import (
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The product kernels' shape: a workgroup of productThreads threads
// computes productRows rows for a tile of tokens (1 for a decode step,
// productTile for a prompt block), its threads striding over the rows'
// chunks so that each chunk of weights is read once for the whole tile.
const (
	productThreads = 64 // 8·8, as the workgroup-memory reduction adds them
	productRows    = 4
	productTile    = 8
	minSubgroup    = 4 // the smallest subgroup WebGPU allows
)

// wgslProductParams is the product kernels' uniform: the matrix's shape,
// the token count, a row's bytes, a row's chunks, where the encoded
// activation keeps its scales and sums, and the dispatch's width in
// workgroups (row groups wider than one dimension wrap into y).
const wgslProductParams = `
struct Params {
  rows: u32, cols: u32, n: u32, row_bytes: u32,
  chunks: u32, off_d: u32, off_s: u32, groups_x: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
`

// wgslActivation reads token t's encoded activation at chunk c.
const wgslActivation = `
// xq is word i of the quants of chunk c (32 elements).
fn xq(t: u32, c: u32, i: u32) -> u32 { return a[(t * p.cols + c * 32u) / 4u + i]; }
// xd32 is the Q8_0/Q8_1 block's scale.
fn xd32(t: u32, c: u32) -> f32 { return bitcast<f32>(a[p.off_d + t * (p.cols / 32u) + c]); }
// xs32 is the Q8_0 block's Σq (i32 bits), the Q8_1 block's s (f32 bits).
fn xs32(t: u32, c: u32) -> u32 { return a[p.off_s + t * (p.cols / 32u) + c]; }
// xd256 is the Q8_K super-block's scale.
fn xd256(t: u32, c: u32) -> f32 { return bitcast<f32>(a[p.off_d + t * (p.cols / 256u) + c / 8u]); }
// xbs is Σq of half i of chunk c (Q8_K's sums per 16).
fn xbs(t: u32, c: u32, i: u32) -> i32 { return bitcast<i32>(a[p.off_s + t * (p.cols / 16u) + 2u * c + i]); }
// xf is element i of chunk c of a float activation (CHUNK elements a chunk).
// (Past cols, where a row padded to whole chunks has zeros, it is 0.)
fn xf(t: u32, c: u32, i: u32) -> f32 {
  let j = c * CHUNKu + i;
  if (j >= p.cols) { return 0.0; }
  return bitcast<f32>(a[t * p.cols + j]);
}
`

// wgslProductMain is the product kernel: out[t·rows + r] = Σ_c row r ·
// token t, for the workgroup's ROWS rows and TILE tokens. The partial sums
// of the threads are added by subgroupAdd and then across subgroups
// (SUBGROUPS) or by a tree in workgroup memory.
const wgslProductMain = `
@group(0) @binding(1) var<storage, read> w: array<u32>;
@group(0) @binding(2) var<storage, read_write> a: array<u32>; // read_write: for F32, x, which may share a buffer with out
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

const THREADS = THREADSu;
const ROWS = ROWSu;
const TILE = TILEu;
const SLOTS = SLOTSu; // subgroups a workgroup has at most
WORKGROUP_MEMORY
@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32 BUILTINS) {
  let r0 = (wg.x + wg.y * p.groups_x) * ROWS;
  let t0 = wg.z * TILE;
  var acc: array<f32, ROWS * TILE>;
  for (var i = 0u; i < ROWS; i++) {
    let r = r0 + i;
    if (r < p.rows) {
      for (var c = lid; c < p.chunks; c += THREADS) {
        let k = load_chunk(r * p.row_bytes, c);
        for (var j = 0u; j < TILE; j++) {
          if (t0 + j < p.n) { acc[i * TILE + j] += dot_chunk(k, t0 + j, c); }
        }
      }
    }
  }
REDUCE
  if (lid < ROWS * TILE) {
    let r = r0 + lid / TILE;
    let t = t0 + lid % TILE;
    if (r < p.rows && t < p.n) { out[t * p.rows + r] = total; }
  }
}
`

// wgslReduceShared adds the threads' partial sums in workgroup memory,
// BATCH outputs at a time: sums of 8 (the additions shared among the
// threads), then the 8 sums of each output. Workgroup memory is kept small
// (BATCH·THREADS values): WebGPU zero-fills it, and SwiftShader's compile
// time grows with its size.
const wgslReduceShared = `
  var total = 0.0;
  for (var v0 = 0u; v0 < ROWS * TILE; v0 += BATCH) {
    for (var b = 0u; b < BATCH; b++) { red[b * THREADS + lid] = acc[v0 + b]; }
    workgroupBarrier();
    if (lid < BATCH * 8u) {
      var s = 0.0;
      for (var k = 0u; k < 8u; k++) { s += red[(lid / 8u) * THREADS + (lid % 8u) * 8u + k]; }
      eighths[lid] = s;
    }
    workgroupBarrier();
    if (lid >= v0 && lid < v0 + BATCH) {
      for (var k = 0u; k < 8u; k++) { total += eighths[(lid - v0) * 8u + k]; }
    }
    workgroupBarrier();
  }
`

// wgslReduceSubgroups adds the partial sums within each subgroup
// (subgroupAdd), then the subgroups' sums, whatever the subgroup size;
// subgroup k of the workgroup is taken to be its invocations
// k·size … k·size+size-1, as 1-D workgroups are laid out.
const wgslReduceSubgroups = `
  let groups = (THREADS + sg_size - 1u) / sg_size;
  for (var v = 0u; v < ROWS * TILE; v++) {
    let s = subgroupAdd(acc[v]);
    if (sg_id == 0u) { red[v * SLOTS + lid / sg_size] = s; }
  }
  workgroupBarrier();
  var total = 0.0;
  if (lid < ROWS * TILE) {
    for (var k = 0u; k < groups; k++) { total += red[lid * SLOTS + k]; }
  }
`

// productSource is the WGSL of the product kernel for type t with tiles
// of tile tokens, reducing with subgroup operations or workgroup memory.
func productSource(t tensor.Type, tile int, subgroups bool) (string, error) {
	kt, ok := kernelTypes[t]
	if !ok {
		return "", fmt.Errorf("%w: no product kernel for %v", ErrUnsupported, t)
	}
	var b strings.Builder
	// The workgroup-memory reduction's batch: 4 outputs (4·8 ≤ THREADS).
	reduce, builtins := wgslReduceShared, ""
	red := "var<workgroup> red: array<f32, BATCH * THREADS>;\nvar<workgroup> eighths: array<f32, BATCH * 8u>;\nconst BATCH = 4u;"
	if subgroups {
		b.WriteString("enable subgroups;\n")
		reduce = wgslReduceSubgroups
		builtins = ", @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_id: u32"
		red = "var<workgroup> red: array<f32, ROWS * TILE * SLOTS>;"
	}
	b.WriteString(wgslProductParams)
	b.WriteString(wgslProductMain)
	b.WriteString(wgslActivation)
	b.WriteString(wgslNumbers)
	b.WriteString(wgslWeights)
	b.WriteString(wgslQuants)
	b.WriteString(kt.code)
	return strings.NewReplacer(
		"THREADSu", fmt.Sprint(productThreads, "u"), "ROWSu", fmt.Sprint(productRows, "u"),
		"TILEu", fmt.Sprint(tile, "u"), "SLOTSu", fmt.Sprint(productThreads/minSubgroup, "u"),
		"CHUNKu", fmt.Sprint(kt.chunk, "u"), "BUILTINS", builtins, "REDUCE", reduce, "WORKGROUP_MEMORY", red,
	).Replace(b.String()), nil
}

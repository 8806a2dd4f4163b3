package gpu

import (
	"fmt"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Product is one matrix product for Products: Out = M·x, Out holding n·M.Rows
// f32 values, token after token (Out[t·Rows + r]).
type Product struct {
	M   *Matrix
	Out Binding
}

// Products records matrix products of one input x — a layer's q/k/v
// projections, its gate and up projections, a single matrix — into a
// Pass: x is encoded once per distinct activation encoding of the
// matrices' types (as engine/tensor's MatVecs and MatMuls encode it),
// into scratch buffers the Products owns, then each product runs on its
// type's kernel, the matrix–vector one for one token, the tiled one for a
// prompt block.
type Products struct {
	pass *Pass
	maxN int
	cols int
	encs []*encoding
	ops  []productOp
}

// encoding is x encoded for one family of kernels.
type encoding struct {
	enc        tensor.Type
	a          Binding // the encoded activation (x itself for F32)
	kernel     Kernel  // nil for F32
	bindings   Bindings
	params     Params
	offD, offS int // words of a where the scales and the sums start
	buf        Buffer
}

// productOp is one product's kernels, bound to its matrix, encoding and
// output.
type productOp struct {
	m            *Matrix
	enc          *encoding
	decode, tile Kernel
	bDecode      Bindings
	bTile        Bindings
	params       Params
}

// NewProducts prepares the products ps of the input x, which holds up to
// maxN vectors of the matrices' column count (f32, one after the other),
// in pass p. Every matrix must have the same column count. It compiles the
// kernels it needs through lib and reserves one parameter slot per
// encoding and per product.
func NewProducts(lib *Library, p *Pass, x Binding, maxN int, ps ...Product) (_ *Products, err error) {
	if len(ps) == 0 {
		return nil, fmt.Errorf("gpu: products: none given")
	}
	if maxN < 1 {
		return nil, fmt.Errorf("gpu: products: maxN %d is not positive", maxN)
	}
	for i, pr := range ps {
		if pr.M == nil {
			return nil, fmt.Errorf("gpu: products: ps[%d].M is nil", i)
		}
	}
	q := &Products{pass: p, maxN: maxN, cols: ps[0].M.Cols}
	if values(x) < maxN*q.cols {
		return nil, fmt.Errorf("gpu: products: x holds %d values, %d tokens of %d need %d", values(x), maxN, q.cols, maxN*q.cols)
	}
	defer func() {
		if err != nil {
			q.Destroy()
		}
	}()
	for i, pr := range ps {
		m := pr.M
		if m.Cols != q.cols {
			return nil, fmt.Errorf("gpu: products: ps[%d].M has %d columns, ps[0].M %d", i, m.Cols, q.cols)
		}
		kt, ok := kernelTypes[m.Type]
		if !ok {
			return nil, fmt.Errorf("%w: ps[%d].M: no product kernel for %v", ErrUnsupported, i, m.Type)
		}
		if m.Cols%kt.chunk != 0 && floatWidth(m.Type) == 0 {
			return nil, fmt.Errorf("%w: ps[%d].M: %d columns of %v are not a multiple of %d", ErrUnsupported, i, m.Cols, m.Type, kt.chunk)
		}
		if values(pr.Out) < maxN*m.Rows {
			return nil, fmt.Errorf("gpu: products: ps[%d].Out holds %d values, %d tokens of %d rows need %d", i, values(pr.Out), maxN, m.Rows, maxN*m.Rows)
		}
		e, err := q.encoding(lib, kt.enc, x)
		if err != nil {
			return nil, err
		}
		op, err := newProductOp(lib, p, pr, e, lib.Host().Adapter().Subgroups)
		if err != nil {
			return nil, fmt.Errorf("gpu: products: ps[%d]: %w", i, err)
		}
		q.ops = append(q.ops, op)
	}
	return q, nil
}

// encoding returns the products' encoding of x as enc, making it the first
// time: its scratch buffer, kernel and parameter slot.
func (q *Products) encoding(lib *Library, enc tensor.Type, x Binding) (*encoding, error) {
	for _, e := range q.encs {
		if e.enc == enc {
			return e, nil
		}
	}
	e := &encoding{enc: enc, a: x}
	if enc == tensor.F32 {
		q.encs = append(q.encs, e)
		return e, nil
	}
	n := q.maxN * q.cols // elements
	var words int
	switch enc {
	case tensor.Q8_0, tensor.Q8_1:
		e.offD, e.offS, words = n/4, n/4+n/32, n/4+n/16
	case tensor.Q8_K:
		e.offD, e.offS, words = n/4, n/4+n/256, n/4+n/256+n/16
	default: // F16, BF16: the rounded values
		words = n
	}
	src, err := encodeSource(enc)
	if err != nil {
		return nil, err
	}
	e.kernel, err = lib.Kernel("encode/"+enc.String(), src, "main")
	if err != nil {
		return nil, err
	}
	h := lib.Host()
	e.buf, err = h.NewBuffer("activation/"+enc.String(), 4*words, UsageStorage)
	if err != nil {
		return nil, err
	}
	q.encs = append(q.encs, e)
	e.a = Binding{Buffer: e.buf}
	if e.params, err = q.pass.Reserve(); err != nil {
		return nil, err
	}
	e.bindings, err = h.NewBindings(e.kernel, e.params.Binding(), x, e.a)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// newProductOp compiles (through lib) and binds the kernels of one product.
func newProductOp(lib *Library, p *Pass, pr Product, e *encoding, subgroups bool) (productOp, error) {
	op := productOp{m: pr.M, enc: e}
	var err error
	if op.params, err = p.Reserve(); err != nil {
		return op, err
	}
	for _, k := range []struct {
		tile     int
		kernel   *Kernel
		bindings *Bindings
	}{{1, &op.decode, &op.bDecode}, {productTile, &op.tile, &op.bTile}} {
		src, err := productSource(pr.M.Type, k.tile, subgroups)
		if err != nil {
			return op, err
		}
		reduce := "shared"
		if subgroups {
			reduce = "subgroups"
		}
		*k.kernel, err = lib.Kernel(fmt.Sprintf("product/%v/tile%d/%s", pr.M.Type, k.tile, reduce), src, "main")
		if err != nil {
			return op, err
		}
		*k.bindings, err = lib.Host().NewBindings(*k.kernel, op.params.Binding(), Binding{Buffer: pr.M.Buffer}, e.a, pr.Out)
		if err != nil {
			return op, err
		}
	}
	return op, nil
}

// Record records into the pass the products of the first n vectors of x
// (1 ≤ n ≤ maxN): the encodings of x, then every product.
func (q *Products) Record(n int) error {
	if n < 1 || n > q.maxN {
		return fmt.Errorf("gpu: products: n %d is outside [1, %d]", n, q.maxN)
	}
	for _, e := range q.encs {
		if e.kernel == nil {
			continue
		}
		items := encodeItems(e.enc, n, q.cols)
		x, y := grid(encodeGroups(e.enc, items))
		e.params.SetU32(0, uint32(items))
		e.params.SetU32(1, uint32(e.offD))
		e.params.SetU32(2, uint32(e.offS))
		e.params.SetU32(3, uint32(x))
		q.pass.Dispatch(e.kernel, e.bindings, x, y, 1)
	}
	for i := range q.ops {
		op := &q.ops[i]
		m := op.m
		x, y := grid((m.Rows + productRows - 1) / productRows)
		for j, v := range []int{m.Rows, m.Cols, n, m.RowBytes, (m.Cols + kernelTypes[m.Type].chunk - 1) / kernelTypes[m.Type].chunk, op.enc.offD, op.enc.offS, x} {
			op.params.SetU32(j, uint32(v))
		}
		if n == 1 {
			q.pass.Dispatch(op.decode, op.bDecode, x, y, 1)
		} else {
			q.pass.Dispatch(op.tile, op.bTile, x, y, (n+productTile-1)/productTile)
		}
	}
	return nil
}

// Destroy frees the products' scratch buffers (not the matrices, the input
// or the outputs).
func (q *Products) Destroy() {
	for _, e := range q.encs {
		if e.buf != nil {
			e.buf.Destroy()
			e.buf = nil
		}
	}
}

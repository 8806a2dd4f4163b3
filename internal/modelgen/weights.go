package modelgen

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The weights a generator draws: normal values from its seeded generator,
// matrices stored in the Spec's type (or, with Fast, quants drawn
// directly), vectors in F32.

// random draws n values from N(mean, std²).
func (g *generator) random(n int, mean, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		// The product is rounded on its own so no platform fuses it into a
		// multiply-add: the same Spec gives the same bytes everywhere.
		v[i] = float32(mean + float64(g.rng.NormFloat64()*std))
	}
	return v
}

// matrix adds a rows×cols matrix (ggml dims: cols first). output says it is
// the output projection, drawn with OutputStd, whose special rows
// MuteSpecial zeroes.
func (g *generator) matrix(name string, rows, cols int, output bool) {
	if g.headerOnly {
		t, err := g.sp.MatrixType(cols)
		if err != nil {
			g.err = cmp.Or(g.err, fmt.Errorf("%s: %w", name, err))
			return
		}
		g.emit(name, t, []uint64{uint64(cols), uint64(rows)}, nil)
		return
	}
	std := g.sp.Std
	if output {
		std = g.sp.OutputStd
	}
	if t, err := g.sp.MatrixType(cols); err == nil && g.sp.Fast && (t == tensor.Q4_0 || t == tensor.Q8_0) {
		data := g.fastQuants(t, rows, cols, std, output && g.sp.MuteSpecial)
		g.emit(name, t, []uint64{uint64(cols), uint64(rows)}, data)
		return
	}
	vals := g.random(rows*cols, 0, std)
	if output && g.sp.MuteSpecial {
		for _, id := range []int{bosID, eosID} {
			clear(vals[id*cols : (id+1)*cols])
		}
	}
	t, err := g.sp.MatrixType(cols)
	var data []byte
	if err == nil {
		data, err = encode(t, rows, cols, vals)
	}
	if err != nil {
		g.err = cmp.Or(g.err, fmt.Errorf("%s: %w", name, err))
		return
	}
	g.emit(name, t, []uint64{uint64(cols), uint64(rows)}, data)
}

// fastQuants draws a rows×cols Q4_0 or Q8_0 matrix as random quants under
// a scale that gives them about std (see Spec.Fast); mute zeroes the
// scales of BOS's and EOS's rows, as MuteSpecial asks.
func (g *generator) fastQuants(t tensor.Type, rows, cols int, std float64, mute bool) []byte {
	rb, _ := tensor.RowBytes(t, cols)
	data := make([]byte, rows*rb)
	for i := 0; i+8 <= len(data); i += 8 {
		binary.LittleEndian.PutUint64(data[i:], g.rng.Uint64())
	}
	block, scale := 18, std/4.6 // Q4_0: an f16 scale, 32 4-bit quants (-8..7, uniform: std 4.6)
	if t == tensor.Q8_0 {
		block, scale = 34, std/74 // an f16 scale, 32 int8 quants (uniform: std 74)
	}
	half, err := encode(tensor.F16, 1, 1, []float32{float32(scale)})
	if err != nil {
		g.err = cmp.Or(g.err, err)
		return data
	}
	d := binary.LittleEndian.Uint16(half)
	for r := range rows {
		for b := r * rb; b < (r+1)*rb; b += block {
			v := d
			if mute && (r == bosID || r == eosID) {
				v = 0
			}
			binary.LittleEndian.PutUint16(data[b:], v)
		}
	}
	return data
}

// vector adds an F32 vector of n values around mean.
func (g *generator) vector(name string, n int, mean float64) {
	if g.headerOnly {
		g.emit(name, tensor.F32, []uint64{uint64(n)}, nil)
		return
	}
	g.emit(name, tensor.F32, []uint64{uint64(n)}, f32Bytes(g.random(n, mean, g.sp.Std)))
}

// encode stores a rows×cols matrix as type t.
func encode(t tensor.Type, rows, cols int, vals []float32) ([]byte, error) {
	if t == tensor.F32 {
		return f32Bytes(vals), nil
	}
	rb, err := tensor.RowBytes(t, cols)
	if err != nil {
		return nil, err
	}
	data := make([]byte, rows*rb)
	return data, tensor.Quantize(t, data, vals)
}

func f32Bytes(vals []float32) []byte {
	out := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

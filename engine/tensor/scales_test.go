package tensor

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFiniteScales checks finiteScales on matrices of three rows of two
// blocks of each type with F16 scales, one block scale (or min), in each
// block in turn, set to each F16 pattern at the edge of finite: it is
// false exactly for exponent 31 (±Inf, NaN), for the matrix, for a view of
// another row (a view answers for the bytes it was cut from) and for a
// Matrix not made by NewMatrix.
func TestFiniteScales(t *testing.T) {
	patterns := []struct {
		name   string
		h      uint16
		finite bool
	}{
		{"zero", 0x0000, true},
		{"minus zero", 0x8000, true},
		{"smallest subnormal", 0x0001, true},
		{"one", 0x3c00, true},
		{"largest finite", 0x7bff, true},
		{"most negative finite", 0xfbff, true},
		{"infinity", 0x7c00, false},
		{"minus infinity", 0xfc00, false},
		{"NaN", 0x7e00, false},
		{"NaN with the lowest payload", 0x7c01, false},
		{"negative NaN", 0xffff, false},
	}
	const rows, cols = 3, 64
	for typ, offsets := range f16Scales {
		bb := layouts[typ].blockBytes
		rb, err := RowBytes(typ, cols)
		require.NoError(t, err)
		for block := range rows * rb / bb {
			for _, off := range offsets {
				for _, p := range patterns {
					data := make([]byte, rows*rb)
					for b := 0; b < len(data); b += bb {
						for _, o := range offsets {
							binary.LittleEndian.PutUint16(data[b+o:], 0x3c00)
						}
					}
					binary.LittleEndian.PutUint16(data[block*bb+off:], p.h)
					what := fmt.Sprintf("%v block %d offset %d: %s", typ, block, off, p.name)
					m, err := NewMatrix(typ, rows, cols, data)
					require.NoError(t, err)
					assert.Equal(t, p.finite, m.finiteScales(), what)
					assert.Equal(t, p.finite, m.finiteScales(), what+", the second time")
					other := (block*bb/rb + 1) % rows
					view, err := m.Slice(other, other+1)
					require.NoError(t, err)
					assert.Equal(t, p.finite, view.finiteScales(), what+", a view of another row")
					literal := Matrix{Type: typ, Rows: rows, Cols: cols, Data: data, rowBytes: rb, tr: m.tr}
					assert.Equal(t, p.finite, literal.finiteScales(), what+", a Matrix not from NewMatrix")
				}
			}
		}
	}
	m, err := NewMatrix(Q4_K, 1, qkK, make([]byte, q4KBlockBytes))
	require.NoError(t, err)
	assert.True(t, m.finiteScales(), "a type whose kernels decode every F16")
	assert.Nil(t, m.scales)
}

// BenchmarkFiniteScales times the check of a 64 MB Q4_0 matrix's scales,
// which a matrix's first matrix–vector product pays in the SIMD build.
func BenchmarkFiniteScales(b *testing.B) {
	data := make([]byte, (64<<20)/q4_0BlockBytes*q4_0BlockBytes)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if !finiteF16At(data, q4_0BlockBytes, f16Scales[Q4_0]) {
			b.Fatal("zero scales are finite")
		}
	}
}

// TestMinQuants checks minQuants on a Q8_0 matrix of three rows of two
// blocks with -128 (byte 0x80) at each quant in turn, and with 0x80 in the
// scales' bytes only (which it must not see), for the matrix, a view of
// another row and a Matrix not made by NewMatrix; and minQuant8 on
// activations of every length up to 40 with -128 at each place in turn.
func TestMinQuants(t *testing.T) {
	const rows, cols = 3, 64
	rb, err := RowBytes(Q8_0, cols)
	require.NoError(t, err)
	fresh := func() []byte {
		data := make([]byte, rows*rb)
		for i := range data {
			data[i] = byte(0x81 + i%254) // every byte but 0x80
		}
		return data
	}
	check := func(data []byte, want bool, what string) {
		m, err := NewMatrix(Q8_0, rows, cols, data)
		require.NoError(t, err)
		assert.Equal(t, want, m.minQuants(), what)
		assert.Equal(t, want, m.minQuants(), what+", the second time")
		view, err := m.Slice(1, 2)
		require.NoError(t, err)
		assert.Equal(t, want, view.minQuants(), what+", a view of another row")
		literal := Matrix{Type: Q8_0, Rows: rows, Cols: cols, Data: data, rowBytes: rb, tr: m.tr}
		assert.Equal(t, want, literal.minQuants(), what+", a Matrix not from NewMatrix")
	}
	for i := range rows * rb {
		data := fresh()
		data[i] = 0x80
		check(data, i%q8_0BlockBytes >= 2, fmt.Sprintf("0x80 at byte %d", i))
	}
	data := fresh()
	for b := 0; b < len(data); b += q8_0BlockBytes {
		data[b], data[b+1] = 0x80, 0x80
	}
	check(data, false, "0x80 in every scale")
	m, err := NewMatrix(Q4_0, 1, 32, make([]byte, q4_0BlockBytes))
	require.NoError(t, err)
	m.Data[5] = 0x80
	assert.False(t, m.minQuants(), "not Q8_0")

	for n := range 41 {
		q := make([]int8, n)
		for i := range q {
			q[i] = int8(-127 + 254*(i&1))
		}
		assert.False(t, minQuant8(q), "%d quants of ±127", n)
		for i := range q {
			q[i] = -128
			assert.True(t, minQuant8(q), "%d quants, -128 at %d", n, i)
			q[i] = 127
		}
	}
}

// BenchmarkMinQuants times the check of a 64 MB Q8_0 matrix's quants,
// which Pack runs (with finiteScales') in the SIMD build.
func BenchmarkMinQuants(b *testing.B) {
	data := make([]byte, (64<<20)/q8_0BlockBytes*q8_0BlockBytes)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if q8_0MinQuants(data) {
			b.Fatal("zero quants are not -128")
		}
	}
}

package tensor

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFiniteScales checks finiteScales on matrices of two rows of each
// type with F16 scales, one block scale (or min) set to each F16 pattern
// at the edge of finite: it is false exactly for exponent 31 (±Inf, NaN),
// for the matrix and for a view of its other row (a view answers for the
// bytes it was cut from).
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
	const cols = 64
	for typ, offsets := range f16Scales {
		bb := layouts[typ].blockBytes
		rb, err := RowBytes(typ, cols)
		require.NoError(t, err)
		for _, off := range offsets {
			for _, p := range patterns {
				data := make([]byte, 2*rb)
				for b := 0; b < len(data); b += bb {
					for _, o := range offsets {
						binary.LittleEndian.PutUint16(data[b+o:], 0x3c00)
					}
				}
				binary.LittleEndian.PutUint16(data[rb+bb+off:], p.h) // row 1, block 1
				m, err := NewMatrix(typ, 2, cols, data)
				require.NoError(t, err)
				assert.Equal(t, p.finite, m.finiteScales(), "%v offset %d: %s", typ, off, p.name)
				assert.Equal(t, p.finite, m.finiteScales(), "%v offset %d: %s, the second time", typ, off, p.name)
				row0, err := m.Slice(0, 1)
				require.NoError(t, err)
				assert.Equal(t, p.finite, row0.finiteScales(), "%v offset %d: %s, a view of the other row", typ, off, p.name)
				literal := Matrix{Type: typ, Rows: 2, Cols: cols, Data: data, rowBytes: rb, tr: m.tr}
				assert.Equal(t, p.finite, literal.finiteScales(), "%v offset %d: %s, a Matrix not from NewMatrix", typ, off, p.name)
			}
		}
	}
	m, err := NewMatrix(Q4_K, 1, qkK, make([]byte, q4KBlockBytes))
	require.NoError(t, err)
	assert.True(t, m.finiteScales(), "a type whose kernels decode every F16")
	assert.Nil(t, m.scales)
}

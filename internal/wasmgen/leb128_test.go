package wasmgen

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeUleb128 and decodeSleb128 are the decoders of the WebAssembly
// specification (5.2.2 Integers), written independently of the encoders:
// they return the value and the number of bytes read.
func decodeUleb128(b []byte) (v uint64, n int) {
	for shift := uint(0); n < len(b); shift += 7 {
		c := b[n]
		n++
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	return v, n
}

func decodeSleb128(b []byte) (v int64, n int) {
	var shift uint
	var c byte
	for n < len(b) {
		c = b[n]
		n++
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 64 && c&0x40 != 0 {
		v |= -1 << shift // sign-extend from the last byte's bit 6
	}
	return v, n
}

// The examples of the LEB128 article of Wikipedia and the edges of each
// byte count.
func TestLeb128Examples(t *testing.T) {
	for _, tc := range []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0x00}}, {1, []byte{0x01}}, {127, []byte{0x7f}}, {128, []byte{0x80, 0x01}},
		{624485, []byte{0xe5, 0x8e, 0x26}},
		{math.MaxUint32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{math.MaxUint64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	} {
		assert.Equal(t, tc.want, AppendUleb128(nil, tc.v), "%d", tc.v)
	}
	for _, tc := range []struct {
		v    int64
		want []byte
	}{
		{0, []byte{0x00}}, {-1, []byte{0x7f}}, {63, []byte{0x3f}}, {64, []byte{0xc0, 0x00}},
		{-64, []byte{0x40}}, {-65, []byte{0xbf, 0x7f}}, {-123456, []byte{0xc0, 0xbb, 0x78}},
		{math.MinInt32, []byte{0x80, 0x80, 0x80, 0x80, 0x78}}, {math.MaxInt32, []byte{0xff, 0xff, 0xff, 0xff, 0x07}},
	} {
		assert.Equal(t, tc.want, AppendSleb128(nil, tc.v), "%d", tc.v)
	}
}

// TestUleb128IsUvarint compares with encoding/binary, whose unsigned varint
// is the same encoding.
func TestUleb128IsUvarint(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 10000 {
		v := rng.Uint64() >> rng.IntN(64)
		require.Equal(t, binary.AppendUvarint(nil, v), AppendUleb128(nil, v), "%d", v)
	}
}

func FuzzLeb128(f *testing.F) {
	f.Add(uint64(0))
	f.Add(uint64(624485))
	f.Add(uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, u uint64) {
		b := AppendUleb128([]byte{0xaa}, u)[1:] // appends after what is there
		v, n := decodeUleb128(b)
		require.Equal(t, u, v)
		require.Equal(t, len(b), n)
		require.Equal(t, binary.AppendUvarint(nil, u), b)

		s := int64(u)
		b = AppendSleb128(nil, s)
		w, n := decodeSleb128(b)
		require.Equal(t, s, w)
		require.Equal(t, len(b), n)
		// Shortest form: without its last byte, the rest would not be a
		// complete encoding of the same value.
		if len(b) > 1 {
			last := b[len(b)-2] &^ 0x80
			shorter, _ := decodeSleb128(append(b[:len(b)-2:len(b)-2], last))
			require.NotEqual(t, s, shorter, "% x is not the shortest encoding", b)
		}
	})
}

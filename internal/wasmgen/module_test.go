package wasmgen

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected bytes below are assembled by hand from the binary format
// chapter of the WebAssembly specification, section by section.

func TestEmptyModule(t *testing.T) {
	b, err := NewModule().Bytes()
	require.NoError(t, err)
	assert.Equal(t, []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}, b) // "\0asm", version 1
}

func TestModuleBytes(t *testing.T) {
	m := NewModule()
	m.ImportMemory("go", "mem", 1)
	f := m.Func("get", []ValType{I32}, []ValType{F32})
	f.Local(I32)
	f.Local(I32)
	f.Local(V128)
	l := f.Local(I32)
	f.Set(l, Get(f.Param(0)))
	F32Load(Get(l), 4)(f)
	g := m.Func("nop", nil, nil)
	g.Return()

	b, err := m.Bytes()
	require.NoError(t, err)
	want := []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		// type section: 2 types, (i32) -> (f32) and () -> ()
		0x01, 0x09, 0x02, 0x60, 0x01, 0x7f, 0x01, 0x7d, 0x60, 0x00, 0x00,
		// import section: 1 import, "go" "mem", memory, limits min 1 no max
		0x02, 0x0b, 0x01, 0x02, 'g', 'o', 0x03, 'm', 'e', 'm', 0x02, 0x00, 0x01,
		// function section: 2 functions of types 0 and 1
		0x03, 0x03, 0x02, 0x00, 0x01,
		// export section: "get" func 0, "nop" func 1
		0x07, 0x0d, 0x02, 0x03, 'g', 'e', 't', 0x00, 0x00, 0x03, 'n', 'o', 'p', 0x00, 0x01,
		// code section: 2 bodies
		0x0a, 0x17, 0x02,
		// body 0 (0x11 bytes): locals 2×i32, 1×v128, 1×i32; local.get 0,
		// local.set 4, local.get 4, f32.load align 2 offset 4, end
		0x11, 0x03, 0x02, 0x7f, 0x01, 0x7b, 0x01, 0x7f,
		0x20, 0x00, 0x21, 0x04, 0x20, 0x04, 0x2a, 0x02, 0x04, 0x0b,
		// body 1 (3 bytes): no locals, return, end
		0x03, 0x00, 0x0f, 0x0b,
	}
	assert.Equal(t, want, b)
}

// TestInstructionEncodings checks instructions with immediates against
// their encodings in the specification.
func TestInstructionEncodings(t *testing.T) {
	for _, tc := range []struct {
		name string
		emit func(f *Func)
		want []byte
	}{
		{"i32.const -1", func(f *Func) { I32Const(-1)(f) }, []byte{0x41, 0x7f}},
		{"i32.const 624485", func(f *Func) { I32Const(624485)(f) }, []byte{0x41, 0xe5, 0x8e, 0x26}},
		{"f32.const 1", func(f *Func) { F32Const(1)(f) }, []byte{0x43, 0x00, 0x00, 0x80, 0x3f}},
		{"v128.const", func(f *Func) { I32x4Const([4]uint32{1, 2, 3, 0x04030201})(f) },
			[]byte{0xfd, 0x0c, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 2, 3, 4}},
		{"i8x16.shuffle", func(f *Func) {
			I8x16Shuffle(Get(0), Get(1), [16]uint8{0, 17, 2, 19, 4, 21, 6, 23, 8, 25, 10, 27, 12, 29, 14, 31})(f)
		}, []byte{0x20, 0x00, 0x20, 0x01, 0xfd, 0x0d, 0, 17, 2, 19, 4, 21, 6, 23, 8, 25, 10, 27, 12, 29, 14, 31}},
		{"i8x16.swizzle", func(f *Func) { I8x16Swizzle(Get(0), Get(1))(f) }, []byte{0x20, 0x00, 0x20, 0x01, 0xfd, 0x0e}},
		// SIMD opcodes above 127 take two LEB128 bytes.
		{"i32x4.dot_i16x8_s", func(f *Func) { I32x4DotI16x8S(Get(0), Get(1))(f) }, []byte{0x20, 0x00, 0x20, 0x01, 0xfd, 0xba, 0x01}},
		{"v128.load offset 200", func(f *Func) { V128Load(Get(0), 200)(f) }, []byte{0x20, 0x00, 0xfd, 0x00, 0x04, 0xc8, 0x01}},
		{"v128.load16_lane", func(f *Func) { V128Load16Lane(Get(0), 6, Get(1), 5)(f) },
			[]byte{0x20, 0x00, 0x20, 0x01, 0xfd, 0x55, 0x01, 0x06, 0x05}},
		{"v128.store32_lane", func(f *Func) { f.V128Store32Lane(Get(0), 8, Get(1), 3) },
			[]byte{0x20, 0x00, 0x20, 0x01, 0xfd, 0x5a, 0x02, 0x08, 0x03}},
		{"f32x4.replace_lane", func(f *Func) { F32x4ReplaceLane(Get(0), 2, Get(1))(f) },
			[]byte{0x20, 0x00, 0x20, 0x01, 0xfd, 0x20, 0x02}},
		{"block br_if", func(f *Func) { f.Block(func() { f.BrIf(0, Get(0)) }) },
			[]byte{0x02, 0x40, 0x20, 0x00, 0x0d, 0x00, 0x0b}},
		{"if else", func(f *Func) { f.IfElse(Get(0), func() { f.Return() }, func() { f.Drop(Get(1)) }) },
			[]byte{0x20, 0x00, 0x04, 0x40, 0x0f, 0x05, 0x20, 0x01, 0x1a, 0x0b}},
		{"local.tee", func(f *Func) { f.Drop(Tee(3, Get(0))) }, []byte{0x20, 0x00, 0x22, 0x03, 0x1a}},
	} {
		f := NewModule().Func("f", []ValType{I32, I32}, nil)
		tc.emit(f)
		assert.Equal(t, tc.want, f.body, tc.name)
	}
}

func TestStructureErrors(t *testing.T) {
	m := NewModule()
	f := m.Func("f", nil, nil)
	f.Block(func() { f.Br(1) }) // only one label encloses it
	_, err := m.Bytes()
	require.ErrorIs(t, err, ErrStructure)

	m = NewModule()
	m.Func("f", nil, nil)
	m.Func("f", nil, nil)
	_, err = m.Bytes()
	require.ErrorIs(t, err, ErrDuplicate)
}

// TestGlobals checks the global section: one mutable v128 global per
// distinct value, v128.const as its initializer, and global.get's encoding.
func TestGlobals(t *testing.T) {
	m := NewModule()
	var v, w [16]uint8
	for i := range v {
		v[i], w[i] = byte(i), 0xff
	}
	require.Equal(t, uint32(0), m.GlobalV128(v))
	require.Equal(t, uint32(1), m.GlobalV128(w))
	require.Equal(t, uint32(0), m.GlobalV128(v), "the same value, the same global")
	f := m.Func("g", nil, nil)
	f.V128Store(I32Const(0), 0, GlobalGet(1))
	b, err := m.Bytes()
	require.NoError(t, err)
	section := []byte{0x06, 0x2b, 0x02, 0x7b, 0x01, 0xfd, 0x0c}
	section = append(append(section, v[:]...), 0x0b, 0x7b, 0x01, 0xfd, 0x0c)
	section = append(append(section, w[:]...), 0x0b)
	assert.True(t, bytes.Contains(b, section), "global section")
	assert.True(t, bytes.Contains(b, []byte{0x41, 0x00, 0x23, 0x01, 0xfd, 0x0b}), "i32.const 0, global.get 1, v128.store")
}

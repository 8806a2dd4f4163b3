package tensor

import (
	"fmt"
	"math"
)

// Type is a storage type, numbered as GGUF/ggml number them (ggml_type).
type Type uint32

// The ggml type ids. Only types with an entry in the traits table can be
// computed with; the others exist so errors can name what a file holds.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q8_1 Type = 9
	Q2_K Type = 10
	Q3_K Type = 11
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	Q8_K Type = 15
	BF16 Type = 30
	// MXFP4 is OCP's microscaling FP4 (gpt-oss's experts): E2M1 codes under
	// one E8M0 exponent per block of 32.
	MXFP4 Type = 39
)

// layout is how a type stores elements: blockSize elements in blockBytes bytes.
type layout struct {
	name                  string
	blockSize, blockBytes int
}

// layouts has every type ggml defines, including those without kernels here,
// so that a container reader can size any tensor and errors can name any type.
// Sizes follow ggml's block structs (ggml-common.h).
var layouts = map[Type]layout{
	F32: {"F32", 1, 4}, F16: {"F16", 1, 2}, BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18}, Q4_1: {"Q4_1", 32, 20},
	Q5_0: {"Q5_0", 32, 22}, Q5_1: {"Q5_1", 32, 24},
	Q8_0: {"Q8_0", 32, 34}, Q8_1: {"Q8_1", 32, 36},
	Q2_K: {"Q2_K", 256, 84}, Q3_K: {"Q3_K", 256, 110}, Q4_K: {"Q4_K", 256, 144},
	Q5_K: {"Q5_K", 256, 176}, Q6_K: {"Q6_K", 256, 210}, Q8_K: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66}, 17: {"IQ2_XS", 256, 74}, 18: {"IQ3_XXS", 256, 98},
	19: {"IQ1_S", 256, 50}, 20: {"IQ4_NL", 32, 18}, 21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82}, 23: {"IQ4_XS", 256, 136}, 24: {"I8", 1, 1},
	25: {"I16", 1, 2}, 26: {"I32", 1, 4}, 27: {"I64", 1, 8}, 28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56}, 34: {"TQ1_0", 256, 54}, 35: {"TQ2_0", 256, 66},
	MXFP4: {"MXFP4", 32, 17},
}

// String is the type's ggml name, or "type(N)" for an id ggml does not define.
func (t Type) String() string {
	if l, ok := layouts[t]; ok {
		return l.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether t is a type ggml defines (whether or not this package
// has kernels for it).
func Known(t Type) bool {
	_, ok := layouts[t]
	return ok
}

// traits are the kernels of a type this package computes with.
type traits struct {
	// vec is how the activation is encoded before dot products with rows of
	// this type, as ggml's vec_dot_type: F32 (x as is), F16 or BF16 (x rounded
	// to that type), Q8_0, Q8_1 or Q8_K (x quantized per block).
	vec Type
	// dot returns the dot product of one stored row (whole blocks) with the
	// activation encoded as vec.
	dot func(row []byte, a *activation) float32
	// dotRows, if the type has one, sets out[t·stride] to dot(row,
	// &acts[t]) for every t, bit for bit, faster than calling dot for each
	// (decoding the row once for all the vectors of a block).
	dotRows func(out []float32, stride int, row []byte, acts []activation)
	// pack, if dotRows reads the activations' quants packed into lanes
	// (intdot.go), packs an activation encoded as vec so, once per encoding.
	pack func(a *activation)
	// dequantize writes len(dst) elements decoded from src (whole blocks).
	dequantize func(dst []float32, src []byte)
	// quantize encodes src (whole blocks) into dst, which holds exactly the
	// bytes of len(src) elements.
	quantize func(dst []byte, src []float32)
}

// traitsTable has one entry per type this package computes with; each
// format's file registers itself in its init function.
var traitsTable = map[Type]*traits{}

func lookup(t Type) (*traits, error) {
	tr, ok := traitsTable[t]
	if !ok {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedType, t)
	}
	return tr, nil
}

// Supported reports whether this package has kernels for type t.
func Supported(t Type) bool {
	_, ok := traitsTable[t]
	return ok
}

// BlockSize is the number of elements in one block of type t.
func BlockSize(t Type) (int, error) {
	l, ok := layouts[t]
	if !ok {
		return 0, fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	return l.blockSize, nil
}

// RowBytes is the number of bytes a row of cols elements of type t takes.
// cols must be a positive multiple of the type's block size. It works for
// every type ggml defines, with or without kernels here.
func RowBytes(t Type, cols int) (int, error) {
	l, ok := layouts[t]
	if !ok {
		return 0, fmt.Errorf("%w: %v", ErrUnknownType, t)
	}
	if cols <= 0 || cols%l.blockSize != 0 {
		return 0, fmt.Errorf("%w: %d columns is not a positive multiple of %v's block size %d", ErrShape, cols, t, l.blockSize)
	}
	n := cols / l.blockSize
	if n > math.MaxInt/l.blockBytes {
		return 0, fmt.Errorf("%w: %d columns of %v overflow", ErrShape, cols, t)
	}
	return n * l.blockBytes, nil
}

package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type of a metadata value, numbered as GGUF numbers them.
type ValueType uint32

// The metadata value types of GGUF.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16",
	TypeUint32: "uint32", TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "uint64", TypeInt64: "int64",
	TypeFloat64: "float64",
}

// String is the type's name ("uint32", "string", ...) or "type(N)" for an
// id GGUF does not define.
func (t ValueType) String() string {
	if t.valid() {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

func (t ValueType) valid() bool { return t <= TypeFloat64 }

// size is the encoded size of a fixed-size type, 0 for strings and arrays.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	}
	return 0
}

// minSize is the fewest bytes one value of type t takes in a file: what an
// array's element count is checked against before anything is allocated.
func (t ValueType) minSize() int {
	switch t {
	case TypeString:
		return 8 // u64 length
	case TypeArray:
		return 12 // u32 element type + u64 count
	}
	return t.size()
}

func (t ValueType) isInteger() bool {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeUint64, TypeInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// Scalar is the set of Go types a GGUF scalar value or array element can be
// built from; each maps to one ValueType.
type Scalar interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | float32 | bool | string | uint64 | int64 | float64
}

// Value is one metadata value: a scalar, a string, or an array of one element
// type. The zero Value is the uint8 0. Values are immutable; slices returned
// by the accessors are shared and must not be modified.
type Value struct {
	typ  ValueType
	elem ValueType // element type when typ == TypeArray
	bits uint64    // integer (sign-extended), float (IEEE bits) or bool payload
	str  string
	arr  any // []uint8 ... []float64, []bool, []string, or []Value for arrays of arrays
}

// KV is one metadata key and its value.
type KV struct {
	Key   string
	Value Value
}

// ValueOf returns the scalar value x with the GGUF type matching its Go type.
func ValueOf[T Scalar](x T) Value {
	switch x := any(x).(type) {
	case uint8:
		return Value{typ: TypeUint8, bits: uint64(x)}
	case int8:
		return Value{typ: TypeInt8, bits: uint64(int64(x))}
	case uint16:
		return Value{typ: TypeUint16, bits: uint64(x)}
	case int16:
		return Value{typ: TypeInt16, bits: uint64(int64(x))}
	case uint32:
		return Value{typ: TypeUint32, bits: uint64(x)}
	case int32:
		return Value{typ: TypeInt32, bits: uint64(int64(x))}
	case float32:
		return Value{typ: TypeFloat32, bits: uint64(math.Float32bits(x))}
	case bool:
		var b uint64
		if x {
			b = 1
		}
		return Value{typ: TypeBool, bits: b}
	case string:
		return Value{typ: TypeString, str: x}
	case uint64:
		return Value{typ: TypeUint64, bits: x}
	case int64:
		return Value{typ: TypeInt64, bits: uint64(x)}
	case float64:
		return Value{typ: TypeFloat64, bits: math.Float64bits(x)}
	}
	return Value{} // unreachable: Scalar lists exactly the cases above
}

// ArrayOf returns an array value whose elements are xs, with the GGUF element
// type matching T. The slice is kept, not copied.
func ArrayOf[T Scalar](xs []T) Value {
	if xs == nil {
		xs = []T{} // a parsed empty array is empty, not nil: keep them equal
	}
	var elem ValueType
	switch any(xs).(type) {
	case []uint8:
		elem = TypeUint8
	case []int8:
		elem = TypeInt8
	case []uint16:
		elem = TypeUint16
	case []int16:
		elem = TypeInt16
	case []uint32:
		elem = TypeUint32
	case []int32:
		elem = TypeInt32
	case []float32:
		elem = TypeFloat32
	case []bool:
		elem = TypeBool
	case []string:
		elem = TypeString
	case []uint64:
		elem = TypeUint64
	case []int64:
		elem = TypeInt64
	case []float64:
		elem = TypeFloat64
	}
	return Value{typ: TypeArray, elem: elem, arr: xs}
}

// ArrayOfArrays returns an array whose elements are themselves arrays (of
// any element types). Every element must be an array value; the Builder
// reports an error otherwise.
func ArrayOfArrays(elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{typ: TypeArray, elem: TypeArray, arr: elems}
}

// Type is the value's type.
func (v Value) Type() ValueType { return v.typ }

// ElemType is the element type of an array; ok is false for other values.
func (v Value) ElemType() (elem ValueType, ok bool) {
	if v.typ != TypeArray {
		return 0, false
	}
	return v.elem, true
}

// Len is the number of elements of an array, 0 for other values.
func (v Value) Len() int {
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// Any returns the value as a Go value of the matching type: uint8 ... float64,
// bool, string for scalars; []uint8 ... []float64, []bool, []string for
// arrays, and []Value for arrays of arrays. Slices are shared.
func (v Value) Any() any {
	switch v.typ {
	case TypeUint8:
		return uint8(v.bits)
	case TypeInt8:
		return int8(v.bits)
	case TypeUint16:
		return uint16(v.bits)
	case TypeInt16:
		return int16(v.bits)
	case TypeUint32:
		return uint32(v.bits)
	case TypeInt32:
		return int32(v.bits)
	case TypeFloat32:
		return math.Float32frombits(uint32(v.bits))
	case TypeBool:
		return v.bits != 0
	case TypeString:
		return v.str
	case TypeUint64:
		return v.bits
	case TypeInt64:
		return int64(v.bits)
	case TypeFloat64:
		return math.Float64frombits(v.bits)
	}
	return v.arr
}

// AsString returns a string value.
func (v Value) AsString() (string, bool) { return v.str, v.typ == TypeString }

// AsBool returns a bool value.
func (v Value) AsBool() (bool, bool) { return v.bits != 0, v.typ == TypeBool }

// AsUint64 returns an integer value of any integer type if it is not negative.
func (v Value) AsUint64() (uint64, bool) {
	if !v.typ.isInteger() || (v.typ.isSigned() && int64(v.bits) < 0) {
		return 0, false
	}
	return v.bits, true
}

// AsInt64 returns an integer value of any integer type if it fits an int64.
func (v Value) AsInt64() (int64, bool) {
	if !v.typ.isInteger() || (v.typ == TypeUint64 && v.bits > math.MaxInt64) {
		return 0, false
	}
	return int64(v.bits), true
}

// AsFloat64 returns a float32 or float64 value.
func (v Value) AsFloat64() (float64, bool) {
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Strings returns the elements of a string array (shared, not copied).
func (v Value) Strings() ([]string, bool) { a, ok := v.arr.([]string); return a, ok }

// Float32s returns the elements of a float32 array (shared, not copied).
func (v Value) Float32s() ([]float32, bool) { a, ok := v.arr.([]float32); return a, ok }

// Int32s returns the elements of an int32 array (shared, not copied).
func (v Value) Int32s() ([]int32, bool) { a, ok := v.arr.([]int32); return a, ok }

// Uint32s returns the elements of a uint32 array (shared, not copied).
func (v Value) Uint32s() ([]uint32, bool) { a, ok := v.arr.([]uint32); return a, ok }

// Arrays returns the elements of an array of arrays (shared, not copied).
func (v Value) Arrays() ([]Value, bool) { a, ok := v.arr.([]Value); return a, ok }

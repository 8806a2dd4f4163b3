package gguf

import (
	"fmt"
	"math"
)

// KVs returns the metadata in file order. The slice is a copy; the values
// share their arrays with the File.
func (f *File) KVs() []KV { return append([]KV(nil), f.kvs...) }

// Lookup returns the value of key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.kvs[i].Value, true
}

// Tensors returns the tensor infos in file order (a copy of the list; Dims
// and Data are shared).
func (f *File) Tensors() []TensorInfo { return append([]TensorInfo(nil), f.tensors...) }

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.tensors[i], true
}

// get returns the value of key converted by conv, or an error naming the key:
// ErrNotFound when it is missing, ErrType when conv refuses it.
func get[T any](f *File, key, want string, conv func(Value) (T, bool)) (T, error) {
	var zero T
	v, ok := f.Lookup(key)
	if !ok {
		return zero, fmt.Errorf("%w: %q", ErrNotFound, key)
	}
	x, ok := conv(v)
	if !ok {
		return zero, typeError(key, v, want)
	}
	return x, nil
}

// getOr is get with a default for a missing key; a present key of the wrong
// type is still an error.
func getOr[T any](f *File, key, want string, def T, conv func(Value) (T, bool)) (T, error) {
	if _, ok := f.Lookup(key); !ok {
		return def, nil
	}
	return get(f, key, want, conv)
}

func typeError(key string, v Value, want string) error {
	if v.typ.isInteger() && v.typ.isSigned() {
		return fmt.Errorf("%w: %q is %s %d, want %s", ErrType, key, v.typ, int64(v.bits), want)
	}
	if v.typ.isInteger() {
		return fmt.Errorf("%w: %q is %s %d, want %s", ErrType, key, v.typ, v.bits, want)
	}
	if v.typ == TypeArray {
		return fmt.Errorf("%w: %q is an array of %s, want %s", ErrType, key, v.elem, want)
	}
	return fmt.Errorf("%w: %q is %s, want %s", ErrType, key, v.typ, want)
}

func asUint32(v Value) (uint32, bool) {
	x, ok := v.AsUint64()
	return uint32(x), ok && x <= math.MaxUint32
}

func asInt32(v Value) (int32, bool) {
	x, ok := v.AsInt64()
	return int32(x), ok && x >= math.MinInt32 && x <= math.MaxInt32
}

func asFloat32(v Value) (float32, bool) {
	x, ok := v.AsFloat64()
	return float32(x), ok
}

// String returns the string value of key.
func (f *File) String(key string) (string, error) {
	return get(f, key, "string", Value.AsString)
}

// Bool returns the bool value of key.
func (f *File) Bool(key string) (bool, error) {
	return get(f, key, "bool", Value.AsBool)
}

// Uint32 returns the value of key, which may be of any integer type whose
// value fits a uint32.
func (f *File) Uint32(key string) (uint32, error) {
	return get(f, key, "an integer in uint32 range", asUint32)
}

// Int32 returns the value of key, which may be of any integer type whose
// value fits an int32.
func (f *File) Int32(key string) (int32, error) {
	return get(f, key, "an integer in int32 range", asInt32)
}

// Uint64 returns the value of key, which may be of any integer type whose
// value is not negative.
func (f *File) Uint64(key string) (uint64, error) {
	return get(f, key, "a non-negative integer", Value.AsUint64)
}

// Int64 returns the value of key, which may be of any integer type whose
// value fits an int64.
func (f *File) Int64(key string) (int64, error) {
	return get(f, key, "an integer in int64 range", Value.AsInt64)
}

// Float32 returns the value of key, a float32 or a float64 (rounded).
func (f *File) Float32(key string) (float32, error) {
	return get(f, key, "float32", asFloat32)
}

// Strings returns the string array of key (shared, not copied).
func (f *File) Strings(key string) ([]string, error) {
	return get(f, key, "an array of string", Value.Strings)
}

// Float32s returns the float32 array of key (shared, not copied).
func (f *File) Float32s(key string) ([]float32, error) {
	return get(f, key, "an array of float32", Value.Float32s)
}

// Int32s returns the int32 array of key (shared, not copied).
func (f *File) Int32s(key string) ([]int32, error) {
	return get(f, key, "an array of int32", Value.Int32s)
}

// StringOr is String with def for a missing key.
func (f *File) StringOr(key, def string) (string, error) {
	return getOr(f, key, "string", def, Value.AsString)
}

// BoolOr is Bool with def for a missing key.
func (f *File) BoolOr(key string, def bool) (bool, error) {
	return getOr(f, key, "bool", def, Value.AsBool)
}

// Uint32Or is Uint32 with def for a missing key.
func (f *File) Uint32Or(key string, def uint32) (uint32, error) {
	return getOr(f, key, "an integer in uint32 range", def, asUint32)
}

// Int32Or is Int32 with def for a missing key.
func (f *File) Int32Or(key string, def int32) (int32, error) {
	return getOr(f, key, "an integer in int32 range", def, asInt32)
}

// Uint64Or is Uint64 with def for a missing key.
func (f *File) Uint64Or(key string, def uint64) (uint64, error) {
	return getOr(f, key, "a non-negative integer", def, Value.AsUint64)
}

// Float32Or is Float32 with def for a missing key.
func (f *File) Float32Or(key string, def float32) (float32, error) {
	return getOr(f, key, "float32", def, asFloat32)
}

package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// index returns element i of an array as a Value (i must be in range).
func (v Value) index(i int) Value {
	switch a := v.arr.(type) {
	case []uint8:
		return ValueOf(a[i])
	case []int8:
		return ValueOf(a[i])
	case []uint16:
		return ValueOf(a[i])
	case []int16:
		return ValueOf(a[i])
	case []uint32:
		return ValueOf(a[i])
	case []int32:
		return ValueOf(a[i])
	case []float32:
		return ValueOf(a[i])
	case []bool:
		return ValueOf(a[i])
	case []string:
		return ValueOf(a[i])
	case []uint64:
		return ValueOf(a[i])
	case []int64:
		return ValueOf(a[i])
	case []float64:
		return ValueOf(a[i])
	case []Value:
		return a[i]
	}
	return Value{}
}

// Summarize returns v as a Go value that encoding/json can encode: a number,
// string or bool for a scalar; a []any for an array of at most maxElems
// elements; and for a longer array a map {"type": element type, "len": length,
// "head": the first maxElems elements}. Non-finite floats, which JSON cannot
// hold, become the strings "NaN", "+Inf" and "-Inf".
func (v Value) Summarize(maxElems int) any {
	switch v.typ {
	case TypeFloat32, TypeFloat64:
		x, _ := v.AsFloat64()
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return v.Any()
	case TypeArray:
	default:
		return v.Any()
	}
	n := v.Len()
	head := make([]any, min(n, max(maxElems, 0)))
	for i := range head {
		head[i] = v.index(i).Summarize(maxElems)
	}
	if n <= maxElems {
		return head
	}
	return map[string]any{"type": v.elem.String(), "len": n, "head": head}
}

// Summary returns all metadata as a map from key to Value.Summarize(maxElems),
// ready for encoding/json (which orders the keys).
func (f *File) Summary(maxElems int) map[string]any {
	m := make(map[string]any, len(f.kvs))
	for _, kv := range f.kvs {
		m[kv.Key] = kv.Value.Summarize(maxElems)
	}
	return m
}

// String renders v for people: strings quoted, arrays as their first few
// elements and their length.
func (v Value) String() string {
	switch v.typ {
	case TypeString:
		return strconv.Quote(v.str)
	case TypeArray:
	default:
		return fmt.Sprint(v.Summarize(0))
	}
	const shown = 8
	n := v.Len()
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range min(n, shown) {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(v.index(i).String())
	}
	if n > shown {
		sb.WriteString(" ...")
	}
	fmt.Fprintf(&sb, "] (%d %s)", n, v.elem)
	return sb.String()
}

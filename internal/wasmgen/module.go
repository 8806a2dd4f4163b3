package wasmgen

import (
	"fmt"
	"slices"
)

// ValType is a WebAssembly value type, by its binary encoding.
type ValType byte

// The value types.
const (
	I32  ValType = 0x7f
	I64  ValType = 0x7e
	F32  ValType = 0x7d
	F64  ValType = 0x7c
	V128 ValType = 0x7b
)

// Section ids (spec 5.5.2).
const (
	secType     = 1
	secImport   = 2
	secFunction = 3
	secGlobal   = 6
	secExport   = 7
	secCode     = 10
)

// Module is a WebAssembly module under construction: at most one imported
// memory and any number of exported functions.
type Module struct {
	memory  *memoryImport
	funcs   []*Func
	globals [][16]uint8 // mutable v128 globals' initial values
}

type memoryImport struct {
	module, name string
	minPages     uint32
}

type funcType struct {
	params, results []ValType
}

// NewModule returns an empty module.
func NewModule() *Module {
	return &Module{}
}

// ImportMemory makes the module import its memory (index 0) as
// module.name, with at least minPages pages of 64 KiB and no maximum, so
// that any memory of that size or larger, growable without limit, matches.
func (m *Module) ImportMemory(module, name string, minPages uint32) {
	m.memory = &memoryImport{module, name, minPages}
}

// Func adds a function exported as name with the given parameter and result
// types and returns it for its body to be emitted.
func (m *Module) Func(name string, params, results []ValType) *Func {
	f := &Func{name: name, typ: funcType{slices.Clone(params), slices.Clone(results)}}
	m.funcs = append(m.funcs, f)
	return f
}

// GlobalV128 returns the index of a mutable v128 global whose initial
// value is v, added if the module has none yet. Nothing in this package
// writes one: it is a constant an engine cannot fold (see GlobalGet).
func (m *Module) GlobalV128(v [16]uint8) uint32 {
	if i := slices.Index(m.globals, v); i >= 0 {
		return uint32(i)
	}
	m.globals = append(m.globals, v)
	return uint32(len(m.globals) - 1)
}

// Bytes encodes the module. It fails if a function's structure is
// unbalanced or two functions share an export name.
func (m *Module) Bytes() ([]byte, error) {
	var types []funcType
	typeIndex := make([]int, len(m.funcs))
	names := map[string]bool{}
	for i, f := range m.funcs {
		if f.err != nil {
			return nil, fmt.Errorf("function %s: %w", f.name, f.err)
		}
		if f.depth != 0 {
			return nil, fmt.Errorf("%w: function %s has %d unclosed blocks", ErrStructure, f.name, f.depth)
		}
		if names[f.name] {
			return nil, fmt.Errorf("%w: %s", ErrDuplicate, f.name)
		}
		names[f.name] = true
		typeIndex[i] = slices.IndexFunc(types, func(t funcType) bool {
			return slices.Equal(t.params, f.typ.params) && slices.Equal(t.results, f.typ.results)
		})
		if typeIndex[i] < 0 {
			typeIndex[i] = len(types)
			types = append(types, f.typ)
		}
	}

	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = appendSection(out, secType, len(types), func(b []byte) []byte {
		for _, t := range types {
			b = append(b, 0x60)
			b = appendVec(b, t.params)
			b = appendVec(b, t.results)
		}
		return b
	})
	if m.memory != nil {
		out = appendSection(out, secImport, 1, func(b []byte) []byte {
			b = appendName(b, m.memory.module)
			b = appendName(b, m.memory.name)
			b = append(b, 0x02, 0x00) // memory, limits without a maximum
			return AppendUleb128(b, uint64(m.memory.minPages))
		})
	}
	out = appendSection(out, secFunction, len(m.funcs), func(b []byte) []byte {
		for _, ti := range typeIndex {
			b = AppendUleb128(b, uint64(ti))
		}
		return b
	})
	if len(m.globals) > 0 {
		out = appendSection(out, secGlobal, len(m.globals), func(b []byte) []byte {
			for _, v := range m.globals {
				b = append(b, byte(V128), 0x01, prefixSIMD) // v128, mutable; v128.const v, end
				b = AppendUleb128(b, simdV128Const)
				b = append(b, v[:]...)
				b = append(b, opEnd)
			}
			return b
		})
	}
	out = appendSection(out, secExport, len(m.funcs), func(b []byte) []byte {
		for i, f := range m.funcs {
			b = appendName(b, f.name)
			b = append(b, 0x00) // a function
			b = AppendUleb128(b, uint64(i))
		}
		return b
	})
	out = appendSection(out, secCode, len(m.funcs), func(b []byte) []byte {
		for _, f := range m.funcs {
			body := f.appendLocals(nil)
			body = append(body, f.body...)
			body = append(body, opEnd)
			b = AppendUleb128(b, uint64(len(body)))
			b = append(b, body...)
		}
		return b
	})
	return out, nil
}

// appendSection appends a section: its id, its byte size, the count of its
// entries, then the entries that content appends.
func appendSection(b []byte, id byte, count int, content func([]byte) []byte) []byte {
	if count == 0 {
		return b
	}
	payload := content(AppendUleb128(nil, uint64(count)))
	b = append(b, id)
	b = AppendUleb128(b, uint64(len(payload)))
	return append(b, payload...)
}

func appendVec(b []byte, ts []ValType) []byte {
	b = AppendUleb128(b, uint64(len(ts)))
	for _, t := range ts {
		b = append(b, byte(t))
	}
	return b
}

func appendName(b []byte, s string) []byte {
	b = AppendUleb128(b, uint64(len(s)))
	return append(b, s...)
}

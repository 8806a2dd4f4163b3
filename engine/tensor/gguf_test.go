package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A minimal GGUF v3 reader for tests only (the engine has its own): it walks
// the header to list tensors with their type, dimensions and data.

type ggufTensor struct {
	name string
	typ  Type
	dims []uint64 // dims[0] is the row length (ggml ne[0])
	data []byte
}

type ggufReader struct {
	b   []byte
	off int
	err error
}

func (r *ggufReader) next(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.err = errors.New("gguf: truncated")
		return make([]byte, max(n, 0))
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *ggufReader) u32() uint32 { return binary.LittleEndian.Uint32(r.next(4)) }
func (r *ggufReader) u64() uint64 { return binary.LittleEndian.Uint64(r.next(8)) }

func (r *ggufReader) str() string {
	n := r.u64()
	if n > 1<<20 {
		r.err = errors.New("gguf: string too long")
		return ""
	}
	return string(r.next(int(n)))
}

// skipValue skips a metadata value of GGUF type vt, returning it as uint64
// for integer types (for general.alignment).
func (r *ggufReader) skipValue(vt uint32) uint64 {
	sizes := map[uint32]int{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch vt {
	case 8:
		r.str()
	case 9:
		et, n := r.u32(), r.u64()
		if n > 1<<24 {
			r.err = errors.New("gguf: array too long")
			return 0
		}
		for range n {
			r.skipValue(et)
		}
	default:
		size, ok := sizes[vt]
		if !ok {
			r.err = fmt.Errorf("gguf: value type %d", vt)
			return 0
		}
		var v uint64
		for i, c := range r.next(size) {
			v |= uint64(c) << (8 * i)
		}
		return v
	}
	return 0
}

func parseGGUF(b []byte) (map[string]ggufTensor, error) {
	r := &ggufReader{b: b}
	if string(r.next(4)) != "GGUF" || r.u32() != 3 {
		return nil, errors.New("gguf: not a GGUF v3 file")
	}
	nt, nkv := r.u64(), r.u64()
	align := uint64(32)
	for range nkv {
		key, vt := r.str(), r.u32()
		if v := r.skipValue(vt); key == "general.alignment" {
			align = v
		}
	}
	type info struct {
		t   ggufTensor
		off uint64
	}
	var infos []info
	for range nt {
		var t ggufTensor
		t.name = r.str()
		nd := r.u32()
		for range nd {
			t.dims = append(t.dims, r.u64())
		}
		t.typ = Type(r.u32())
		infos = append(infos, info{t, r.u64()})
	}
	if r.err != nil {
		return nil, r.err
	}
	start := (uint64(r.off) + align - 1) / align * align
	out := map[string]ggufTensor{}
	for _, in := range infos {
		n := uint64(1)
		for _, d := range in.t.dims[1:] {
			n *= d
		}
		rb, err := RowBytes(in.t.typ, int(in.t.dims[0]))
		if err != nil {
			return nil, err
		}
		end := start + in.off + n*uint64(rb)
		if end > uint64(len(b)) {
			return nil, fmt.Errorf("gguf: tensor %s beyond the file", in.t.name)
		}
		in.t.data = b[start+in.off : end]
		out[in.t.name] = in.t
	}
	return out, nil
}

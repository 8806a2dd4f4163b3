package gguf

import (
	"fmt"
	"math"
)

// SplitOptions are llama-gguf-split's --split options. The zero value
// splits as the tool does when given none: at most 128 tensors a part.
type SplitOptions struct {
	// MaxTensors is --split-max-tensors: a new part starts at every
	// MaxTensors-th tensor (0: DefaultSplitMaxTensors).
	MaxTensors int
	// MaxBytes is --split-max-size, in bytes (the tool's "500M" is
	// 500,000,000): a new part starts where the tensor data of the current
	// one, each tensor padded to 32 bytes, would pass it. The metadata does
	// not count. When set, MaxTensors must be 0, as the tool takes one or
	// the other.
	MaxBytes int64
	// NoTensorsInFirst is --no-tensor-first-split: the first part holds the
	// metadata only, so that it can be fetched and read quickly.
	NoTensorsInFirst bool
}

// SplitBytes returns the parts of the file b describes, byte for byte as
// llama-gguf-split --split writes them from the file Bytes returns; part i
// is to be named SplitPath(prefix, i+1, len(parts)).
//
// Tensors keep their order and go to the parts as opts says. The first part
// holds every metadata key of b, then split.no, split.tensors.count and
// split.count (in that order: the tool sets split.count last); each later
// part holds only those three keys. Every part is GGUF v3 with its data at
// 32-byte alignment, and each tensor's dims lose their trailing 1s (ggml's
// n_dims), as the tool writes them.
//
// A b that llama-gguf-split could not split into readable parts is an
// ErrInvalid error: a general.alignment other than uint32 32 (the tool
// copies the key but lays the parts out at 32), arrays of arrays (llama.cpp
// reads none), or a part that would hold no tensor (MaxBytes below the size
// of a tensor).
func (b *Builder) SplitBytes(opts SplitOptions) ([][]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := b.checkSplittable(); err != nil {
		return nil, err
	}
	plan, err := splitPlan(b.tensors, opts)
	if err != nil {
		return nil, err
	}
	parts := make([][]byte, len(plan))
	for i, tensors := range plan {
		p := NewBuilder()
		if i == 0 {
			for _, kv := range b.kvs {
				if kv.Key != SplitNoKey && kv.Key != SplitCountKey && kv.Key != SplitTensorsKey {
					p.Set(kv.Key, kv.Value)
				}
			}
		}
		p.Set(SplitNoKey, ValueOf(uint16(i)))
		p.Set(SplitTensorsKey, ValueOf(int32(len(b.tensors))))
		p.Set(SplitCountKey, ValueOf(uint16(len(plan))))
		for _, j := range tensors {
			t := b.tensors[j]
			p.AddTensor(t.Name, t.Type, ggmlDims(t.Dims), t.Data)
		}
		data, err := p.Bytes()
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i+1, err)
		}
		if len(tensors) == 0 {
			// Builder leaves a file without tensors unpadded (as llama.cpp's
			// vocab-only files are); ggml's writer pads every header.
			data = append(data, make([]byte, alignUp(len(data), splitAlignment)-len(data))...)
		}
		parts[i] = data
	}
	return parts, nil
}

// TensorCount is the number of tensors added so far: what
// SplitOptions.MaxTensors divides.
func (b *Builder) TensorCount() int { return len(b.tensors) }

// checkSplittable refuses what llama-gguf-split cannot split into files
// llama.cpp reads.
func (b *Builder) checkSplittable() error {
	if i, ok := b.kvIndex[AlignmentKey]; ok {
		if v := b.kvs[i].Value; v.typ != TypeUint32 || v.bits != splitAlignment {
			return fmt.Errorf("%w: %s is %v: llama-gguf-split lays parts out at %d bytes whatever it says, so the first part would be unreadable",
				ErrInvalid, AlignmentKey, v, splitAlignment)
		}
	}
	for _, kv := range b.kvs {
		if kv.Value.typ == TypeArray && kv.Value.elem == TypeArray {
			return fmt.Errorf("%w: %q is an array of arrays, which llama.cpp does not read", ErrInvalid, kv.Key)
		}
	}
	if len(b.tensors) > math.MaxInt32 {
		return fmt.Errorf("%w: %d tensors do not fit %s (int32)", ErrInvalid, len(b.tensors), SplitTensorsKey)
	}
	return nil
}

// splitPlan returns the indexes of the tensors of each part, cut as
// llama-gguf-split's split_strategy cuts them.
func splitPlan(tensors []TensorInfo, opts SplitOptions) ([][]int, error) {
	maxTensors := opts.MaxTensors
	switch {
	case maxTensors < 0 || opts.MaxBytes < 0:
		return nil, fmt.Errorf("%w: split limits %d tensors, %d bytes are negative", ErrInvalid, opts.MaxTensors, opts.MaxBytes)
	case maxTensors > 0 && opts.MaxBytes > 0:
		return nil, fmt.Errorf("%w: a split is by tensors (%d) or by bytes (%d), not both", ErrInvalid, opts.MaxTensors, opts.MaxBytes)
	case maxTensors == 0:
		maxTensors = DefaultSplitMaxTensors
	}
	plan := [][]int{nil}
	if opts.NoTensorsInFirst {
		plan = append(plan, nil)
	}
	var size int64 // the padded tensor bytes of the current part
	for i, t := range tensors {
		padded := int64(alignUp(t.Size, splitAlignment))
		var cut bool
		if opts.MaxBytes > 0 {
			cut = size+padded > opts.MaxBytes
		} else {
			cut = i > 0 && i%maxTensors == 0
		}
		if cut {
			if len(plan[len(plan)-1]) == 0 {
				return nil, fmt.Errorf("%w: tensor %q (%d bytes padded) does not fit a part of %d bytes: a part would hold no tensor",
					ErrInvalid, t.Name, padded, opts.MaxBytes)
			}
			plan = append(plan, nil)
			size = 0
		}
		size += padded
		plan[len(plan)-1] = append(plan[len(plan)-1], i)
	}
	if len(plan) > MaxSplitCount {
		return nil, fmt.Errorf("%w: %d parts do not fit %s (uint16)", ErrInvalid, len(plan), SplitCountKey)
	}
	return plan, nil
}

// ggmlDims is dims without trailing 1s (at least one dim), as ggml writes
// a tensor's shape: its n_dims is the last dim above 1.
func ggmlDims(dims []uint64) []uint64 {
	n := len(dims)
	for n > 1 && dims[n-1] == 1 {
		n--
	}
	return dims[:n]
}

// BuilderOf is a Builder holding f's version, metadata and tensors (their
// data still f's), so that f can be written again, e.g. as parts with
// SplitBytes.
func BuilderOf(f *File) *Builder {
	b := NewBuilder()
	b.SetVersion(f.Version)
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors() {
		b.AddTensor(ti.Name, ti.Type, ti.Dims, ti.Data)
	}
	return b
}

package engine

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// The metadata keys of a shard file written by ShardGGUF.
const (
	keyShardIndex  = "wasmlm.shard.index"  // uint32: which shard
	keyShardCount  = "wasmlm.shard.count"  // uint32: of how many
	keyShardSource = "wasmlm.shard.source" // uint64: the whole model's fingerprint
)

// ShardGGUF returns shard index of count of the GGUF model in data as a
// GGUF file of its own, for a worker that should never hold the whole
// model: the file's metadata (the vocabulary included), the rows of every
// matrix that shard computes (see Model.Shard), the norms whole, and the
// keys wasmlm.shard.index, wasmlm.shard.count and wasmlm.shard.source (a
// fingerprint of the whole model, which the shards compare before working
// together). Tensors the engine does not use are left out. LoadGGUF loads the
// result as the model Shard(index, count) returns, with the same weights.
//
// The result is allocated once, at its final size.
func ShardGGUF(data []byte, index, count int) ([]byte, error) {
	m, f, err := loadGGUF(data)
	if err != nil {
		return nil, err
	}
	if m.shard != nil {
		return nil, fmt.Errorf("%w: the file is already shard %d of %d", ErrShard, m.shard.index, m.shard.count)
	}
	p, err := newShardPlan(m.Config, index, count)
	if err != nil {
		return nil, err
	}
	p.source = fingerprint(m.Config, m.Weights)

	// The header: the file's metadata and the shard's keys, written by the
	// gguf package with no tensors (so without padding); the tensor count is
	// patched in below.
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	b.Set(keyShardIndex, gguf.ValueOf(uint32(index)))
	b.Set(keyShardCount, gguf.ValueOf(uint32(count)))
	b.Set(keyShardSource, gguf.ValueOf(p.source))
	header, err := b.Bytes()
	if err != nil {
		return nil, fmt.Errorf("%w: shard header: %v", ErrFormat, err)
	}

	type piece struct {
		name string
		typ  tensor.Type
		dims []uint64
		data []byte
	}
	var pieces []piece
	infoBytes := 0
	for _, t := range f.Tensors() {
		rows, whole, keep := shardRows(t.Name, m.Config, &p)
		if !keep {
			continue
		}
		pc := piece{name: t.Name, typ: t.Type, dims: t.Dims, data: t.Data}
		if !whole {
			if pc.dims, pc.data, err = sliceTensor(t, rows); err != nil {
				return nil, err
			}
		}
		pieces = append(pieces, pc)
		infoBytes += 8 + len(pc.name) + 4 + 8*len(pc.dims) + 4 + 8
	}

	align := f.Alignment
	size := alignUp(len(header)+infoBytes, align)
	for _, pc := range pieces {
		size += alignUp(len(pc.data), align)
	}
	out := make([]byte, size)
	n := copy(out, header)
	binary.LittleEndian.PutUint64(out[8:], uint64(len(pieces))) // after the magic and the version
	le := binary.LittleEndian
	offset := 0
	for _, pc := range pieces {
		le.PutUint64(out[n:], uint64(len(pc.name)))
		n += 8
		n += copy(out[n:], pc.name)
		le.PutUint32(out[n:], uint32(len(pc.dims)))
		n += 4
		for _, d := range pc.dims {
			le.PutUint64(out[n:], d)
			n += 8
		}
		le.PutUint32(out[n:], uint32(pc.typ))
		le.PutUint64(out[n+4:], uint64(offset))
		n += 12
		offset += alignUp(len(pc.data), align)
	}
	n = alignUp(n, align)
	for _, pc := range pieces {
		copy(out[n:], pc.data)
		n += alignUp(len(pc.data), align)
	}
	return out, nil
}

// alignUp rounds n up to a multiple of align (a power of two).
func alignUp(n, align int) int { return (n + align - 1) &^ (align - 1) }

// shardRows says what shard plan p keeps of the tensor called name: rows
// (elements, for a vector) of it, or all of it (whole), or nothing (!keep:
// a tensor the engine does not use).
func shardRows(name string, c Config, p *shardPlan) (rows span, whole, keep bool) {
	headDim := c.HeadDim()
	q := span{p.heads.lo * headDim, p.heads.hi * headDim}
	kv := span{p.kvHeads.lo * headDim, p.kvHeads.hi * headDim}
	switch name {
	case nameTokenEmbd, nameOutput:
		return p.vocab, false, true
	case nameOutputNorm, nameRopeFreqs:
		return span{}, true, true
	}
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return span{}, false, false
	}
	layer, rest, ok := strings.Cut(rest, ".")
	if i, err := strconv.Atoi(layer); !ok || err != nil || i < 0 || i >= c.Layers || strconv.Itoa(i) != layer {
		return span{}, false, false
	}
	switch rest {
	case "attn_norm.weight", "ffn_norm.weight":
		return span{}, true, true
	case "attn_q.weight", "attn_q.bias":
		return q, false, true
	case "attn_k.weight", "attn_k.bias", "attn_v.weight", "attn_v.bias":
		return kv, false, true
	case "attn_output.weight":
		return span{}, true, true // every shard computes all of Wo (see shardPlan)
	case "ffn_down.weight":
		return p.dim, false, true
	case "ffn_gate.weight", "ffn_up.weight":
		return p.hidden, false, true
	}
	return span{}, false, false
}

// sliceTensor returns the dims and bytes of rows s of a matrix, or of
// elements s of a vector. The loader has checked the shapes of every tensor
// the engine uses against the whole model, so s lies inside.
func sliceTensor(t gguf.TensorInfo, s span) ([]uint64, []byte, error) {
	switch len(t.Dims) {
	case 2:
		rb, err := tensor.RowBytes(t.Type, int(t.Dims[0]))
		if err != nil || uint64(s.hi) > t.Dims[1] {
			return nil, nil, fmt.Errorf("%w: tensor %s (%v %v) cannot give rows [%d, %d)", ErrFormat, t.Name, t.Type, t.Dims, s.lo, s.hi)
		}
		return []uint64{t.Dims[0], uint64(s.len())}, t.Data[s.lo*rb : s.hi*rb], nil
	case 1:
		eb, err := tensor.RowBytes(t.Type, 1)
		if err != nil || uint64(s.hi) > t.Dims[0] {
			return nil, nil, fmt.Errorf("%w: vector %s (%v, %d elements) cannot give elements [%d, %d)", ErrUnsupported, t.Name, t.Type, t.Dims[0], s.lo, s.hi)
		}
		return []uint64{uint64(s.len())}, t.Data[s.lo*eb : s.hi*eb], nil
	}
	return nil, nil, fmt.Errorf("%w: tensor %s has %d dimensions", ErrFormat, t.Name, len(t.Dims))
}

// ggufShardPlan is the shard plan of a GGUF file: from its wasmlm.shard.*
// keys for a shard file (sharded = true), else the whole model's.
func ggufShardPlan(f *gguf.File, c Config) (p shardPlan, sharded bool, err error) {
	_, hasIndex := f.Lookup(keyShardIndex)
	_, hasCount := f.Lookup(keyShardCount)
	if !hasIndex && !hasCount {
		return wholePlan(c), false, nil
	}
	index, err1 := f.Uint32(keyShardIndex)
	count, err2 := f.Uint32(keyShardCount)
	source, err3 := f.Uint64(keyShardSource)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			return shardPlan{}, false, fmt.Errorf("%w: shard file: %v", ErrFormat, err)
		}
	}
	if p, err = newShardPlan(c, int(index), int(count)); err != nil {
		return shardPlan{}, false, fmt.Errorf("%w: shard file: %w", ErrFormat, err)
	}
	p.source = source
	return p, true, nil
}

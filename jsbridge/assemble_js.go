package jsbridge

import (
	"errors"
	"fmt"
	"runtime"
	"syscall/js"
	"unsafe"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/shard"
)

// A model read a range at a time, straight into Go memory allocated once at
// its final size (the page never holds the whole file, and neither does a
// worker that holds only a shard of it):
//
//	inspect(prefixes, sizes, options) → {more} | inspection
//	prepare(prefixes, sizes, {shardIndex, shardCount}) → {more} | {reads, size, bytes}
//	fill(source, offset, chunk) → bytes placed
//	filled(bytes)                → bytes placed so far
//	load('assembled', options) → info
//
// prefixes are the first bytes of each file of the model (one, or the
// parts of a split GGUF in order) and sizes their lengths. When a header
// goes on past its prefix, the answer is {more: i}: read more of file i
// (twice as much, say) and call again. reads lists [source, start, end]
// ranges of the files that the model (or the shard) needs; each chunk read
// goes to fill, in any order; load then reads the model from what was
// filled. A host that holds the instance's WebAssembly.Memory may instead
// copy each chunk straight to prepare's address plus where the segments
// say (Go's memory does not move), then report the bytes with filled: no
// chunk passes through Go, so none waits for Go's garbage collector to be
// released (a JavaScript value handed to Go lives until then).

// maxHeaderBytes bounds how much of a file its header may take (the
// vocabulary is most of it: 7 MB for a 262k-token one), so that a corrupt
// length cannot make a host read a whole multi-gigabyte file as "header".
const maxHeaderBytes = 64 << 20

// Per-worker limits that inspect checks a model against: all of a worker's
// WebAssembly memory (4 GiB for 32-bit memory, less what a program needs
// beside the model) and the bytes of the model file (bytes).
const (
	workerLimit      = 3584 << 20
	maxWorkersSearch = 64
)

// assembly is a model file being filled.
type assembly struct {
	layout *gguf.Layout
	buf    []byte
	placed int
	shard  bool // a part of a split model (shard.Load reads it), else whole
}

// headers parses the files' headers (see above): the joined header and
// the layout of the whole model from the files, or more ≥ 0 when file
// more's prefix is too short.
func (b *Binding) headers(args []js.Value) (f *gguf.File, whole *gguf.Layout, fp uint64, more int, err error) {
	prefixes, sizes := arg(args, 0), arg(args, 1)
	n, err := b.arrayLen(prefixes, "prefixes", 1<<14, false)
	if err != nil {
		return nil, nil, 0, -1, err
	}
	if n == 0 {
		return nil, nil, 0, -1, invalid("prefixes", "must hold the first bytes of at least one file")
	}
	if m, err := b.arrayLen(sizes, "sizes", 1<<14, false); err != nil || m != n {
		return nil, nil, 0, -1, invalid("sizes", "must be an array of %d file sizes, got %s", n, b.describe(sizes))
	}
	files := make([]*gguf.File, n)
	lens := make([]int64, n)
	var heads [][]byte
	for i := range n {
		s := b.get(sizes, i)
		if typeOf(s) != js.TypeNumber || s.Float() != float64(int64(s.Float())) || s.Float() < 0 {
			return nil, nil, 0, -1, invalid(fmt.Sprintf("sizes[%d]", i), "must be a file size in bytes, got %s", b.describe(s))
		}
		lens[i] = int64(s.Float())
		prefix, err := b.bytes(b.get(prefixes, i), fmt.Sprintf("prefixes[%d]", i))
		if err != nil {
			return nil, nil, 0, -1, err
		}
		files[i], err = gguf.ParseHeader(prefix, lens[i])
		if errors.Is(err, gguf.ErrNeedMore) {
			if len(prefix) >= maxHeaderBytes {
				return nil, nil, 0, -1, fmt.Errorf("%w: file %d's header is larger than %d MiB", engine.ErrFormat, i+1, maxHeaderBytes>>20)
			}
			return nil, nil, 0, i, nil
		}
		if err != nil {
			if n > 1 {
				err = fmt.Errorf("file %d of %d: %w", i+1, n, err)
			}
			return nil, nil, 0, -1, ggufErr(err)
		}
		heads = append(heads, prefix[:files[i].HeaderSize])
	}
	f, whole, err = gguf.Join(files, lens)
	if err != nil {
		return nil, nil, 0, -1, ggufErr(err)
	}
	total := int64(0)
	for _, l := range lens {
		total += l
	}
	return f, whole, shard.HeaderFingerprint(heads, total), -1, nil
}

// ggufErr classifies an error of the gguf package as the engine's loads do.
func ggufErr(err error) error {
	switch {
	case errors.Is(err, engine.ErrFormat), errors.Is(err, engine.ErrUnsupported):
		return err
	case errors.Is(err, gguf.ErrUnsupported):
		return fmt.Errorf("%w: %w", engine.ErrUnsupported, err)
	}
	return fmt.Errorf("%w: %w", engine.ErrFormat, err)
}

// parsePrepare: prepare(prefixes, sizes, {shardIndex, shardCount}).
func (b *Binding) parsePrepare(args []js.Value) (work, error) {
	opts, err := b.readFields(arg(args, 2), "options", []string{"shardIndex", "shardCount"})
	if err != nil {
		return nil, err
	}
	count, err := opts.integer("shardCount", 1, 1, 1024, "in 1..1024")
	if err != nil {
		return nil, err
	}
	index, err := opts.integer("shardIndex", 0, 0, count-1, fmt.Sprintf("in 0..%d (shardCount - 1)", count-1))
	if err != nil {
		return nil, err
	}
	return func() (any, error) {
		f, whole, fp, more, err := b.headers(args)
		if err != nil || more >= 0 {
			return map[string]any{"more": more}, err
		}
		l := whole
		if count > 1 {
			part, err := shard.Layout(f, index, count, fp)
			if err != nil {
				return nil, err
			}
			if l, err = part.Through(whole); err != nil {
				return nil, ggufErr(err)
			}
		} else if _, err := engine.ReadHeader(f); err != nil {
			return nil, err // refuse what the engine cannot load before a byte is read
		}
		if l.Size > maxModelBytes {
			return nil, fmt.Errorf("%w: the model needs %d MiB of memory for its weights; a WebAssembly worker holds at most %d MiB: split it across more workers", engine.ErrInvalidOption, l.Size>>20, maxModelBytes>>20)
		}
		b.mu.Lock()
		b.asm = nil // the previous one's memory can go before this one's is taken
		b.mu.Unlock()
		a := &assembly{layout: l, buf: make([]byte, l.Size), shard: count > 1}
		copy(a.buf, l.Header)
		b.mu.Lock()
		b.asm = a
		b.mu.Unlock()
		reads := l.Reads(readGap)
		out := make([]any, len(reads))
		for i, r := range reads {
			out[i] = []any{r.Source, r.Start, r.End}
		}
		segs := make([]any, len(l.Segments))
		for i, sg := range l.Segments {
			segs[i] = []any{sg.Source, sg.Offset, sg.Dst, sg.Len}
		}
		return map[string]any{
			"reads": out, "size": l.Size, "bytes": l.Covered(),
			// Where the model's bytes are in the instance's memory, and where
			// each segment of the files goes there: a host with the memory
			// at hand copies chunks in itself, then calls filled.
			"address": float64(uintptr(unsafe.Pointer(unsafe.SliceData(a.buf)))), "segments": segs,
		}, nil
	}, nil
}

// readGap merges reads closer than this: a host reading over HTTP makes
// one request rather than two for up to this many bytes more.
const readGap = 256 << 10

// parseFill: fill(source, offset, chunk) copies chunk, the bytes of file
// source from offset, where the prepared model takes them.
func (b *Binding) parseFill(args []js.Value) (work, error) {
	src, off, chunk := arg(args, 0), arg(args, 1), arg(args, 2)
	if typeOf(src) != js.TypeNumber || src.Float() != float64(int(src.Float())) || src.Int() < 0 {
		return nil, invalid("source", "must be a file index, got %s", b.describe(src))
	}
	if typeOf(off) != js.TypeNumber || off.Float() != float64(int64(off.Float())) || off.Float() < 0 {
		return nil, invalid("offset", "must be a byte offset, got %s", b.describe(off))
	}
	if !chunk.InstanceOf(b.uint8Array) {
		return nil, invalid("chunk", "must be a Uint8Array, got %s", b.describe(chunk))
	}
	return func() (any, error) {
		b.mu.Lock()
		a := b.asm
		b.mu.Unlock()
		if a == nil {
			return nil, invalidCall("call prepare before fill")
		}
		placed := 0
		a.layout.Place(src.Int(), int64(off.Float()), chunk.Length(), func(lo, hi, at int) {
			placed += js.CopyBytesToGo(a.buf[at:at+hi-lo], chunk.Call("subarray", lo, hi))
		})
		b.mu.Lock()
		before := a.placed
		a.placed += placed
		b.mu.Unlock()
		// Every chunk (and each subarray of it) that reached Go stays
		// referenced from wasm_exec.js's table of values until Go's garbage
		// collector finalizes its js.Value, and filling allocates nothing, so
		// no collection would come: without this the page's JavaScript heap
		// keeps every chunk read, the size of the model.
		if before/gcEvery != a.placed/gcEvery {
			runtime.GC()
		}
		return placed, nil
	}, nil
}

// parseFilled: filled(bytes) says that the host copied bytes of the
// prepared model into its memory itself (at prepare's address, as its
// segments say) rather than through fill.
func (b *Binding) parseFilled(args []js.Value) (work, error) {
	n := arg(args, 0)
	if typeOf(n) != js.TypeNumber || n.Float() != float64(int(n.Float())) || n.Float() < 0 {
		return nil, invalid("bytes", "must be a byte count, got %s", b.describe(n))
	}
	return func() (any, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.asm == nil {
			return nil, invalidCall("call prepare before filled")
		}
		b.asm.placed += n.Int()
		return b.asm.placed, nil
	}, nil
}

// gcEvery is how many bytes fill places between collections (see fill).
const gcEvery = 32 << 20

// takeAssembly returns the filled model and forgets it, or an error when
// none was prepared or it is not complete.
func (b *Binding) takeAssembly() (*assembly, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.asm
	switch {
	case a == nil:
		return nil, invalidCall("load('assembled') needs prepare and fill first")
	case a.placed != a.layout.Covered():
		return nil, fmt.Errorf("%w: the model is incomplete: %d of its %d bytes were filled", engine.ErrFormat, a.placed, a.layout.Covered())
	}
	b.asm = nil
	return a, nil
}

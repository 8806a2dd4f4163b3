package modelsource

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"runtime"
	"slices"
	"strings"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
)

// Sizes of the reads: the first read of each file (its header, most often
// whole: a 32k-token vocabulary takes about 0.5 MiB, a 262k one 7 MiB),
// each later read, and the most a header may take (a corrupt length must
// not make the worker read a whole file as "header").
const (
	DefaultHeaderBytes = 1 << 20
	DefaultChunkBytes  = 4 << 20
	maxHeaderBytes     = 32 << 20
)

// Options are what Load needs besides the store and the name.
type Options struct {
	// SHA256 are the SHA-256 digests the files must have, in hexadecimal:
	// one, or one per part of a split set in order; none, not checked.
	SHA256 []string
	// ContextLength and KVType are those of the session the worker serves
	// with, whose KV cache the budget counts: a context of 0 is the
	// model's, at most engine.DefaultContextLength; FitContext is Fit's
	// session (KVType ignored); KVAuto is F16 above
	// engine.AutoKVF16Parameters, F32 below, as a session resolves it.
	ContextLength int
	KVType        engine.KVType
	// Budget is the bytes the model, its session and the Go runtime may
	// take (0: DefaultBudget).
	Budget int64
	// HeaderBytes and ChunkBytes are the sizes of the first read of each
	// file and of every later one (0: DefaultHeaderBytes, DefaultChunkBytes).
	HeaderBytes, ChunkBytes int
}

// part is one file of the model being read.
type part struct {
	name   string
	size   int64
	held   int64
	prefix []byte     // its first bytes, the header, until placed
	file   *gguf.File // its header
	sum    hash.Hash  // over the bytes read so far, in order; nil: not checked
}

// Load reads the model named name (an object key or URL; the first part of
// a split set names them all) from s: first each file's header, which says
// what the model and a session of it take (refused with CodeTooLarge when
// more than the budget, before a byte of the weights is read), then the
// weights, a chunk at a time, copied straight to their place in one buffer
// of the model's size, hashing as they arrive when SHA256 is given. Every
// error is an *Error naming the file and the cause.
func Load(ctx context.Context, s Store, name string, opts Options) (*engine.Model, error) {
	budget := cmp.Or(opts.Budget, DefaultBudget)
	chunk := cmp.Or(int64(opts.ChunkBytes), DefaultChunkBytes)
	names, err := partNames(name)
	if err != nil {
		return nil, fail(CodeMisconfigured, "%w", err)
	}
	if len(opts.SHA256) > 0 && len(opts.SHA256) != len(names) {
		return nil, fail(CodeMisconfigured, "%d SHA-256 digests for the %d files of %s", len(opts.SHA256), len(names), s.Describe(name))
	}
	parts := make([]*part, len(names))
	for i, n := range names {
		p := &part{name: n}
		if len(opts.SHA256) > 0 {
			p.sum = sha256.New()
		}
		if err := p.readHeader(ctx, s, cmp.Or(opts.HeaderBytes, DefaultHeaderBytes)); err != nil {
			return nil, err
		}
		parts[i] = p
	}
	headers, sizes := make([]*gguf.File, len(parts)), make([]int64, len(parts))
	held := int64(0)
	for i, p := range parts {
		headers[i], sizes[i] = p.file, p.size
		held = max(held, p.held) // a store holds one file at a time
	}
	joined, layout, err := gguf.Join(headers, sizes)
	if err != nil {
		return nil, fail(CodeLoadFailed, "%s: %w", s.Describe(name), err)
	}
	h, err := engine.ReadHeader(joined)
	if err != nil {
		return nil, fail(CodeLoadFailed, "%s: %w", s.Describe(name), err)
	}
	contextLength, kv := opts.ContextLength, opts.KVType
	if contextLength == FitContext { // the file held in JavaScript is gone once the session is made
		kv, contextLength = fitted(h.Config(), int64(layout.Size), budget-held)
	}
	m, positions, kv, err := estimate(h, int64(layout.Size), contextLength, kv)
	if err != nil {
		return nil, fail(CodeMisconfigured, "%s: %w", s.Describe(name), err)
	}
	if err := checkFits(s.Describe(name), m, positions, kv, held, budget); err != nil {
		return nil, err
	}
	// The header's tokenizer, and the buffer of an earlier load that
	// failed, are garbage: collected first, their memory takes the
	// weights rather than the heap growing past them (WebAssembly memory
	// never shrinks).
	h = nil
	runtime.GC()
	buf := make([]byte, layout.Size)
	copy(buf, layout.Header)
	placed := 0
	var pieces []piece
	for i, p := range parts {
		placed += layout.Fill(buf, i, 0, p.prefix)
		for off := int64(len(p.prefix)); off < p.size; off += chunk {
			c, err := s.Read(ctx, p.name, off, int(min(chunk, p.size-off)))
			if err != nil {
				return nil, readError(s, p.name, err)
			}
			pieces = place(layout, buf, i, off, c, pieces[:0])
			for _, pc := range pieces {
				placed += pc.hi - pc.lo
			}
			if p.sum != nil {
				hashChunk(p.sum, buf, c, pieces)
			}
		}
		p.prefix = nil
		if p.sum != nil {
			if got, want := hex.EncodeToString(p.sum.Sum(nil)), strings.ToLower(opts.SHA256[i]); got != want {
				return nil, fail(CodeChecksumMismatch, "%s has SHA-256 %s; WASMLM_MODEL_SHA256 says %s", s.Describe(p.name), got, want)
			}
		}
	}
	if placed != layout.Covered() {
		return nil, fail(CodeLoadFailed, "%s: %d of the model's %d bytes were read", s.Describe(name), placed, layout.Covered())
	}
	model, err := engine.LoadGGUF(buf)
	if err != nil {
		return nil, fail(CodeLoadFailed, "%s: %w", s.Describe(name), err)
	}
	return model, nil
}

// readHeader opens the file and reads its first bytes until its header
// parses, hashing them.
func (p *part) readHeader(ctx context.Context, s Store, first int) error {
	obj, c, err := s.Open(ctx, p.name, first)
	if err != nil {
		return readError(s, p.name, err)
	}
	p.size, p.held = obj.Size, obj.Held
	p.prefix = make([]byte, c.Len())
	c.CopyTo(p.prefix, 0)
	if p.sum != nil {
		p.sum.Write(p.prefix)
	}
	for {
		p.file, err = gguf.ParseHeader(p.prefix, p.size)
		if err == nil {
			return nil
		}
		n := int64(len(p.prefix))
		if !errors.Is(err, gguf.ErrNeedMore) || n >= p.size {
			return fail(CodeLoadFailed, "%s is not a GGUF model that can be read (truncated or corrupt): %w", s.Describe(p.name), err)
		}
		if n >= maxHeaderBytes {
			return fail(CodeLoadFailed, "%s: the header is longer than %d MiB (corrupt?)", s.Describe(p.name), maxHeaderBytes>>20)
		}
		more, err := s.Read(ctx, p.name, n, int(min(n, p.size-n, maxHeaderBytes-n)))
		if err != nil {
			return readError(s, p.name, err)
		}
		p.prefix = slices.Grow(p.prefix, more.Len())[:n+int64(more.Len())]
		more.CopyTo(p.prefix[n:], 0)
		if p.sum != nil {
			p.sum.Write(p.prefix[n:])
		}
	}
}

// readError is a Store's error as an *Error: not found, the file ending
// early (CodeLoadFailed, truncated), or the store failing.
func readError(s Store, name string, err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return fail(CodeNotFound, "%s: %w", s.Describe(name), err)
	case errors.Is(err, ErrShort):
		return fail(CodeLoadFailed, "%s is truncated: %w", s.Describe(name), err)
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return fail(CodeLoadFailed, "reading %s: %w", s.Describe(name), err)
}

// piece is bytes [lo, hi) of a chunk that went to byte at of the model.
type piece struct{ lo, hi, at int }

// place copies the chunk c, bytes of file src from off, where the layout
// takes them, and returns the pieces it placed (appended to pieces), by lo.
func place(l *gguf.Layout, buf []byte, src int, off int64, c Chunk, pieces []piece) []piece {
	l.Place(src, off, c.Len(), func(lo, hi, at int) {
		c.CopyTo(buf[at:at+hi-lo], lo)
		pieces = append(pieces, piece{lo, hi, at})
	})
	slices.SortFunc(pieces, func(a, b piece) int { return a.lo - b.lo })
	return pieces
}

// hashChunk adds the chunk's bytes to sum in order: the pieces placed from
// where they now are in buf (no second read of the chunk), the bytes
// between them (alignment padding) copied out of it.
func hashChunk(sum hash.Hash, buf []byte, c Chunk, pieces []piece) {
	pos := 0
	gap := func(end int) {
		if end > pos {
			b := make([]byte, end-pos)
			c.CopyTo(b, pos)
			sum.Write(b)
		}
	}
	for _, pc := range pieces {
		gap(pc.lo)
		sum.Write(buf[pc.at : pc.at+pc.hi-pc.lo])
		pos = pc.hi
	}
	gap(c.Len())
}

package modelsource

import (
	"context"
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/cmd/internal/jspromise"
)

// R2 is a Store of the objects of an R2 bucket binding, read with the
// binding's own head and ranged get (syumai/workers' R2 wrapper has no
// ranges): every read is one get of at most a chunk, whose ArrayBuffer is
// copied straight to its place in Go memory.
type R2 struct {
	bucket js.Value
	name   string // the binding's name, for messages
	body   reader
}

var _ Store = (*R2)(nil)

// NewR2 is the Store of the bucket bound as name (bucket is that binding).
func NewR2(bucket js.Value, name string) *R2 { return &R2{bucket: bucket, name: name} }

// Open heads the object and gets its first n bytes.
func (s *R2) Open(ctx context.Context, key string, n int) (Object, Chunk, error) {
	head, err := jspromise.AwaitCall(ctx, s.bucket, "head", key)
	if err != nil {
		return Object{}, nil, err
	}
	if isNullish(head) {
		return Object{}, nil, ErrNotFound
	}
	size := int64(head.Get("size").Float())
	if size == 0 {
		return Object{Size: 0}, Bytes(nil), nil
	}
	c, err := s.Read(ctx, key, 0, int(min(int64(n), size)))
	return Object{Size: size}, c, err
}

// Read gets n bytes of the object from off.
func (s *R2) Read(ctx context.Context, key string, off int64, n int) (Chunk, error) {
	release()
	rng := map[string]any{"offset": float64(off), "length": n}
	body, err := jspromise.AwaitCall(ctx, s.bucket, "get", key, map[string]any{"range": rng})
	if err != nil {
		return nil, err
	}
	if isNullish(body) {
		return nil, fmt.Errorf("the object went away while it was read: %w", ErrNotFound)
	}
	c, err := s.body.read(ctx, body, n)
	if err != nil {
		return nil, err
	}
	if c.Len() != n {
		return nil, fmt.Errorf("%d bytes from byte %d, not %d: %w", c.Len(), off, n, ErrShort)
	}
	return c, nil
}

// Describe names the object.
func (s *R2) Describe(key string) string { return fmt.Sprintf("%s object %q", s.name, key) }

package modelsource

import "context"

// Store holds a model's files and reads them by range: the objects of an
// R2 bucket, the URLs of a web server.
type Store interface {
	// Open returns what the store knows of the named file and its first
	// bytes, n of them or the whole file when it is shorter. A file the
	// store does not hold is an error wrapping ErrNotFound.
	Open(ctx context.Context, name string, n int) (Object, Chunk, error)
	// Read returns n bytes of the named file from off. A file that ends
	// before them is an error wrapping ErrShort.
	Read(ctx context.Context, name string, off int64, n int) (Chunk, error)
	// Describe names the file in messages ("MODEL_BUCKET object \"k\"",
	// a URL without its query).
	Describe(name string) string
}

// Object is what a Store says of a file when it opens it.
type Object struct {
	Size int64 // its length in bytes
	// Held is how many of its bytes the store keeps in JavaScript memory
	// while it reads the file (a server that ignores Range sends the whole
	// file at once), counted against the budget; 0 for ranged reads. A
	// store holds one file at a time.
	Held int64
}

// Chunk is bytes a Store read, held where the store read them (a
// JavaScript ArrayBuffer, or Go memory): the load copies them once, to
// where the model takes them.
type Chunk interface {
	// Len is how many bytes the chunk holds.
	Len() int
	// CopyTo copies the chunk's bytes from byte from on into dst, all of
	// dst.
	CopyTo(dst []byte, from int)
}

// Bytes is a Chunk held in Go memory.
type Bytes []byte

// Len is len(b).
func (b Bytes) Len() int { return len(b) }

// CopyTo copies b[from:] into dst.
func (b Bytes) CopyTo(dst []byte, from int) { copy(dst, b[from:]) }

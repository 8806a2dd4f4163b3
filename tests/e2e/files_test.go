//go:build !js

package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// filesDir is where the site serves the files tests give it (serveFile),
// with Range support, logging every request's Range header.
const filesDir = "/__e2e__/files/"

// servedFile is a file the site serves under filesDir: its bytes (open
// gives a fresh reader of them) and the requests it got.
type servedFile struct {
	size int64
	open func() io.ReadSeeker

	mu     sync.Mutex
	ranges []string // each request's Range header ("" for none)
}

// requests returns the Range header of every request for the file so far.
func (f *servedFile) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ranges...)
}

// serveFile serves data at filesDir+name on the site until the test ends;
// it returns the file's URL path.
func serveFile(t testing.TB, s *site, name string, data []byte) (string, *servedFile) {
	return serveReader(t, s, name, int64(len(data)), func() io.ReadSeeker { return bytes.NewReader(data) })
}

// serveReader is serveFile for a file of size bytes whose reader open
// gives (a file of gigabytes need not be held).
func serveReader(t testing.TB, s *site, name string, size int64, open func() io.ReadSeeker) (string, *servedFile) {
	f := &servedFile{size: size, open: open}
	s.files.Store(name, f)
	t.Cleanup(func() { s.files.Delete(name) })
	return filesDir + name, f
}

func (s *site) serveFiles(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, filesDir)
	v, ok := s.files.Load(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	f := v.(*servedFile)
	f.mu.Lock()
	f.ranges = append(f.ranges, r.Header.Get("Range"))
	f.mu.Unlock()
	http.ServeContent(w, r, name, time.Unix(1e9, 0), f.open())
}

// zeroTail reads header and then zeros up to size: a file whose header
// claims gigabytes of tensors, for tests that must never read past it.
type zeroTail struct {
	header []byte
	size   int64
	off    int64
}

func (z *zeroTail) Read(p []byte) (int, error) {
	if z.off >= z.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), z.size-z.off))
	for i := range n {
		at := z.off + int64(i)
		p[i] = 0
		if at < int64(len(z.header)) {
			p[i] = z.header[at]
		}
	}
	z.off += int64(n)
	return n, nil
}

func (z *zeroTail) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		z.off = offset
	case io.SeekCurrent:
		z.off += offset
	case io.SeekEnd:
		z.off = z.size + offset
	}
	return z.off, nil
}

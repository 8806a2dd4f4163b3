//go:build unix

package main

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapFile maps the file at path read-only: its pages are the system's file
// cache, not the process's heap, so reading the parts of a split model
// before joining them does not hold the model twice. unmap releases it.
func mapFile(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return []byte{}, func() {}, nil // mmap refuses empty files; Parse reports it
	}
	if st.Size() > math.MaxInt {
		return nil, nil, fmt.Errorf("%s: %d bytes is too large to map", path, st.Size())
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}

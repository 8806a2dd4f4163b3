//go:build !js

package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// moduleRoot is the directory of the go.mod at or above dir, or dir where
// there is none: the tree the binary may read.
func moduleRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// files serves the binary's read-only view of root (worker.js's fs):
// /fs/stat, /fs/file and /fs/dir of an absolute path, answering an error
// with its errno code (ENOENT, EACCES, ...) as the body.
type files struct {
	root string // absolute, without symbolic links
}

// resolve is the query's path, if it lies within the root once symbolic
// links are followed.
func (f files) resolve(r *http.Request) (string, error) {
	p := r.URL.Query().Get("path")
	if !filepath.IsAbs(p) {
		return "", fs.ErrInvalid
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(f.root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fs.ErrPermission
	}
	return real, nil
}

// errno is err as the code Go's syscall package maps back to an error.
func errno(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "ENOENT"
	case errors.Is(err, fs.ErrPermission):
		return "EACCES"
	case errors.Is(err, fs.ErrInvalid):
		return "EINVAL"
	}
	return "EIO"
}

func (f files) register(mux *http.ServeMux) {
	fail := func(w http.ResponseWriter, err error) {
		http.Error(w, errno(err), http.StatusNotFound)
	}
	mux.HandleFunc("GET /fs/stat", func(w http.ResponseWriter, r *http.Request) {
		p, err := f.resolve(r)
		if err != nil {
			fail(w, err)
			return
		}
		st, err := os.Stat(p)
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"dir": st.IsDir(), "size": st.Size(), "perm": int(st.Mode().Perm()), "mtimeMs": st.ModTime().UnixMilli(),
		})
	})
	mux.HandleFunc("GET /fs/file", func(w http.ResponseWriter, r *http.Request) {
		p, err := f.resolve(r)
		if err != nil {
			fail(w, err)
			return
		}
		data, err := os.ReadFile(p)
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	})
	mux.HandleFunc("GET /fs/dir", func(w http.ResponseWriter, r *http.Request) {
		p, err := f.resolve(r)
		if err != nil {
			fail(w, err)
			return
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			fail(w, err)
			return
		}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(names)
	})
}

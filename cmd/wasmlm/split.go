package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/wasmlm/wasmlm/engine/gguf"
)

// readModel reads the model file at path. The first part of a split GGUF
// model (name-00001-of-00003.gguf, as llama-gguf-split writes them) brings
// its other parts, found beside it by name as llama.cpp finds them, joined
// into one GGUF file in memory.
func readModel(path string) ([]byte, error) {
	prefix, no, count, ok := gguf.ParseSplitPath(path)
	if !ok || count == 1 {
		return os.ReadFile(path)
	}
	if no != 1 {
		return nil, fmt.Errorf("%s is part %d of %d of a split model: -m takes its first part, %s",
			path, no, count, gguf.SplitPath(prefix, 1, count))
	}
	return joinSplit(prefix, count)
}

// joinSplit reads the count parts whose names start with prefix and returns
// the file llama-gguf-split --merge writes from them (see gguf.Join). The
// parts are mapped, not read, where the system can map files, so the joined
// file is the only copy of the model in memory.
func joinSplit(prefix string, count int) ([]byte, error) {
	parts := make([]*gguf.File, 0, count)
	datas := make([][]byte, 0, count)
	for i := range count {
		path := gguf.SplitPath(prefix, i+1, count)
		data, unmap, err := mapFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("part %d of %d of the split model is missing: %w", i+1, count, err)
		}
		if err != nil {
			return nil, err
		}
		defer unmap()
		f, err := gguf.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		s, ok, err := f.Split()
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s: %w", path, err)
		case i == 0 && (!ok || s.Count == 1):
			// llama.cpp goes by the metadata: a whole model under a part's name.
			return os.ReadFile(path)
		case !ok:
			return nil, fmt.Errorf("%s is not a part of a split model: it has no %s", path, gguf.SplitCountKey)
		case s.Count != count || s.Index != i:
			return nil, fmt.Errorf("%s says it is part %d of %d (%s, %s), not part %d of %d as its name says",
				path, s.Index+1, s.Count, gguf.SplitNoKey, gguf.SplitCountKey, i+1, count)
		}
		parts, datas = append(parts, f), append(datas, data)
	}
	sizes := make([]int64, len(parts))
	for i, d := range datas {
		sizes[i] = int64(len(d))
	}
	_, l, err := gguf.Join(parts, sizes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gguf.SplitPath(prefix, 1, count), err)
	}
	out := make([]byte, l.Size) // the one allocation of the model's size; the parts are unmapped after it
	copy(out, l.Header)
	for i, d := range datas {
		l.Fill(out, i, 0, d)
	}
	return out, nil
}

// splitHint explains a model that did not load because it is the first
// part of a split model under a name its other parts cannot be found by.
func splitHint(path string, data []byte) string {
	f, err := gguf.Parse(data)
	if err != nil {
		return ""
	}
	s, ok, err := f.Split()
	if err != nil || !ok || s.Count == 1 {
		return ""
	}
	return fmt.Sprintf(" (%s is part %d of %d of a split model; its parts are found by their names, name-%05d-of-%05d.gguf)",
		path, s.Index+1, s.Count, s.Index+1, s.Count)
}

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
// the file llama-gguf-split --merge writes from them (see joinParts). The
// parts are mapped, not read, where the system can map files, so the joined
// file is the only copy of the model in memory.
func joinSplit(prefix string, count int) ([]byte, error) {
	parts := make([]*gguf.File, 0, count)
	var first gguf.SplitInfo
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
		if i == 0 {
			first = s
		}
		parts = append(parts, f)
	}
	b, err := joinParts(parts, first.Tensors, func(i int) string { return gguf.SplitPath(prefix, i+1, count) })
	if err != nil {
		return nil, err
	}
	return b.Bytes() // the one allocation of the model's size; the parts are unmapped after it
}

// joinParts builds the file llama-gguf-split --merge writes from the parts
// of a model: the first part's metadata with split.count set to 0 (and so
// moved last, as the tool sets it), which marks a whole file, then the
// tensors of every part in order, their dims without trailing 1s. The
// tensors' bytes are the parts' until Bytes copies them. tensors is
// split.tensors.count, which the parts' tensors must add up to, each name
// once; name(i) names part i in errors.
func joinParts(parts []*gguf.File, tensors int, name func(int) string) (*gguf.Builder, error) {
	b := gguf.NewBuilder()
	for _, kv := range parts[0].KVs() {
		if kv.Key != gguf.SplitCountKey {
			b.Set(kv.Key, kv.Value)
		}
	}
	b.Set(gguf.SplitCountKey, gguf.ValueOf(uint16(0)))
	in := map[string]int{} // tensor name → part
	for i, p := range parts {
		for _, t := range p.Tensors() {
			if j, dup := in[t.Name]; dup {
				return nil, fmt.Errorf("tensor %q is in both %s and %s", t.Name, name(j), name(i))
			}
			in[t.Name] = i
			dims := t.Dims
			for len(dims) > 1 && dims[len(dims)-1] == 1 {
				dims = dims[:len(dims)-1]
			}
			b.AddTensor(t.Name, t.Type, dims, t.Data)
		}
	}
	if len(in) != tensors {
		return nil, fmt.Errorf("the %d parts hold %d tensors, but %s says %d (%s)", len(parts), len(in), name(0), tensors, gguf.SplitTensorsKey)
	}
	return b, nil
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

//go:build !js

package main

import (
	"fmt"
	"io"
	"os"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
)

// kvConfigs caches the configs kvCacheBytes reads, by file path.
var kvConfigs = map[string]engine.Config{}

// kvCacheBytes is the KV cache of a session of ctx positions of the GGUF
// model at path, of kvType ("f16" or "f32"), as the engine sizes it
// (engine.Config.KVCacheBytes): heads as wide as key_length says (Qwen3's
// and Gemma's are wider than embedding_length/head_count), and
// sliding-window layers holding their window only. Every host's KV column
// uses it, so the peers' caches are sized as ours (llama.cpp's
// sliding-window cache, too, holds the window).
func kvCacheBytes(path string, ctx int, kvType string) (int64, error) {
	c, ok := kvConfigs[path]
	if !ok {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		prefix := make([]byte, min(st.Size(), 64<<20)) // the metadata, 262144-token vocabularies included
		if _, err := io.ReadFull(f, prefix); err != nil {
			return 0, err
		}
		gf, err := gguf.ParseHeader(prefix, st.Size())
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		h, err := engine.ReadHeader(gf)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		c = h.Config()
		kvConfigs[path] = c
	}
	t := engine.KVF32
	if kvType == "f16" {
		t = engine.KVF16
	}
	return c.KVCacheBytes(ctx, t), nil
}

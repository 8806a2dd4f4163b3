package policy

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

const onceUpon = "Once upon a time"

// loadStories260K is llama2.c's stories260K checkpoint and tokenizer: a
// model whose file carries no chat template.
func loadStories260K(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.LoadLlama2C(testmodel.Stories260K())
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
	b, err := os.ReadFile("../grammar/testdata/" + name + ".gbnf")
	require.NoError(t, err)
	return string(b)
}

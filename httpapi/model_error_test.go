package httpapi

import (
	"context"
	"encoding/binary"
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// tinyModelFile is a small random model with F32 weights and its own
// output matrix; BOS and EOS are muted, so a greedy completion runs to its
// max_tokens.
func tinyModelFile(t *testing.T) []byte {
	t.Helper()
	b, err := modelgen.Build(modelgen.Spec{
		Shape:          modelgen.Shape{Dim: 64, HiddenDim: 96, Layers: 2, Heads: 8, KVHeads: 2, VocabSize: 300, ContextLength: 64},
		SeparateOutput: true, MuteSpecial: true, Seed: 3,
	})
	require.NoError(t, err)
	return b
}

// editedModel is the model file data written again with metadata key set
// to value (unless key is "") and, if name is not "", row of the F32
// tensor name set to NaN.
func editedModel(t *testing.T, data []byte, key string, value gguf.Value, name string, row int) *engine.Model {
	t.Helper()
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	if key != "" {
		b.Set(key, value)
	}
	found := name == ""
	for _, ti := range f.Tensors() {
		d := ti.Data
		if ti.Name == name {
			require.Equal(t, tensor.F32, ti.Type)
			d = append([]byte(nil), d...)
			cols := int(ti.Dims[0])
			for c := range cols {
				binary.LittleEndian.PutUint32(d[4*(row*cols+c):], math.Float32bits(float32(math.NaN())))
			}
			found = true
		}
		b.AddTensor(ti.Name, ti.Type, ti.Dims, d)
	}
	require.True(t, found, "no tensor %s", name)
	out, err := b.Bytes()
	require.NoError(t, err)
	m, err := engine.Load(out, engine.LoadOptions{})
	require.NoError(t, err)
	return m
}

// TestModelErrorsAreServerErrors: a model whose
// weights are not finite fails a generation with the engine's
// invalid_model, and a chat template the engine does not know with
// unsupported_model: the server's model is at fault, not the request, so
// both are 500 server_error with that code, as a response and as a
// stream's error event; the server serves on.
func TestModelErrorsAreServerErrors(t *testing.T) {
	file := tinyModelFile(t)
	healthy, err := engine.Load(file, engine.LoadOptions{})
	require.NoError(t, err)
	s, err := healthy.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	prompt := []int{1, 5}
	greedy, err := s.GenerateTokens(context.Background(), prompt, engine.GenerateOptions{MaxTokens: 1}, nil)
	require.NoError(t, err)
	first := greedy.Tokens[0] // what a greedy completion of prompt generates first

	serve := func(m *engine.Model) *Handler {
		h, err := New(m, Options{})
		require.NoError(t, err)
		return h
	}
	check := func(t *testing.T, status int, body []byte, code string) {
		t.Helper()
		assert.Equal(t, http.StatusInternalServerError, status, "%s", body)
		e := apiErrorOf(t, body)
		assert.Equal(t, typeServer, e.Type)
		assertNullable(t, code, e.Code, "code")
		assert.Nil(t, e.Param)
	}
	const ids = `{"prompt": [1, 5], "max_tokens": 4, "temperature": 0`

	t.Run("NaN classifier row", func(t *testing.T) {
		h := serve(editedModel(t, file, "", gguf.Value{}, "output.weight", 7))
		for _, stream := range []string{"}", `, "stream": true}`} {
			// Before the first token: an ordinary error response, streamed or not.
			w := do(h, "POST", "/v1/completions", ids+stream)
			check(t, w.Code, w.Body.Bytes(), "invalid_model")
			assert.Contains(t, w.Body.String(), "not finite")
		}
	})

	t.Run("NaN embedding row of a generated token", func(t *testing.T) {
		h := serve(editedModel(t, file, "", gguf.Value{}, "token_embd.weight", first))
		w := do(h, "POST", "/v1/completions", ids+"}")
		check(t, w.Code, w.Body.Bytes(), "invalid_model")

		// Streamed: the first token went out, then the error event, no [DONE].
		w = do(h, "POST", "/v1/completions", ids+`, "stream": true}`)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		events := parseSSE(t, w.Body.String())
		require.Len(t, events, 2, "a token, then the error: %s", w.Body.String())
		assert.Empty(t, events[0].name)
		assert.Equal(t, "error", events[1].name)
		check(t, http.StatusInternalServerError, []byte(events[1].data), "invalid_model")
	})

	t.Run("unknown chat template", func(t *testing.T) {
		h := serve(editedModel(t, file, "tokenizer.chat_template", gguf.ValueOf("{{ nothing any family writes }}"), "", 0))
		for _, stream := range []string{"", `, "stream": true`} {
			w := do(h, "POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]`+stream+`}`)
			check(t, w.Code, w.Body.Bytes(), "unsupported_model")
		}
		c := decodeCompletion(t, do(h, "POST", "/v1/completions", ids+"}"))
		assert.Equal(t, 4, c.Usage.CompletionTokens, "text completions still work")
	})
}

package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
)

// embeddingList is the response, whole: OpenAI's list of embedding
// objects, which embeddingAnswer writes a part at a time.
type embeddingList struct {
	Object string            `json:"object"`
	Data   []embeddingObject `json:"data"`
	Model  string            `json:"model"`
	Usage  embeddingUsage    `json:"usage"`
}

// writeSizes records a response and the size of each write.
type writeSizes struct {
	*httptest.ResponseRecorder
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.ResponseRecorder.Write(p)
}

// TestEmbeddingAnswerIsTheListsJSON: embeddingAnswer writes json.Marshal's
// bytes of the whole embeddingList (and a newline), floats and base64, a
// truncated text, a name JSON escapes, in parts of about
// embeddingPartBytes, never the whole list at once.
func TestEmbeddingAnswerIsTheListsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	embs := make([]engine.Embedding, 2048)
	for i := range embs {
		v := make([]float32, 384)
		for k := range v {
			v[k] = r.Float32()*2 - 1
		}
		embs[i] = engine.Embedding{Vector: v, Tokens: 3 + i%5, Truncated: i%7 == 3}
	}
	for _, tc := range []struct {
		name   string
		embs   []engine.Embedding
		base64 bool
		model  string
	}{
		{"one", embs[:1], false, "minilm"},
		{"2048 floats", embs, false, "a <model> & \"name\""},
		{"2048 base64", embs, true, "minilm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &embeddingAnswer{embs: tc.embs, base64: tc.base64, model: tc.model}
			want := embeddingList{Object: "list", Data: make([]embeddingObject, len(tc.embs)), Model: tc.model}
			for i, e := range tc.embs {
				var vec any = e.Vector
				if tc.base64 {
					vec = base64Floats(e.Vector)
				}
				want.Data[i] = embeddingObject{Object: "embedding", Index: i, Embedding: vec, Truncated: e.Truncated}
				a.usage.PromptTokens += e.Tokens
			}
			a.usage.TotalTokens = a.usage.PromptTokens
			want.Usage = a.usage
			b, err := json.Marshal(want)
			require.NoError(t, err)
			w := &writeSizes{ResponseRecorder: httptest.NewRecorder()}
			a.write(w)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.Equal(t, string(b)+"\n", w.Body.String())
			for i, n := range w.sizes {
				assert.Less(t, n, 2*embeddingPartBytes, "write %d of %d bytes", i, len(b))
			}
		})
	}
}

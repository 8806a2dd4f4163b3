package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
)

// TestKVTypeOption: the sessions take Options.KVType (the zero value
// resolved for the model: stories260K is small, so F32), /v1/models says
// which, and a generation runs on either; a type out of range is refused.
func TestKVTypeOption(t *testing.T) {
	for _, c := range []struct {
		opt  engine.KVType
		want string
	}{{engine.KVAuto, "f32"}, {engine.KVF32, "f32"}, {engine.KVF16, "f16"}} {
		h := newHandler(t, Options{KVType: c.opt})
		assert.Equal(t, c.want, h.KVType().String(), "%v", c.opt)
		w := do(h, "GET", "/v1/models", "")
		require.Equal(t, http.StatusOK, w.Code)
		var list struct {
			Data []struct {
				Meta struct {
					KVType string `json:"kv_type"`
				} `json:"meta"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &list))
		require.Len(t, list.Data, 1)
		assert.Equal(t, c.want, list.Data[0].Meta.KVType, "%v", c.opt)
		comp := decodeCompletion(t, do(h, "POST", "/v1/completions", `{"prompt": "Once upon a time", "temperature": 0, "max_tokens": 8}`))
		assert.Equal(t, 8, comp.Usage.CompletionTokens, "%v", c.opt)
	}
	_, err := New(loadDefault(t), Options{KVType: engine.KVType(9)})
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

package jsbridge

import (
	"encoding/hex"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
)

// TestSaveAndLoadState: a session saved after a generation and loaded into
// another binding's generates the next turn's tokens, evaluating only the
// new prompt tokens, as the uninterrupted one does; a state for another KV
// type, or a corrupt one, rejects with invalid_argument.
func TestSaveAndLoadState(t *testing.T) {
	const opening = "Once upon a time, there was a little girl named Lily."
	first := newLoaded(t)
	r := mustCall(t, first, "generate", opening, greedy(10))
	state := mustCall(t, first, "saveState")
	require.True(t, state.InstanceOf(js.Global().Get("Uint8Array")))
	next := opening + r.Get("text").String() + " One day"
	want := mustCall(t, first, "generate", next, greedy(10))

	id := mustCall(t, first, "identity").String()
	assert.Len(t, id, 64)
	raw := make([]byte, state.Length())
	js.CopyBytesToGo(raw, state)
	assert.Equal(t, id, hex.EncodeToString(raw[8:40]), "the state carries the model's identity")
	second := newLoaded(t)
	loaded := mustCall(t, second, "loadState", state)
	assert.Equal(t, len(ints(r.Get("promptTokens")))+len(ints(r.Get("tokens")))-1, loaded.Get("tokens").Int())
	got := mustCall(t, second, "generate", next, greedy(10))
	assert.Equal(t, ints(want.Get("tokens")), ints(got.Get("tokens")))
	assert.Equal(t, want.Get("timings").Get("prefillTokens").Int(), got.Get("timings").Get("prefillTokens").Int(), "only the new tokens are evaluated")

	f16 := New()
	t.Cleanup(f16.Release)
	mustCall(t, f16, "load", jsBytes(models.Default()), obj(map[string]any{"kvType": "f16"}))
	_, err := call(t, f16, "loadState", state)
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "invalid_argument", je.Code, je.Message)
	assert.Contains(t, je.Message, "f32")

	_, err = call(t, second, "loadState", jsBytes([]byte("WLMS, cut short")))
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "invalid_argument", je.Code, je.Message)
	_, err = call(t, second, "loadState", "not bytes")
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "state", je.Field)
}

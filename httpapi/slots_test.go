package httpapi

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
)

// completionsOf records the completions a handler reports.
type completionsOf struct {
	mu  sync.Mutex
	all []Completion
}

func (c *completionsOf) add(x Completion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, x)
}

func (c *completionsOf) last() Completion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all[len(c.all)-1]
}

// slotAnswer decodes a slot action's 200 answer.
func slotAnswer(t *testing.T, w interface {
	Result() *http.Response
}, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.Equal(t, http.StatusOK, w.Result().StatusCode, "%s", body)
	require.NoError(t, json.Unmarshal(body, &m))
	return m
}

// TestSlotSaveRestore: a slot saved to the save directory and restored
// into another server's slot continues the conversation with the text the
// uninterrupted server gives, evaluating only the new prompt tokens;
// erase forgets the slot's conversation. llama.cpp's answers.
func TestSlotSaveRestore(t *testing.T) {
	dir := t.TempDir()
	var firstDone, secondDone completionsOf
	first := newHandler(t, Options{SlotSavePath: dir, Slots: 2, OnCompletion: firstDone.add}) // a lone client's requests run on slot 0
	turn := func(prompt string) string {
		return mustJSON(t, map[string]any{"prompt": prompt, "max_tokens": 12, "temperature": 0})
	}
	const opening = "Once upon a time, there was a little girl named Lily. She"
	reply := decodeCompletion(t, do(first, http.MethodPost, "/v1/completions", turn(opening))).text(t)

	w := do(first, http.MethodPost, "/slots/0?action=save", `{"filename": "lily.state"}`)
	saved := slotAnswer(t, w, w.Body.Bytes())
	assert.Equal(t, float64(0), saved["id_slot"])
	assert.Equal(t, "lily.state", saved["filename"])
	assert.Positive(t, saved["n_saved"])
	require.Contains(t, saved, "timings")
	info, err := os.Stat(filepath.Join(dir, "lily.state"))
	require.NoError(t, err)
	assert.Equal(t, saved["n_written"], float64(info.Size()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")

	next := turn(opening + reply + " and then")
	want := decodeCompletion(t, do(first, http.MethodPost, "/v1/completions", next)).text(t)
	wantPrefill := firstDone.last().Timings.PrefillTokens

	second := newHandler(t, Options{SlotSavePath: dir, OnCompletion: secondDone.add})
	w = do(second, http.MethodPost, "/slots/0?action=restore", `{"filename": "lily.state"}`)
	restored := slotAnswer(t, w, w.Body.Bytes())
	assert.Equal(t, saved["n_saved"], restored["n_restored"])
	assert.Equal(t, saved["n_written"], restored["n_read"])
	got := decodeCompletion(t, do(second, http.MethodPost, "/v1/completions", next)).text(t)
	assert.Equal(t, want, got, "the restored slot continues as the uninterrupted one")
	assert.Equal(t, wantPrefill, secondDone.last().Timings.PrefillTokens, "the restored slot evaluates only the new tokens")

	w = do(second, http.MethodPost, "/slots/0?action=erase", `{}`)
	erased := slotAnswer(t, w, w.Body.Bytes())
	assert.Equal(t, map[string]any{"id_slot": float64(0), "n_erased": erased["n_erased"]}, erased)
	assert.Positive(t, erased["n_erased"])
	decodeCompletion(t, do(second, http.MethodPost, "/v1/completions", next))
	assert.Greater(t, secondDone.last().Timings.PrefillTokens, wantPrefill, "an erased slot evaluates the whole prompt")
}

// TestSlotActionErrors: the slot actions' refusals, as llama.cpp's: 501
// without a save directory, 400 for a bad slot id, action or file name
// (none reaching outside the directory) and for a state that is missing,
// corrupt or of another model, 503 while the slot is busy.
func TestSlotActionErrors(t *testing.T) {
	dir := t.TempDir()
	h := newHandler(t, Options{SlotSavePath: dir, Slots: 2})
	require.Equal(t, http.StatusOK, do(h, http.MethodPost, "/slots/1?action=save", `{"filename": "ok"}`).Code)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corrupt"), []byte("WLMS and nothing more"), 0o644))
	other, err := engine.Load(tinyModelFile(t), engine.LoadOptions{})
	require.NoError(t, err)
	foreign, err := other.NewSession(engine.SessionOptions{KVType: h.KVType()})
	require.NoError(t, err)
	f, err := os.Create(filepath.Join(dir, "foreign"))
	require.NoError(t, err)
	require.NoError(t, foreign.SaveState(f))
	require.NoError(t, f.Close())

	for _, tc := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"no save directory", "", "", http.StatusNotImplemented, "not_supported"},
		{"a slot id that is not a number", "/slots/x?action=save", `{"filename": "a"}`, http.StatusBadRequest, "invalid_slot"},
		{"a slot id out of range", "/slots/2?action=save", `{"filename": "a"}`, http.StatusBadRequest, "invalid_slot"},
		{"no action", "/slots/0", `{"filename": "a"}`, http.StatusBadRequest, "invalid_action"},
		{"an unknown action", "/slots/0?action=load", `{"filename": "a"}`, http.StatusBadRequest, "invalid_action"},
		{"no file name", "/slots/0?action=save", `{}`, http.StatusBadRequest, "missing_required_parameter"},
		{"not JSON", "/slots/0?action=save", `filename=a`, http.StatusBadRequest, "invalid_json"},
		{"an empty file name", "/slots/0?action=save", `{"filename": ""}`, http.StatusBadRequest, "invalid_filename"},
		{"a parent directory", "/slots/0?action=save", `{"filename": ".."}`, http.StatusBadRequest, "invalid_filename"},
		{"a path up", "/slots/0?action=restore", `{"filename": "../ok"}`, http.StatusBadRequest, "invalid_filename"},
		{"an absolute path", "/slots/0?action=save", `{"filename": "/x"}`, http.StatusBadRequest, "invalid_filename"},
		{"a backslash", "/slots/0?action=save", `{"filename": "..\\x"}`, http.StatusBadRequest, "invalid_filename"},
		{"a control character", "/slots/0?action=save", `{"filename": "a\nb"}`, http.StatusBadRequest, "invalid_filename"},
		{"a missing file", "/slots/0?action=restore", `{"filename": "none"}`, http.StatusBadRequest, "file_not_found"},
		{"a corrupt file", "/slots/0?action=restore", `{"filename": "corrupt"}`, http.StatusBadRequest, "invalid_value"},
		{"another model's state", "/slots/0?action=restore", `{"filename": "foreign"}`, http.StatusBadRequest, "invalid_value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := h
			if tc.path == "" {
				target, tc.path, tc.body = newHandler(t, Options{}), "/slots/0?action=save", `{"filename": "a"}`
			}
			w := do(target, http.MethodPost, tc.path, tc.body)
			require.Equal(t, tc.status, w.Code, w.Body.String())
			e := apiErrorOf(t, w.Body.Bytes())
			require.NotNil(t, e.Code)
			assert.Equal(t, tc.code, *e.Code, e.Message)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "only the files the test made")

	t.Run("busy", func(t *testing.T) {
		sess, ok := h.sched.slots.claim("test", func(s *engine.Session) bool { return s == h.sched.sessions[0] })
		require.True(t, ok)
		defer h.sched.slots.put(sess, "test")
		w := do(h, http.MethodPost, "/slots/0?action=save", `{"filename": "a"}`)
		require.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
		assert.Equal(t, "slot_busy", *apiErrorOf(t, w.Body.Bytes()).Code)
		assert.Equal(t, http.StatusOK, do(h, http.MethodPost, "/slots/1?action=erase", `{}`).Code, "another slot is free")
	})
	t.Run("a key is needed", func(t *testing.T) {
		keys, err := NewKeyRing("sk-slots")
		require.NoError(t, err)
		w := do(newHandler(t, Options{SlotSavePath: dir, Keys: keys}), http.MethodPost, "/slots/0?action=erase", `{}`)
		assert.Equal(t, http.StatusUnauthorized, w.Code, w.Body.String())
	})
	t.Run("not with a lender", func(t *testing.T) {
		m := loadDefault(t)
		s, err := m.NewSession(engine.SessionOptions{})
		require.NoError(t, err)
		_, err = New(m, Options{SlotSavePath: dir, Sessions: &oneSession{s: s}})
		assert.ErrorIs(t, err, ErrInvalidOptions)
	})
}

//go:build !js

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeSlotSavePath: wasmlm serve -slot-save-path DIR makes DIR and
// answers llama.cpp's slot actions: a slot saved there, erased and
// restored continues as it was; a file name cannot leave DIR.
func TestServeSlotSavePath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "slots")
	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-web", "", "-slot-save-path", dir}, io.Discard, &stderr)
	}()
	base := servedAt(t, &stderr)
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, m
	}
	complete := func() string {
		t.Helper()
		code, m := post("/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}`)
		require.Equal(t, http.StatusOK, code, "%v", m)
		return m["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	want := complete()

	code, saved := post("/slots/0?action=save", `{"filename": "story"}`)
	require.Equal(t, http.StatusOK, code, "%v", saved)
	assert.Equal(t, "story", saved["filename"])
	_, err := os.Stat(filepath.Join(dir, "story"))
	require.NoError(t, err, "saved in -slot-save-path")
	code, erased := post("/slots/0?action=erase", `{}`)
	require.Equal(t, http.StatusOK, code, "%v", erased)
	assert.Equal(t, saved["n_saved"], erased["n_erased"])
	code, restored := post("/slots/0?action=restore", `{"filename": "story"}`)
	require.Equal(t, http.StatusOK, code, "%v", restored)
	assert.Equal(t, saved["n_saved"], restored["n_restored"])
	assert.Equal(t, want, complete(), "the restored slot answers as before")

	code, refused := post("/slots/0?action=save", `{"filename": "../outside"}`)
	assert.Equal(t, http.StatusBadRequest, code, "%v", refused)
	_, err = os.Stat(filepath.Join(dir, "..", "outside"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	stopServe(t, interrupt, exit, &stderr)
}

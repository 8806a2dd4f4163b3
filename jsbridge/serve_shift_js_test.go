//go:build wasmlm_serve

package jsbridge

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
)

// TestServeHTTPContextShift: the page's served API takes load's
// contextShift default (serveHTTP's contextShift and nKeep) as the page's
// chat does: a request that omits context_shift shifts with the default's
// n_keep, dropping the tokens chat's shift drops with the same options,
// and without the default (or with context_shift false) a reply too long
// for the context is refused naming max_tokens. (Greedy, never ending on
// BOS or EOS, in a context of 64 positions: a reply of 64 tokens fills it.)
func TestServeHTTPContextShift(t *testing.T) {
	b := New()
	t.Cleanup(func() {
		b.Release()
		require.Zero(t, b.LiveFuncs(), "js.Funcs left unreleased")
	})
	mustCall(t, b, "load", jsBytes(models.Default()), obj(map[string]any{"contextLength": 64}))
	request := func(fields map[string]any) map[string]any {
		fields["messages"], fields["temperature"], fields["max_tokens"] = userSays("Once upon a time"), 0, 64
		fields["logit_bias"] = map[string]any{"1": -100, "2": -100}
		return fields
	}
	type usage struct {
		CompletionTokens     int `json:"completion_tokens"`
		ContextShifts        int `json:"context_shifts"`
		ContextShiftedTokens int `json:"context_shifted_tokens"`
	}
	for _, tc := range []struct {
		name    string
		fields  map[string]any
		options map[string]any // load's default, as serveHTTP's options (and chat's)
		param   string         // of the HTTP error, "" for a reply that shifts
	}{
		{"load's default", map[string]any{}, map[string]any{"contextShift": true}, ""},
		{"load's default with nKeep", map[string]any{}, map[string]any{"contextShift": true, "nKeep": 5}, ""},
		{"the request's n_keep first", map[string]any{"n_keep": 1}, map[string]any{"contextShift": true, "nKeep": 5}, ""},
		{"no default", map[string]any{}, map[string]any{}, "max_tokens"},
		{"the request's context_shift first", map[string]any{"context_shift": false}, map[string]any{"contextShift": true}, "max_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := json.Marshal(request(tc.fields))
			require.NoError(t, err)
			opts := map[string]any{"modelName": models.DefaultName}
			for k, v := range tc.options {
				opts[k] = v
			}
			got, err := serve(t, b, "POST", "/v1/chat/completions", string(body), opts, nil)
			require.NoError(t, err)
			if tc.param != "" {
				assert.Equal(t, http.StatusBadRequest, got.status)
				assert.Equal(t, tc.param, apiErrorParam(t, got.body()))
				return
			}
			require.Equal(t, http.StatusOK, got.status, got.body())
			var resp struct{ Usage usage }
			require.NoError(t, json.Unmarshal([]byte(got.body()), &resp))
			res := mustCall(t, b, "chat", chatRequest(t, request(tc.fields)), obj(tc.options))
			chat := res.Get("usage")
			assert.Equal(t, 64, resp.Usage.CompletionTokens)
			assert.Equal(t, 1, resp.Usage.ContextShifts)
			assert.Equal(t, chat.Get("contextShifts").Int(), resp.Usage.ContextShifts, "as chat shifts")
			assert.Equal(t, chat.Get("contextShiftedTokens").Int(), resp.Usage.ContextShiftedTokens, "as chat shifts, keeping n_keep")
		})
	}
	// Each default has its handler: n_keep changes what a shift drops.
	shifted := func(nKeep int) int {
		body, err := json.Marshal(request(map[string]any{}))
		require.NoError(t, err)
		got, err := serve(t, b, "POST", "/v1/chat/completions", string(body),
			map[string]any{"modelName": models.DefaultName, "contextShift": true, "nKeep": nKeep}, nil)
		require.NoError(t, err)
		var resp struct{ Usage usage }
		require.NoError(t, json.Unmarshal([]byte(got.body()), &resp), got.body())
		return resp.Usage.ContextShiftedTokens
	}
	assert.NotEqual(t, shifted(0), shifted(20))

	_, err := serve(t, b, "POST", "/v1/chat/completions", `{}`, map[string]any{"contextShift": true, "nKeep": -2}, nil)
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "nKeep", je.Field)
}

// apiErrorParam is the param of an OpenAI error object.
func apiErrorParam(t testing.TB, body string) string {
	t.Helper()
	var e struct{ Error struct{ Param string } }
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e.Error.Param
}

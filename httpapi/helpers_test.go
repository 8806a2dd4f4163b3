package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// loadDefault loads the embedded default model, as the edge worker does.
func loadDefault(t testing.TB) *engine.Model {
	t.Helper()
	m, err := engine.Load(models.Default(), engine.LoadOptions{})
	require.NoError(t, err)
	return m
}

func newHandler(t testing.TB, opts Options) *Handler {
	t.Helper()
	if opts.ModelName == "" {
		opts.ModelName = models.DefaultName
	}
	h, err := New(loadDefault(t), opts)
	require.NoError(t, err)
	return h
}

// do sends one request through the handler.
func do(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// apiErrorOf checks that body is exactly an OpenAI error object
// {"error": {"message", "type", "param", "code"}} and returns it.
func apiErrorOf(t testing.TB, body []byte) errorObject {
	t.Helper()
	var raw map[string]map[string]any
	require.NoError(t, json.Unmarshal(body, &raw), "error body %s", body)
	require.Len(t, raw, 1, "one top-level key: %s", body)
	obj, ok := raw["error"]
	require.True(t, ok, "no \"error\" key: %s", body)
	require.Len(t, obj, 4, "message, type, param, code: %s", body)
	for _, k := range []string{"message", "type", "param", "code"} {
		require.Contains(t, obj, k)
	}
	require.IsType(t, "", obj["message"])
	require.NotEmpty(t, obj["message"])
	require.IsType(t, "", obj["type"])
	var e errorBody
	require.NoError(t, json.Unmarshal(body, &e))
	return e.Error
}

// event is one Server-Sent Event.
type event struct {
	name string // "" for the default "message" events
	data string
}

// parseSSE splits a text/event-stream body into events.
func parseSSE(t testing.TB, body string) []event {
	t.Helper()
	var (
		events []event
		cur    event
		inside bool
	)
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if inside {
				events = append(events, cur)
			}
			cur, inside = event{}, false
		case strings.HasPrefix(line, "event: "):
			cur.name, inside = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			require.Empty(t, cur.data, "one data line per event")
			cur.data, inside = strings.TrimPrefix(line, "data: "), true
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	require.False(t, inside, "the stream ends with a blank line")
	return events
}

// streamChunk is what a test reads from a streamed chunk.
type streamChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Usage   json.RawMessage `json:"usage"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
		Delta        *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
}

// completionResponse is what a test reads from a non-streamed response.
type completionResponse struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int     `json:"index"`
		Text         *string `json:"text"`
		FinishReason string  `json:"finish_reason"`
		Message      *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// text is the generated text of a text or chat completion.
func (c completionResponse) text(t testing.TB) string {
	t.Helper()
	require.Len(t, c.Choices, 1)
	if c.Choices[0].Message != nil {
		return c.Choices[0].Message.Content
	}
	require.NotNil(t, c.Choices[0].Text)
	return *c.Choices[0].Text
}

func decodeCompletion(t testing.TB, w *httptest.ResponseRecorder) completionResponse {
	t.Helper()
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var c completionResponse
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &c))
	return c
}

// mustJSON marshals v for a request body.
func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

//go:build !js

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startStream posts a greedy streamed completion of maxTokens tokens to a
// server and returns its events' reader once the first one is in.
func startStream(t *testing.T, base string, maxTokens int) (*sseReader, sseEvent) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"prompt": "Once upon a time", "max_tokens": maxTokens, "temperature": 0, "stream": true})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctxTimeout(t), "POST", base+"/v1/completions", strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	rd := newSSEReader(resp.Body)
	first, ok := rd.next(t)
	require.True(t, ok, "a first event")
	return rd, first
}

// checkChunks checks that every event is a data event holding a completion
// chunk (valid JSON), and returns how many carried text and the finish
// reason.
func checkChunks(t *testing.T, events []sseEvent) (texts int, finish string) {
	t.Helper()
	for _, ev := range events {
		require.Empty(t, ev.name, "a data event")
		var c struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &c), "%s", ev.data)
		require.Len(t, c.Choices, 1)
		if c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
		} else {
			texts++
		}
	}
	return texts, finish
}

// TestHTTPServeStopsGracefully: `wasmlm serve` signalled
// in the middle of a stream stops accepting connections at once, lets the
// stream finish within -shutdown-grace (it ends with [DONE]) and exits 0;
// with SIGINT as with SIGTERM.
func TestHTTPServeStopsGracefully(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startServe(t, "-m", slowModel(t), "-shutdown-grace", "60s")
			const maxTokens = 200 // about a second of generation, far inside the grace period
			rd, first := startStream(t, p.url, maxTokens)
			p.signal(t, sig)
			require.Eventually(t, p.refusesConnections, liveness, 10*time.Millisecond, "the listener is closed")

			events := append([]sseEvent{first}, rd.rest(t)...)
			require.Equal(t, sseEvent{data: "[DONE]"}, events[len(events)-1], "the stream ends with [DONE]")
			texts, finish := checkChunks(t, events[:len(events)-1])
			assert.Equal(t, maxTokens, texts, "every token")
			assert.Equal(t, "length", finish)
			assert.Equal(t, 0, p.exitCode(t, liveness), "%s", p.stderr)
			assert.Contains(t, p.stderr.String(), "serve: stopped")
		})
	}
}

// TestHTTPServeEndsStreamsAfterTheGrace: a stream still
// running when the grace period ends (here at once: -shutdown-grace 0) ends
// with an error event, code server_shutting_down, and no [DONE]; the server
// exits 0.
func TestHTTPServeEndsStreamsAfterTheGrace(t *testing.T) {
	p := startServe(t, "-m", slowModel(t), "-shutdown-grace", "0s")
	rd, first := startStream(t, p.url, 990) // the whole context: seconds
	p.signal(t, syscall.SIGTERM)
	events := append([]sseEvent{first}, rd.rest(t)...)
	last := events[len(events)-1]
	require.Equal(t, "error", last.name, "the stream ends with an error event: %v", last)
	var e struct {
		Error errorObject `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(last.data), &e), last.data)
	assert.Equal(t, "server_shutting_down", deref(e.Error.Code))
	assert.Equal(t, "server_error", e.Error.Type)
	texts, finish := checkChunks(t, events[:len(events)-1])
	assert.Less(t, texts, 990, "the stream was cut")
	assert.Empty(t, finish, "no finish_reason: the text is not complete")
	assert.Equal(t, 0, p.exitCode(t, liveness), "%s", p.stderr)
	assert.Contains(t, p.stderr.String(), "the generations still running were stopped")
}

//go:build !js

package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeTokenLimitBurst: under `serve -token-limit 200`, 30 completions
// of one client sent at once, each able to use 60 tokens (prompt and
// max_tokens), use at most the allowance, one request's 60 more, and what
// the minute refilled while they ran; the others are refused 429 (tokens)
// with Retry-After.
func TestServeTokenLimitBurst(t *testing.T) {
	const (
		allowance = 200
		maxTokens = 55 // with the 5 tokens of the prompt: 60
		clients   = 30
	)
	ctx, interrupt := context.WithCancel(context.Background())
	var stderr lockedBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-web", "", "-slots", "2", "-client-queue", "64", "-token-limit", "200"}, io.Discard, &stderr)
	}()
	base := servedAt(t, &stderr)
	defer stopServe(t, interrupt, exit, &stderr)

	body := `{"prompt": "Once upon a time", "max_tokens": 55}`
	var (
		mu                      sync.Mutex
		admitted, refused, used int
		promptTokens            int
		wg                      sync.WaitGroup
	)
	start := make(chan struct{})
	for range clients {
		wg.Go(func() {
			<-start
			resp, err := http.Post(base+"/v1/completions", "application/json", strings.NewReader(body))
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			var answer struct {
				Usage struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
				Error struct{ Type string } `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
			mu.Lock()
			defer mu.Unlock()
			switch resp.StatusCode {
			case http.StatusOK:
				admitted++
				used += answer.Usage.PromptTokens + answer.Usage.CompletionTokens
				promptTokens = answer.Usage.PromptTokens
			case http.StatusTooManyRequests:
				refused++
				assert.Equal(t, "tokens", answer.Error.Type)
				assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			default:
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	refilled := int(math.Ceil(time.Since(began).Minutes() * allowance))
	t.Logf("%d admitted (%d tokens), %d refused; %d tokens refilled meanwhile", admitted, used, refused, refilled)
	require.Positive(t, promptTokens)
	assert.Equal(t, clients, admitted+refused)
	assert.Positive(t, refused)
	assert.LessOrEqual(t, used, allowance+promptTokens+maxTokens+refilled)
}

//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The megabyte burst: as many clients as the server admits
// (slots + queue) each send a body of about 1 MiB (httpapi's limit) that
// is expensive to decode or tokenize, all at once.
const (
	burstSlots   = 2
	burstQueue   = 64
	burstClients = burstSlots + burstQueue
	// burstRSSGrowth bounds the server's peak resident memory over its
	// memory at start: the admitted bodies (66 MiB) and what at most
	// burstSlots of them become while they are decoded and tokenized at
	// once (a megabyte of text is some 100 MiB of token work with the
	// collector's headroom). Before requests were prepared in one of -slots
	// places, each admitted body was decoded and tokenized at once, and the
	// same bursts took the server to 2.3–3.8 GiB.
	burstRSSGrowth = 512 << 20
	// burstRSSReturned bounds the server's resident memory over its memory
	// at start once it has been idle for a while after a burst: it gives
	// the memory back rather than holding it for minutes.
	burstRSSReturned = 48 << 20
)

// burstKind is one kind of megabyte body, and the status (and for an
// error, the code) every one of them gets.
type burstKind struct {
	name, path, body string
	status           int
	code             string
}

func burstKinds() []burstKind {
	ids := func(n int, id string) string { return "[" + strings.Repeat(id+",", n-1) + id + "]" }
	text := strings.Repeat("a", 1_000_000)
	bias := make(map[string]int, 80_000)
	for i := range 80_000 {
		bias[strconv.Itoa(i)] = 1
	}
	biasJSON, _ := json.Marshal(bias)
	return []burstKind{
		{"a megabyte of text to tokenize", "/tokenize", `{"content": "` + text + `"}`, http.StatusOK, ""},
		{"200,000 token ids to detokenize", "/detokenize", `{"tokens": ` + ids(200_000, "300") + `}`, http.StatusOK, ""},
		{"a megabyte prompt", "/v1/completions", `{"prompt": "` + text + `", "max_tokens": 1}`, http.StatusBadRequest, "context_length_exceeded"},
		{"a megabyte chat message", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "` + text + `"}], "max_tokens": 1}`, http.StatusBadRequest, "context_length_exceeded"},
		{"30,000 empty chat messages", "/v1/chat/completions", `{"messages": [` + strings.TrimSuffix(strings.Repeat(`{"role": "user", "content": ""},`, 30_000), ",") + `], "max_tokens": 1}`, http.StatusBadRequest, "context_length_exceeded"},
		{"a prompt of 500,000 token ids", "/v1/completions", `{"prompt": ` + ids(500_000, "1") + `, "max_tokens": 1}`, http.StatusBadRequest, "context_length_exceeded"},
		{"80,000 logit_bias entries", "/v1/completions", `{"prompt": "a", "logit_bias": ` + string(biasJSON) + `, "max_tokens": 1}`, http.StatusBadRequest, "invalid_value"},
	}
}

// TestHTTPServeMegabyteBurst: bursts of 66 requests of a
// megabyte each, of every kind that takes memory to decode or tokenize,
// are each answered (none refused: the queue holds them), the server's
// peak memory stays within its bound, and once idle it gives the memory
// back.
func TestHTTPServeMegabyteBurst(t *testing.T) {
	// The clients share one address: it may fill the queue (-client-queue).
	p := startServe(t, "-slots", fmt.Sprint(burstSlots), "-queue", fmt.Sprint(burstQueue), "-client-queue", fmt.Sprint(burstQueue))
	start, ok := p.rss(t)
	if !ok {
		skipOrFail(t, "no /proc: the server's memory is not measured here")
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	var peak int64
	for _, k := range burstKinds() {
		perKind := p.resetPeakRSS()
		require.LessOrEqual(t, len(k.body), 1<<20, k.name)
		answers := make(chan string, burstClients)
		var wg sync.WaitGroup
		for range burstClients {
			wg.Go(func() {
				resp, err := client.Post(p.url+k.path, "application/json", strings.NewReader(k.body))
				if !assert.NoError(t, err, k.name) {
					answers <- err.Error()
					return
				}
				defer resp.Body.Close()
				var e struct {
					Error errorObject `json:"error"`
				}
				if resp.StatusCode == http.StatusOK {
					_, err = io.Copy(io.Discard, resp.Body)
				} else {
					err = json.NewDecoder(resp.Body).Decode(&e)
				}
				answers <- fmt.Sprintf("%d %s %v", resp.StatusCode, deref(e.Error.Code), err)
			})
		}
		wg.Wait()
		close(answers)
		got := map[string]int{}
		for a := range answers {
			got[a]++
		}
		assert.Equal(t, map[string]int{fmt.Sprintf("%d %s <nil>", k.status, k.code): burstClients}, got, k.name)

		high := p.peakRSS(t)
		idle := returnedRSS(t, p, start+burstRSSReturned)
		assert.LessOrEqual(t, idle-start, int64(burstRSSReturned), "%s: the memory given back once idle", k.name)
		peak = max(peak, high)
		if perKind {
			t.Logf("%s × %d: peak RSS %s MiB, %s MiB once idle (%s at start)", k.name, burstClients, mib(high), mib(idle), mib(start))
		}
		assert.LessOrEqual(t, high-start, int64(burstRSSGrowth), "%s: peak RSS growth", k.name)
	}
	t.Logf("peak RSS %s MiB", mib(peak))

	c := postCompletion(t, p.url, "/v1/completions", `{"prompt": "Once upon a time", "max_tokens": 5}`)
	assert.Equal(t, 5, c.Usage.CompletionTokens, "the server serves on")
}

// returnedRSS waits, up to liveness, for the server's resident memory to
// fall to goal, and returns the last measured.
func returnedRSS(t *testing.T, p *serveProcess, goal int64) int64 {
	t.Helper()
	deadline := time.Now().Add(liveness)
	for {
		b, _ := p.rss(t)
		if b <= goal || time.Now().After(deadline) {
			return b
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// BenchmarkStartup is what the edge worker does for every request before
// serving it: parse the embedded model in place and build the handler (one
// session). Run it under wasm to see the worker's share of a cold request.
func BenchmarkStartup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		m, err := engine.Load(models.Default(), engine.LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := New(m, Options{Slots: 1, QueueSize: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHealth is the handler's own overhead on the smallest request.
func BenchmarkHealth(b *testing.B) {
	h := newHandler(b, Options{})
	b.ReportAllocs()
	for b.Loop() {
		if w := do(h, "GET", "/health", ""); w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkConcurrent runs 4 clients at once, each asking for 64 greedy
// tokens, against 1, 2 and 4 slots: the throughput that more sessions buy
// on this machine (the forward pass itself is single-threaded).
func BenchmarkConcurrent(b *testing.B) {
	const clients, tokens = 4, 64
	body := fmt.Sprintf(`{"prompt": "Once upon a time", "max_tokens": %d, "temperature": 0}`, tokens)
	for _, slots := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			h := newHandler(b, Options{Slots: slots})
			for b.Loop() {
				var wg sync.WaitGroup
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if w := do(h, "POST", "/v1/completions", body); w.Code != http.StatusOK {
							b.Error(w.Body.String())
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*clients*tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

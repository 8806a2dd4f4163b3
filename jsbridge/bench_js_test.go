package jsbridge

import (
	"testing"
)

// BenchmarkYield is one round trip to the JavaScript event loop, the cost
// the bridge pays between two tokens (Node.js here; the browser e2e
// benchmark reports it in Chromium as timings.yieldMs per token).
func BenchmarkYield(b *testing.B) {
	bd := New()
	defer bd.Release()
	y := bd.newYielder()
	defer y.close()
	for b.Loop() {
		y.yield()
	}
}

// BenchmarkGenerate is greedy decoding of the default model through the
// bridge's JavaScript surface, yields included.
func BenchmarkGenerate(b *testing.B) {
	bd := newLoaded(b)
	for b.Loop() {
		res := mustCall(b, bd, "generate", "", greedy(200))
		t := res.Get("timings")
		b.ReportMetric(t.Get("decodeTokensPerSecond").Float(), "tokens/s")
		b.ReportMetric(t.Get("yieldMs").Float()/t.Get("decodeTokens").Float()*1e6, "yield-ns/token")
	}
}

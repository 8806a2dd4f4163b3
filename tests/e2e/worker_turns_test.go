//go:build !js

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
)

// TestWorkerAnswersWhileItEvaluates: the worker hands the isolate's thread
// back at every prompt block and every embedding pass, not only every few
// generated tokens: /health, asked again and again (one after another)
// while one long prompt is evaluated, or one request's many texts are
// embedded, is answered several times before that request's own answer
// arrives. (When the worker turned only every 8 prompt blocks or passes, a
// /health, which takes a few turns to be read, run and written, was
// answered at most once, the client waiting for nearly the whole request.)
func TestWorkerAnswersWhileItEvaluates(t *testing.T) {
	// stories260K's context is 512 tokens: a 500-token prompt is 16 prompt
	// blocks of 32 tokens.
	prompt := fmt.Sprintf(`{"prompt": [%s], "temperature": 0, "max_tokens": 1}`, strings.TrimSuffix(strings.Repeat("300, ", 500), ", "))
	t.Run("a long prompt", func(t *testing.T) {
		answeredWhileItRuns(t, edgeWorker(t).url, "/v1/completions", prompt)
	})
	// A small BERT evaluates its texts in passes of at least 512 tokens:
	// 30 texts of some 500 tokens are 30 passes (their answer, 30 vectors,
	// is written in one part).
	t.Run("many texts to embed", func(t *testing.T) {
		data := testmodel.GGUF(t, modelgen.Spec{Arch: "bert", Type: tensor.Q8_0, Seed: 1,
			Shape: modelgen.Shape{Dim: 128, HiddenDim: 512, Layers: 2, Heads: 4, ContextLength: 512}})
		path := filepath.Join(t.TempDir(), "bert.gguf")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		mf := serveMiniflare(t, edgeWorker(t).build, nil, "--model", path)
		text := fmt.Sprintf("%q", strings.Repeat("cat dog sun sea red ", 100))
		texts := strings.TrimSuffix(strings.Repeat(text+", ", 30), ", ")
		answeredWhileItRuns(t, mf.url, "/v1/embeddings", fmt.Sprintf(`{"input": [%s], "truncate": true}`, texts))
	})
}

// answeredWhileItRuns posts body to base+path and meanwhile asks /health
// again and again: at least three of its answers, each arrived before the
// post's, count the post in flight.
func answeredWhileItRuns(t *testing.T, base, path, body string) {
	ended := make(chan edgeAnswer, 1)
	go func() { ended <- send(t, "POST", base+path, body) }()
	answered := 0
	for {
		h := health(t, base)
		select {
		case a := <-ended:
			require.Equal(t, http.StatusOK, a.status, "%s", a.body)
			require.GreaterOrEqual(t, answered, 3, "/health answers counting %s in flight before its answer", path)
			return
		default:
		}
		if h.InFlight == 1 {
			answered++
		}
	}
}

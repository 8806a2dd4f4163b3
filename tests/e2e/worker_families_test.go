//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/internal/longtest"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// workerFamilies are the architectures TestWorkerEveryFamily serves in make
// test, one per kind of machinery beyond the llama family's layer: Gated
// DeltaNet (qwen35), short convolutions (lfm2), Mamba-2 (granitehybrid),
// MXFP4 experts and attention sinks (gpt-oss), per-layer embeddings
// (gemma4), AltUp and LAuReL (gemma3n) and a mixture of experts (qwen3moe).
// make test-long (WASMLM_LONG=1) serves every parity model.
var workerFamilies = []string{"qwen35", "lfm2", "granitehybrid", "gpt-oss", "gemma4", "gemma3n", "qwen3moe"}

// workerFamilyModels are the parity models TestWorkerEveryFamily serves:
// every one under WASMLM_LONG (F32 and quantized), else those of
// workerFamilies (the first model of each architecture, its variants
// aside) in the family's quantized type, which the worker's SIMD kernels
// run.
func workerFamilyModels() []modelgen.Model {
	all := modelgen.ParityModels()
	if longtest.Enabled() {
		return all
	}
	var out []modelgen.Model
	for _, m := range all {
		if a := m.Spec.Arch; slices.Contains(workerFamilies, a) && m.Name == fmt.Sprintf("%s-%v", a, m.Spec.Type) {
			out = append(out, m)
		}
	}
	return out
}

// TestWorkerEveryFamily: every decoder architecture runs at the edge as
// natively. Each parity model (`wasmlm bench -gen DIR -shapes parity`) is
// put into miniflare's local R2 bucket and named by WASMLM_MODEL, one
// miniflare at a time (a changed WASMLM_MODEL takes a new isolate); its
// greedy completion's text, its greedy chat reply to familyChat and its
// forced tool call (familyToolRequest) are the native server's over the
// same file and session (the worker's context and KV cache). make test
// serves one quantized model per kind of machinery (workerFamilies), make
// test-long every parity model.
func TestWorkerEveryFamily(t *testing.T) {
	build := edgeWorker(t).build
	dir := t.TempDir()
	chatBody := jsonString(t, map[string]any{"messages": familyChatJS(), "temperature": 0, "max_tokens": familyChatTokens})
	served := 0
	for _, pm := range workerFamilyModels() {
		data, m := buildParityModel(t, pm)
		if !m.Generates() {
			continue // the encoders: TestWorkerEmbeddings
		}
		served++
		t.Run(pm.Name, func(t *testing.T) {
			path := filepath.Join(dir, pm.Name+".gguf")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			mf := serveMiniflare(t, build, nil, "--model", path)
			meta := edgeModelMeta(t, mf.url)
			native := nativeEdgeServer(t, data, pm.Name, meta.ContextLength, meta.KVType)

			wantStatus, want, _ := greedyCompletion(t, native)
			require.Equal(t, http.StatusOK, wantStatus, want)
			require.NotEmpty(t, want, "the native server's greedy text")
			status, text, code := greedyCompletion(t, mf.url)
			require.Equal(t, http.StatusOK, status, "%s: %s", code, text)
			assert.Equal(t, want, text, "the greedy completion's text")
			assert.Equal(t, pm.Name, servedModel(t, mf.url))

			for _, req := range []struct{ what, body, finish string }{
				{"chat reply", chatBody, "length"}, // familyChatTokens cut it short
				{"forced tool call", familyToolRequest, "tool_calls"},
			} {
				wantReply, gotReply := workerChat(t, native, req.body), workerChat(t, mf.url, req.body)
				require.Equal(t, req.finish, wantReply.Choices[0].FinishReason, "the native %s: %s", req.what, wantReply.Choices[0].Message)
				assert.JSONEq(t, string(wantReply.Choices[0].Message), string(gotReply.Choices[0].Message), "the %s", req.what)
				assert.Equal(t, wantReply.Choices[0].FinishReason, gotReply.Choices[0].FinishReason, "the %s", req.what)
				assert.JSONEq(t, string(wantReply.Usage), string(gotReply.Usage), "the %s", req.what)
			}
		})
	}
	require.Positive(t, served, "the parity models include decoders")
}

// workerChat is base's chat completion of body, which must succeed: the
// parts TestWorkerEveryFamily compares.
func workerChat(t *testing.T, base, body string) familyToolReply {
	t.Helper()
	a := send(t, "POST", base+"/v1/chat/completions", body)
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var r familyToolReply
	require.NoError(t, json.Unmarshal(a.body, &r), "%s", a.body)
	require.Len(t, r.Choices, 1, "%s", a.body)
	return r
}

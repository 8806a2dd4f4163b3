//go:build !js

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/httpapi"
	"github.com/wasmlm/wasmlm/internal/modelgen"
)

// Real workloads at the edge, each from miniflare's local R2 in one Go
// instance: an embedding model of all-MiniLM-L6-v2's shape in Q8_0
// (batches of 32 texts), a reranker of the same shape (ms-marco-MiniLM-L-6's)
// and the largest chat model that fits, stories110M's shape in Q4_0
// (streamed chat completions with a JSON schema). Each answers 20
// concurrent requests with the native server's output over the same file
// and session (the worker's context and its F16 KV cache), and the
// isolate's peak memory — its WebAssembly memory, which never shrinks, and
// the JavaScript heap where workerd reports it — stays within the budget
// the worker reports, below the isolate's 128 MiB.

// edgeConcurrency is how many requests each model gets at once.
const edgeConcurrency = 20

// edgeModel is a model the edge tests serve, and its workload.
type edgeModel struct {
	name string                                     // the benchmark model's name (modelgen.BenchModels)
	run  func(base string, client int) (any, error) // one request as client; what it answered, to compare
}

// edgeMemory is /health's instance memory.
type edgeMemory struct {
	WasmBytes   int64  `json:"wasm_bytes"`
	JSHeapBytes *int64 `json:"js_heap_bytes"`
	BudgetBytes int64  `json:"budget_bytes"`
}

// TestWorkerEdgeModels: the three workloads, each from local R2 under 20
// concurrent requests, with the native server's outputs and their peak
// memory within the budget (logged, with workerd's resident peak, for
// httpapi/README.md's table).
func TestWorkerEdgeModels(t *testing.T) {
	build := edgeWorker(t).build
	dir := t.TempDir()
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = fmt.Sprintf("dog %d", i)
	}
	embedBody := jsonString(t, map[string]any{"input": texts})
	rerankBody := jsonString(t, map[string]any{"query": rerankQuery, "documents": embeddingTexts})
	chatBody := jsonString(t, map[string]any{
		"messages":    []map[string]string{{"role": "user", "content": "Tell me about a dog."}},
		"temperature": 0, "max_tokens": 12, "stream": true,
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": "dog", "strict": true,
			"schema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}},
		}},
	})
	cases := []edgeModel{
		{"minilm-l6-Q8_0", func(base string, client int) (any, error) {
			var l embeddingList
			if err := postAs(base+"/v1/embeddings", embedBody, client, &l); err != nil {
				return nil, err
			}
			if len(l.Data) != len(texts) {
				return nil, fmt.Errorf("%d vectors for %d texts", len(l.Data), len(texts))
			}
			return l, nil // compared bit for bit: the vectors' float32 values
		}},
		{"minilm-l6-rerank-Q8_0", func(base string, client int) (any, error) {
			var r rerankResponse
			if err := postAs(base+"/v1/rerank", rerankBody, client, &r); err != nil {
				return nil, err
			}
			if len(r.Results) != len(embeddingTexts) {
				return nil, fmt.Errorf("%d results for %d documents", len(r.Results), len(embeddingTexts))
			}
			return r, nil // compared bit for bit: the order and the scores
		}},
		{"stories110M-Q4_0", func(base string, client int) (any, error) {
			status, text, done, err := streamedChat(base, edgeClient(client), chatBody)
			switch {
			case err != nil:
				return nil, err
			case status != http.StatusOK:
				return nil, fmt.Errorf("%d: %s", status, text)
			case !done:
				return nil, fmt.Errorf("the stream did not end in [DONE]: %q", text)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(text), &v); err != nil {
				return nil, fmt.Errorf("not the schema's JSON object: %q: %w", text, err)
			}
			return text, nil // compared token for token: the greedy text
		}},
	}
	specs := map[string]modelgen.Spec{}
	all, err := modelgen.BenchModels("minilm-l6", "minilm-l6-rerank", "stories110M")
	require.NoError(t, err)
	for _, m := range all {
		specs[m.Name] = m.Spec
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, ok := specs[c.name]
			require.True(t, ok, "modelgen writes %s", c.name)
			start := time.Now()
			data, err := modelgen.Build(spec)
			require.NoError(t, err)
			path := filepath.Join(dir, c.name+".gguf")
			require.NoError(t, os.WriteFile(path, data, 0o644))
			built := time.Since(start)
			mf := serveMiniflare(t, build, nil, "--model", path)
			meta := edgeModelMeta(t, mf.url)
			if strings.HasPrefix(c.name, "stories") { // the encoders keep no KV cache
				assert.Equal(t, engine.KVF16, meta.KVType, "the worker's KV cache")
			}
			native := nativeEdgeServer(t, data, c.name, meta.ContextLength, meta.KVType)
			want, err := c.run(native, 0) // the native server's (streamed as the worker's)
			require.NoError(t, err, "the native server")
			served := time.Now()
			var wg sync.WaitGroup
			outs, errs := make([]any, edgeConcurrency), make([]error, edgeConcurrency)
			for i := range edgeConcurrency {
				wg.Go(func() { outs[i], errs[i] = c.run(mf.url, i) })
			}
			wg.Wait()
			for i, out := range outs {
				if assert.NoError(t, errs[i], "request %d", i) {
					assert.Equal(t, want, out, "request %d: the native server's output", i)
				}
			}
			mem, h := edgeHealth(t, mf.url)
			assert.Equal(t, 1, h.Loads, "one load")
			assert.Less(t, mem.BudgetBytes, int64(128<<20), "the budget is below the isolate's 128 MiB")
			peak, js := mem.WasmBytes, "not reported"
			if mem.JSHeapBytes != nil {
				peak += *mem.JSHeapBytes
				js = mib(*mem.JSHeapBytes) + " MiB"
			}
			assert.LessOrEqual(t, peak, mem.BudgetBytes, "the isolate's peak memory within the budget")
			rss := "unknown"
			if hwm, err := workerdPeakRSS(mf.pid); err == nil {
				rss = mib(hwm) + " MiB"
			}
			t.Logf("%s: %s file, context %d (%s KV); %d requests in %v (file built in %v): WebAssembly memory %s MiB, JS heap %s, budget %s MiB; workerd's resident peak %s",
				c.name, mib(int64(len(data)))+" MiB", meta.ContextLength, meta.KVType, edgeConcurrency, time.Since(served).Round(time.Millisecond), built.Round(time.Millisecond),
				mib(mem.WasmBytes), js, mib(mem.BudgetBytes), rss)
		})
	}
}

// edgeClient is the address client i sends from (its CF-Connecting-IP):
// four clients, so that 20 requests stay within a client's share of the
// queue.
func edgeClient(i int) string { return fmt.Sprintf("192.0.2.%d", i%4+1) }

// postAs posts body to url as client i (edgeClient) and decodes the
// answer, which must be 200, into v.
func postAs(url, body string, i int, v any) error {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("CF-Connecting-IP", edgeClient(i))
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

// edgeModelMeta is the worker's model's session, from GET /v1/models.
func edgeModelMeta(t *testing.T, base string) (meta struct {
	ContextLength int           `json:"context_length"`
	KVType        engine.KVType `json:"kv_type"`
}) {
	t.Helper()
	a := send(t, "GET", base+"/v1/models", "")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var list struct {
		Data []struct {
			Meta json.RawMessage `json:"meta"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(a.body, &list), "%s", a.body)
	require.Len(t, list.Data, 1)
	require.NoError(t, json.Unmarshal(list.Data[0].Meta, &meta))
	return meta
}

// edgeHealth reads the worker's /health: its instance's memory and counts.
func edgeHealth(t *testing.T, base string) (edgeMemory, instanceState) {
	t.Helper()
	a := send(t, "GET", base+"/health", "")
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	var h struct {
		Instance struct {
			instanceState
			Memory *edgeMemory `json:"memory"`
		} `json:"instance"`
	}
	require.NoError(t, json.Unmarshal(a.body, &h), "%s", a.body)
	require.NotNil(t, h.Instance.Memory, "/health's instance memory: %s", a.body)
	require.Positive(t, h.Instance.Memory.WasmBytes)
	return *h.Instance.Memory, h.Instance.instanceState
}

// nativeEdgeServer serves the model file data natively, named name, with
// the worker's session: its context and KV cache (edgeModelMeta).
func nativeEdgeServer(t *testing.T, data []byte, name string, contextLength int, kv engine.KVType) string {
	t.Helper()
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	h, err := httpapi.New(m, httpapi.Options{ModelName: name, ContextLength: contextLength, KVType: kv})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// workerdPeakRSS is the resident peak (VmHWM) of the workerd process
// among pid's descendants: miniflare's, the whole process (its own
// internal workers too), a cross-check on the isolate's measure. It fails
// where there is no /proc.
func workerdPeakRSS(pid int) (int64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	descends := func(p int) bool {
		for ; p > 1; p = parent[p] {
			if p == pid {
				return true
			}
		}
		return false
	}
	for p := range parent {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if strings.TrimSpace(string(comm)) != "workerd" || !descends(p) {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no workerd process under %d", pid)
}

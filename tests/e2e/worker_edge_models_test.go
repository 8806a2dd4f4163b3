//go:build !js

package e2e

import (
	"bufio"
	"context"
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
	// worst runs, after the 20 requests, the most memory-hungry requests
	// the worker accepts of this kind, against the worker at base and the
	// native server at native.
	worst func(t *testing.T, base, native string)
}

// edgeMemory is /health's instance memory.
type edgeMemory struct {
	WasmBytes   int64  `json:"wasm_bytes"`
	JSHeapBytes *int64 `json:"js_heap_bytes"`
	BudgetBytes int64  `json:"budget_bytes"`
}

// TestWorkerEdgeModels: the three workloads, each from local R2 under 20
// concurrent requests, with the native server's outputs, then the worst
// cases of each kind (worstEmbeddings, worstChats), and their peak memory
// within the budget (logged, with workerd's resident peak, for
// docs/edge-models.md's table).
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
		}, worstEmbeddings},
		{"minilm-l6-rerank-Q8_0", func(base string, client int) (any, error) {
			var r rerankResponse
			if err := postAs(base+"/v1/rerank", rerankBody, client, &r); err != nil {
				return nil, err
			}
			if len(r.Results) != len(embeddingTexts) {
				return nil, fmt.Errorf("%d results for %d documents", len(r.Results), len(embeddingTexts))
			}
			return r, nil // compared bit for bit: the order and the scores
		}, nil},
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
		}, worstChats},
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
			if c.worst != nil {
				c.worst(t, mf.url, native)
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

// worstEmbeddings: the largest embeddings request the worker accepts,
// engine.MaxEmbedInputs texts, answers the native server's vectors bit for
// bit; one text more, or more tokens than WASMLM_MAX_EMBED_TOKENS' default
// allows, is refused with a 400 naming the limit.
func worstEmbeddings(t *testing.T, base, native string) {
	texts := make([]string, engine.MaxEmbedInputs+1)
	for i := range texts {
		texts[i] = "dog" // the fewest tokens: the answer's size is its vectors'
	}
	most := jsonString(t, map[string]any{"input": texts[:engine.MaxEmbedInputs]})
	var want, got embeddingList
	require.NoError(t, postAs(native+"/v1/embeddings", most, 0, &want), "the native server")
	start := time.Now()
	err := postAs(base+"/v1/embeddings", most, 0, &got)
	t.Logf("%d texts embedded in %v", engine.MaxEmbedInputs, time.Since(start).Round(time.Millisecond))
	if assert.NoError(t, err, "%d texts", engine.MaxEmbedInputs) {
		assert.Len(t, got.Data, engine.MaxEmbedInputs)
		assert.Equal(t, want, got, "the native server's vectors")
	}
	a := send(t, "POST", base+"/v1/embeddings", jsonString(t, map[string]any{"input": texts}))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	assert.Contains(t, openAIError(t, a.body).Message, fmt.Sprintf("at most %d elements", engine.MaxEmbedInputs))
	long := make([]string, 500) // each at least 40 tokens: more than the default cap
	for i := range long {
		long[i] = strings.Repeat("dog ", 40)
	}
	a = send(t, "POST", base+"/v1/embeddings", jsonString(t, map[string]any{"input": long}))
	require.Equal(t, http.StatusBadRequest, a.status, "%s", a.body)
	e := openAIError(t, a.body)
	assert.Equal(t, "max_tokens_per_request", deref(e.Code))
	assert.Contains(t, e.Message, fmt.Sprintf("max %d tokens per request", httpapi.DefaultMaxEmbedTokens))
}

// worstChats: 20 streamed chats at once, of which the even ones' clients
// leave after their first chunk (each asked for 200 tokens, EOS banned, so
// it cannot end first) and the odd ones' read their 24 tokens to the end.
// Every one that left is stopped, in the slot or in the queue
// (/health's completions), and the others complete.
func worstChats(t *testing.T, base, _ string) {
	before := health(t, base).Completions
	chat := func(tokens int) string {
		return jsonString(t, map[string]any{
			"messages":    []map[string]string{{"role": "user", "content": "Tell me about a dog."}},
			"temperature": 0, "max_tokens": tokens, "stream": true, "logit_bias": map[string]float64{"2": -100},
		})
	}
	long, short := chat(200), chat(24)
	var wg sync.WaitGroup
	errs := make([]error, edgeConcurrency)
	for i := range edgeConcurrency {
		wg.Go(func() {
			leaves := i%2 == 0
			body := short
			if leaves {
				body = long
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := startChat(ctx, base, edgeClient(i), body)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				errs[i] = fmt.Errorf("%s: %s", resp.Status, b)
				return
			}
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if leaves && strings.HasPrefix(sc.Text(), "data: ") {
					return // the client leaves mid-stream
				}
				if sc.Text() == "data: [DONE]" {
					return
				}
			}
			errs[i] = fmt.Errorf("the stream ended without [DONE]: %v", sc.Err())
		})
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "request %d", i)
	}
	after := health(t, base).Completions
	for deadline := time.Now().Add(time.Minute); after["done"]+after["dropped"]+after["aborted"] < before["done"]+before["dropped"]+before["aborted"]+edgeConcurrency && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // the last to leave may still be stopping
		after = health(t, base).Completions
	}
	assert.Equal(t, edgeConcurrency/2, after["done"]-before["done"], "the chats read to the end: %v", after)
	assert.Equal(t, edgeConcurrency/2, after["dropped"]+after["aborted"]-before["dropped"]-before["aborted"], "the chats whose client left, stopped: %v", after)
}

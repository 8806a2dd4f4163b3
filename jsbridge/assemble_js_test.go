package jsbridge

import (
	"fmt"
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/models"
)

// prefixes reads the first n[i] bytes of each file, as a page does with a
// Range request, calling method (prepare or inspect) until it has enough:
// its answer.
func withHeaders(t testing.TB, b *Binding, method string, files [][]byte, opts js.Value) (js.Value, error) {
	t.Helper()
	n := make([]int, len(files))
	for i := range n {
		n[i] = 64
	}
	for {
		var prefixes, sizes []any
		for i, f := range files {
			prefixes = append(prefixes, jsBytes(f[:min(n[i], len(f))]))
			sizes = append(sizes, len(f))
		}
		v, err := call(t, b, method, js.ValueOf(prefixes), js.ValueOf(sizes), opts)
		if err != nil {
			return v, err
		}
		more := v.Get("more")
		if more.IsUndefined() || more.Int() < 0 {
			return v, nil
		}
		i := more.Int()
		require.Less(t, n[i], len(files[i]), "asked for more of file %d than it has", i)
		n[i] *= 2
	}
}

// assemble prepares shard index of count (count 1: the whole model) of the
// model in files and fills it with the reads prepare asked for, in chunks
// of chunk bytes, as a worker does.
func assemble(t testing.TB, b *Binding, files [][]byte, index, count, chunk int) {
	t.Helper()
	v, err := withHeaders(t, b, "prepare", files, obj(map[string]any{"shardIndex": index, "shardCount": count}))
	require.NoError(t, err)
	reads := v.Get("reads")
	placed := 0
	for i := range reads.Length() {
		r := reads.Index(i)
		src, start, end := r.Index(0).Int(), r.Index(1).Int(), r.Index(2).Int()
		for at := start; at < end; at += chunk {
			placed += mustCall(t, b, "fill", src, at, jsBytes(files[src][at:min(at+chunk, end)])).Int()
		}
	}
	assert.Equal(t, v.Get("bytes").Int(), placed)
}

// splitFiles writes the GGUF file data as count parts, as llama-gguf-split
// --split-max-tensors does (modelgen.Split).
func splitFiles(t testing.TB, data []byte, count int) [][]byte {
	t.Helper()
	parts, err := modelgen.Split(data, count)
	require.NoError(t, err)
	return parts
}

// TestAssembledModelIsTheModel: the default model read range by range
// (whole, and as the parts of a split GGUF) generates llama2.c's golden
// tokens and describes itself as when loaded from its bytes.
func TestAssembledModelIsTheModel(t *testing.T) {
	golden := golden.RuncStories260K(t)
	whole := models.Default()
	want := newLoaded(t)
	wantInfo := mustCall(t, want, "info")
	for name, files := range map[string][][]byte{
		"one file":      {whole},
		"split 3 parts": splitFiles(t, whole, 3),
	} {
		t.Run(name, func(t *testing.T) {
			b := New()
			defer b.Release()
			assemble(t, b, files, 0, 1, 4093)
			info := mustCall(t, b, "load", "assembled")
			for _, k := range []string{"architecture", "parameters", "vocabSize", "chatTemplate"} {
				assert.Equal(t, wantInfo.Get(k).String(), info.Get(k).String(), k)
			}
			inspected, err := withHeaders(t, b, "inspect", files, js.Undefined())
			require.NoError(t, err)
			assert.Equal(t, inspected.Get("fileSize").Int(), info.Get("fileSize").Int(), "the model's size: its parts joined")
			assert.Equal(t, len(files), inspected.Get("parts").Int())
			run := golden.Runs[0]
			res := mustCall(t, b, "generate", run.Prompt, greedy(golden.Steps+1-len(run.PromptIDs)))
			assert.Equal(t, run.GeneratedIDs, ints(res.Get("tokens")))
		})
	}
}

// TestAssembledShardsMatchWhole: every worker of a split model reads only
// its shard's ranges (of the file, or of a split GGUF's parts), and
// together they generate the golden tokens.
func TestAssembledShardsMatchWhole(t *testing.T) {
	golden := golden.RuncStories260K(t)
	for _, tc := range []struct {
		n, parts int
	}{{2, 1}, {3, 1}, {2, 3}} {
		t.Run(fmt.Sprintf("%d shards of %d files", tc.n, tc.parts), func(t *testing.T) {
			files := [][]byte{models.Default()}
			if tc.parts > 1 {
				files = splitFiles(t, models.Default(), tc.parts)
			}
			g := &group{}
			ports := peerPorts(tc.n)
			for i := range tc.n {
				b := New()
				g.bindings = append(g.bindings, b)
				assemble(t, b, files, i, tc.n, 1<<16)
				info := mustCall(t, b, "load", "assembled", obj(map[string]any{"peers": js.ValueOf(ports[i])}))
				require.Equal(t, i, info.Get("shardIndex").Int())
				if i > 0 {
					g.follows = append(g.follows, settled(t, b.Value().Call("follow")))
				}
			}
			defer func() {
				for _, b := range g.bindings {
					b.Release()
				}
				for _, f := range g.follows {
					<-f
				}
			}()
			for _, run := range golden.Runs[:2] {
				res := mustCall(t, g.bindings[0], "generate", run.Prompt, greedy(golden.Steps+1-len(run.PromptIDs)))
				assert.Equal(t, run.GeneratedIDs, ints(res.Get("tokens")), "%q", run.Prompt)
			}
		})
	}
}

func TestAssembleErrors(t *testing.T) {
	whole := models.Default()
	checkpoint, _ := testmodel.Stories260K()
	parts := splitFiles(t, whole, 3)
	b := New()
	defer b.Release()

	_, err := call(t, b, "load", "assembled")
	requireCode(t, err, "invalid_argument", "load('assembled') before prepare")
	_, err = call(t, b, "fill", 0, 0, jsBytes([]byte{1}))
	requireCode(t, err, "invalid_argument", "fill before prepare")

	_, err = withHeaders(t, b, "prepare", [][]byte{checkpoint}, js.Undefined())
	requireCode(t, err, "invalid_model", "a llama2.c checkpoint is not GGUF")
	_, err = withHeaders(t, b, "prepare", [][]byte{parts[0], parts[1]}, js.Undefined())
	requireCode(t, err, "invalid_model", "a split GGUF's part missing")
	_, err = withHeaders(t, b, "prepare", [][]byte{parts[0], parts[2], parts[1]}, js.Undefined())
	requireCode(t, err, "invalid_model", "a split GGUF's parts out of order")
	_, err = withHeaders(t, b, "prepare", [][]byte{whole}, obj(map[string]any{"shardIndex": 2, "shardCount": 2}))
	requireCode(t, err, "invalid_argument", "shardIndex past shardCount")
	_, err = call(t, b, "prepare", js.ValueOf([]any{jsBytes(whole[:64])}), js.ValueOf([]any{10}), js.Undefined())
	requireCode(t, err, "invalid_model", "a size below the prefix")
	_, err = call(t, b, "fill", "0", 0, jsBytes([]byte{1}))
	requireCode(t, err, "invalid_argument", "a source that is not a number")

	// A model filled in part is never loaded; the binding stays usable.
	v, err := withHeaders(t, b, "prepare", [][]byte{whole}, js.Undefined())
	require.NoError(t, err)
	mustCall(t, b, "fill", 0, 0, jsBytes(whole[:len(whole)/2]))
	_, err = call(t, b, "load", "assembled")
	requireCode(t, err, "invalid_model", "an incomplete model")
	assert.Equal(t, len(whole), v.Get("size").Int())
	assemble(t, b, [][]byte{whole}, 0, 1, 1<<20)
	mustCall(t, b, "load", "assembled")
	mustCall(t, b, "generate", "Once", greedy(4))
}

// requireCode checks that err is a rejection with code.
func requireCode(t testing.TB, err error, code, what string) {
	t.Helper()
	var e *jsError
	require.ErrorAs(t, err, &e, what)
	require.Equal(t, code, e.Code, "%s: %s", what, e.Message)
}

// TestInspect: what inspect says of a model agrees with what loading it
// says, and its memory estimate decides how many workers a model needs,
// from headers alone (a header claiming gigabytes of weights costs nothing).
func TestInspect(t *testing.T) {
	b := New()
	defer b.Release()
	whole := models.Default()
	v, err := withHeaders(t, b, "inspect", [][]byte{whole}, js.Undefined())
	require.NoError(t, err)
	want := mustCall(t, newLoaded(t), "info")
	for _, k := range []string{"architecture", "parameters", "vocabSize", "contextLength", "fileSize", "chatTemplate", "blockCount"} {
		assert.Equal(t, want.Get(k).String(), v.Get(k).String(), k)
	}
	for _, typ := range []string{"F32", "F16"} {
		assert.Equal(t, want.Get("tensorTypes").Get(typ).Int(), v.Get("tensorTypes").Get(typ).Int(), typ)
	}
	mem := v.Get("memory")
	assert.Equal(t, len(whole), mem.Get("weights").Int())
	assert.True(t, mem.Get("fits").Bool())
	assert.Equal(t, 1, mem.Get("workersNeeded").Int())
	assert.Equal(t, "f32", v.Get("kvType").String(), "a small model keeps an F32 cache")

	// An 8B-like shape in Q4_0 (4.4 GB): two workers, not one.
	big := modelgen.Spec{Shape: modelgen.Shape{Dim: 4096, HiddenDim: 14336, Layers: 32, Heads: 32, KVHeads: 8, VocabSize: 32000, ContextLength: 8192}, Type: tensor.Q4_0}
	l, err := modelgen.Header(big)
	require.NoError(t, err)
	header := func(opts map[string]any) (js.Value, error) {
		return call(t, b, "inspect", js.ValueOf([]any{jsBytes(l.Header)}), js.ValueOf([]any{l.Size}), obj(opts))
	}
	v, err = header(nil)
	require.NoError(t, err)
	mem = v.Get("memory")
	assert.Equal(t, "f16", v.Get("kvType").String(), "a large model's cache is F16")
	assert.Equal(t, 2, mem.Get("workersNeeded").Int())
	assert.Equal(t, 2, mem.Get("workers").Int())
	assert.True(t, mem.Get("fits").Bool())
	assert.Less(t, mem.Get("perWorker").Get("weights").Float(), 0.6*float64(l.Size))
	v, err = header(map[string]any{"workers": 1})
	require.NoError(t, err)
	assert.False(t, v.Get("memory").Get("fits").Bool(), "4.4 GB in one worker")
	v, err = header(map[string]any{"deviceMemory": 4})
	require.NoError(t, err)
	assert.False(t, v.Get("memory").Get("fits").Bool(), "4.4 GB on a 4 GB device")
	assert.True(t, v.Get("memory").Get("workersNeeded").IsNull())
	_, err = header(map[string]any{"workers": 9})
	requireCode(t, err, "invalid_argument", "more workers than kv heads")
	_, err = header(map[string]any{"kvType": "q8"})
	requireCode(t, err, "invalid_argument", "an unknown kvType")
}

package jsbridge

import (
	"context"
	"fmt"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/internal/golden"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/sampling"
)

// group is a model split across bindings in this one Go program, as a page
// splits it across workers: binding i holds shard i, and each pair talks
// over a MessageChannel.
type group struct {
	bindings []*Binding
	follows  []<-chan error // how the followers' follow() Promises settle
	memory   js.Value       // the SharedArrayBuffer of control words, or undefined
}

// settled attaches to Promise p at once (so its rejection is handled) and
// reports how it settles: nil, or the rejection's message.
func settled(t testing.TB, p js.Value) <-chan error {
	done := make(chan error, 1)
	var onResolve, onReject js.Func
	finish := func(err error) {
		done <- err
		onResolve.Release()
		onReject.Release()
	}
	onResolve = js.FuncOf(func(js.Value, []js.Value) any { finish(nil); return nil })
	onReject = js.FuncOf(func(_ js.Value, a []js.Value) any {
		finish(&jsError{Message: a[0].Get("message").String(), Code: a[0].Get("code").String()})
		return nil
	})
	p.Call("then", onResolve, onReject)
	return done
}

// peerPorts makes a MessageChannel for every pair of n shards: ports[i][j]
// is shard i's end of the channel to shard j (undefined at i = j).
func peerPorts(n int) [][]any {
	ports := make([][]any, n)
	for i := range ports {
		ports[i] = make([]any, n)
		ports[i][i] = js.Null()
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			ch := js.Global().Get("MessageChannel").New()
			ports[i][j], ports[j][i] = ch.Get("port1"), ch.Get("port2")
		}
	}
	return ports
}

// splitGroup splits the default model n ways and starts the followers:
// with fromFiles as the page does (a cutter binding loads the whole model
// and cuts every shard's file, binding 0 too loads its file with peers),
// else by loading it whole into binding 0 and calling split there. The test
// releases every binding and checks that the followers end and every js.Func
// is released. With shared, the group also has a SharedArrayBuffer of
// control words (sharedMemory): its messages go through shared memory.
func splitGroup(t *testing.T, n int, fromFiles, shared bool) *group {
	t.Helper()
	g := &group{}
	for range n {
		g.bindings = append(g.bindings, New())
	}
	t.Cleanup(func() {
		for _, b := range g.bindings {
			b.Release()
		}
		for i, f := range g.follows {
			select {
			case err := <-f:
				assert.Error(t, err, "follow %d rejects when its channels close", i+1)
			case <-time.After(10 * time.Second):
				t.Errorf("follow %d did not end", i+1)
			}
		}
		for i, b := range g.bindings {
			assert.Zero(t, b.LiveFuncs(), "binding %d: js.Funcs left unreleased", i)
		}
	})
	ports := peerPorts(n)
	memory := js.Undefined()
	if shared {
		memory = js.Global().Get("SharedArrayBuffer").New(4 * (1 + 3*n))
		g.memory = memory
	}
	cutter := g.bindings[0]
	if fromFiles {
		cutter = New()
		defer cutter.Release()
	}
	mustCall(t, cutter, "load", jsBytes(models.Default()))
	var info js.Value
	if fromFiles {
		shard := mustCall(t, cutter, "shard", 0, n)
		info = mustCall(t, g.bindings[0], "load", shard, obj(map[string]any{"peers": js.ValueOf(ports[0]), "sharedMemory": memory}))
	} else {
		info = mustCall(t, g.bindings[0], "split", n, js.ValueOf(ports[0]), memory)
	}
	require.Equal(t, 0, info.Get("shardIndex").Int())
	require.Equal(t, n, info.Get("shardCount").Int())
	for i := 1; i < n; i++ {
		shard := mustCall(t, cutter, "shard", i, n)
		opts := obj(map[string]any{"peers": js.ValueOf(ports[i]), "sharedMemory": memory, "contextLength": info.Get("sessionContextLength")})
		fi := mustCall(t, g.bindings[i], "load", shard, opts)
		require.Equal(t, i, fi.Get("shardIndex").Int())
		g.follows = append(g.follows, settled(t, g.bindings[i].Value().Call("follow")))
	}
	return g
}

// TestSplitMatchesWhole: the default model split across bindings over
// MessagePorts — workers' plumbing, in one Go program — generates llama2.c's
// golden greedy tokens and the engine's seeded ones, and aborts like a whole
// model.
func TestSplitMatchesWhole(t *testing.T) {
	golden := golden.RuncStories260K(t)
	for _, tc := range []struct {
		n                 int
		fromFiles, shared bool
	}{{2, false, false}, {3, false, false}, {2, true, false}, {3, true, false}, {2, false, true}, {3, true, true}} {
		n := tc.n
		t.Run(fmt.Sprintf("%d shards, from files %v, shared memory %v", n, tc.fromFiles, tc.shared), func(t *testing.T) {
			g := splitGroup(t, n, tc.fromFiles, tc.shared)
			lead := g.bindings[0]
			for _, run := range golden.Runs[:3] {
				res := mustCall(t, lead, "generate", run.Prompt, greedy(golden.Steps+1-len(run.PromptIDs)))
				assert.Equal(t, run.GeneratedIDs, ints(res.Get("tokens")), "%q", run.Prompt)
				assert.Equal(t, run.Text, run.Prompt+res.Get("text").String())
			}

			s, err := nativeModel(t).NewSession(engine.SessionOptions{})
			require.NoError(t, err)
			want, err := s.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{
				MaxTokens: 80, Sampling: sampling.Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 42},
			}, nil)
			require.NoError(t, err)
			res := mustCall(t, lead, "generate", "Once upon a time", obj(map[string]any{"maxTokens": 80, "seed": 42}))
			assert.Equal(t, want.Tokens, ints(res.Get("tokens")))
			assert.Equal(t, want.Text, res.Get("text").String())

			ac := js.Global().Get("AbortController").New()
			log := newChunkLog(t)
			log.onChunk = func(k int) {
				if k == 5 {
					ac.Call("abort")
				}
			}
			res = mustCall(t, lead, "stream", "", obj(map[string]any{"temperature": 0, "maxTokens": 200, "signal": ac.Get("signal")}), log.fn)
			assert.Equal(t, "abort", res.Get("finishReason").String())
			assert.Equal(t, golden.Runs[0].GeneratedIDs[:5], ints(res.Get("tokens")))
			res = mustCall(t, lead, "generate", "", greedy(len(golden.Runs[0].GeneratedIDs)))
			assert.Equal(t, golden.Runs[0].GeneratedIDs, ints(res.Get("tokens")), "after an abort")
		})
	}
}

// TestSplitErrors: wrong arguments to split, shard and load's peers reject
// naming what is wrong, and leave the binding working.
func TestSplitErrors(t *testing.T) {
	b := newLoaded(t)
	ports := peerPorts(2)
	good := js.ValueOf(ports[0])
	cases := []struct {
		method string
		args   []any
		code   string
		want   string
	}{
		{"split", []any{1, good}, "invalid_argument", "count must be an integer in 2..1024"},
		{"split", []any{"2", good}, "invalid_argument", "count must be an integer"},
		{"split", []any{3, good}, "invalid_argument", "peers must have one entry per shard (3), got 2"},
		{"split", []any{2, js.ValueOf([]any{ports[0][1], ports[0][1]})}, "invalid_argument", "peers[0] is this worker's own shard"},
		{"split", []any{2, js.ValueOf([]any{nil, 7})}, "invalid_argument", "peers[1] must be a MessagePort"},
		{"split", []any{5, js.ValueOf([]any{nil, ports[0][1], ports[0][1], ports[0][1], ports[0][1]})}, "invalid_argument", "at most 4 shards"},
		{"shard", []any{2, 2}, "invalid_argument", "shard 2 of 2 does not exist"},
		{"shard", []any{-1, 2}, "invalid_argument", "index must be an integer"},
		{"load", []any{jsBytes(models.Default()), obj(map[string]any{"peers": good})}, "invalid_argument", "peers is for shards of a split model"},
		{"follow", nil, "invalid_argument", "only shards 1..n-1 of a split model follow"},
	}
	for _, c := range cases {
		_, err := call(t, b, c.method, c.args...)
		var je *jsError
		require.ErrorAs(t, err, &je, "%s %v", c.method, c.args)
		assert.Equal(t, c.code, je.Code, "%s: %s", c.method, je.Message)
		assert.Contains(t, je.Message, c.want)
	}
	res := mustCall(t, b, "generate", "", greedy(5))
	assert.Equal(t, 5, res.Get("tokens").Length(), "the whole model still runs")
	for _, p := range ports {
		for _, port := range p {
			if v, ok := port.(js.Value); ok && v.Type() == js.TypeObject {
				v.Call("close")
			}
		}
	}
}

// TestSplitFollowerGoneFailsGeneration: when a follower's binding closes its
// channels (released, or loading another model), the leader's generation
// rejects with code "exchange_failed" instead of waiting forever, and so does
// the next one.
func TestSplitFollowerGoneFailsGeneration(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared memory %v", shared), func(t *testing.T) {
			g := splitGroup(t, 2, false, shared)
			g.bindings[1].Release()
			for range 2 {
				_, err := call(t, g.bindings[0], "generate", "", greedy(20))
				var je *jsError
				require.ErrorAs(t, err, &je)
				assert.Equal(t, "exchange_failed", je.Code)
				assert.Contains(t, je.Message, "shard 1 closed its channels")
			}
		})
	}
}

// TestSplitSharedStopped: with shared memory, the page's word that stops the
// group (a worker failed) fails the leader's generation, which would
// otherwise wait for a follower that no longer answers, and the follower's
// follow.
func TestSplitSharedStopped(t *testing.T) {
	g := splitGroup(t, 2, false, true)
	res := mustCall(t, g.bindings[0], "generate", "", greedy(5))
	require.Equal(t, 5, res.Get("tokens").Length())
	js.Global().Get("Atomics").Call("store", js.Global().Get("Int32Array").New(g.memory), 0, 1)
	_, err := call(t, g.bindings[0], "generate", "", greedy(20))
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "exchange_failed", je.Code)
	assert.Contains(t, je.Message, "the page stopped the split model")
	select {
	case err := <-g.follows[0]:
		assert.ErrorContains(t, err, "the page stopped the split model")
	case <-time.After(10 * time.Second):
		t.Error("follow did not end")
	}
	g.follows = nil
}

// TestSplitLongMessages: a model whose logits parts are longer than
// transferBytes (a 5000-token vocabulary split in two), and a prompt whose
// blocks' parts are too (32 tokens' 128 hidden units), so that those messages
// move their buffers rather than being copied, gives the tokens of the
// whole model, for a short prompt and a prompt of several blocks; and so
// it does with shared memory.
func TestSplitLongMessages(t *testing.T) {
	data, err := modelgen.Build(modelgen.Spec{
		Shape: modelgen.Shape{Dim: 128, HiddenDim: 256, Layers: 1, Heads: 4, KVHeads: 2, VocabSize: 5000, ContextLength: 256},
		Seed:  3, Std: 0.1, MuteSpecial: true,
	})
	require.NoError(t, err)
	require.Greater(t, 4*(5000/2+2), transferBytes)
	m, err := engine.Load(data, engine.LoadOptions{})
	require.NoError(t, err)
	s, err := m.NewSession(engine.SessionOptions{})
	require.NoError(t, err)
	long := strings.Repeat("a b c d ", 12)
	want := map[string][]int{}
	for _, prompt := range []string{"abc", long} {
		res, err := s.Generate(context.Background(), prompt, engine.GenerateOptions{MaxTokens: 30}, nil)
		require.NoError(t, err)
		require.NotEmpty(t, res.Tokens)
		want[prompt] = res.Tokens
		if prompt == long {
			require.Greater(t, len(res.PromptTokens), 2*engine.DefaultPromptBlock, "a prompt of several blocks")
			require.Greater(t, 4*engine.DefaultPromptBlock*256/2, transferBytes, "a block's hidden units")
		}
	}

	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared memory %v", shared), func(t *testing.T) {
			bindings := []*Binding{New(), New()}
			t.Cleanup(func() {
				for _, b := range bindings {
					b.Release()
				}
			})
			ports := peerPorts(2)
			memory := js.Undefined() // with shared memory, messages this long grow the rings
			if shared {
				memory = js.Global().Get("SharedArrayBuffer").New(4 * (1 + 3*2))
			}
			mustCall(t, bindings[0], "load", jsBytes(data))
			mustCall(t, bindings[0], "split", 2, js.ValueOf(ports[0]), memory)
			shard := mustCall(t, bindings[0], "shard", 1, 2)
			mustCall(t, bindings[1], "load", shard, obj(map[string]any{"peers": js.ValueOf(ports[1]), "sharedMemory": memory}))
			follow := settled(t, bindings[1].Value().Call("follow"))
			for _, prompt := range []string{"abc", long} {
				res := mustCall(t, bindings[0], "generate", prompt, greedy(30))
				assert.Equal(t, want[prompt], ints(res.Get("tokens")), "%q", prompt)
			}
			bindings[1].Release()
			select {
			case err := <-follow:
				assert.Error(t, err)
			case <-time.After(10 * time.Second):
				t.Error("follow did not end")
			}
		})
	}
}

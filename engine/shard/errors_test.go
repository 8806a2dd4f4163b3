package shard

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/internal/modelgen"
	"github.com/wasmlm/wasmlm/internal/testmodel"
	"github.com/wasmlm/wasmlm/models"
)

func TestMisuseIsAnError(t *testing.T) {
	m := defaultModel(t) // 4 kv heads
	parts := splitModel(t, m, 2)
	sessions := sessionsOf(t, parts, exchanges(NewLocalExchange(2)), nil)
	leader, follower := sessions[0], sessions[1]

	for name, call := range map[string]func() error{
		"index out of range": func() error { _, err := Cut(m, 2, 2); return err },
		"negative index":     func() error { _, err := Cut(m, -1, 2); return err },
		"no shards":          func() error { _, err := Cut(m, 0, 0); return err },
		"more than kv heads": func() error { _, err := Cut(m, 0, 5); return err },
		"shard of a shard":   func() error { _, err := Cut(parts[1].Model, 0, 2); return err },
		"file of a shard": func() error {
			one, err := File(models.Default(), 1, 2)
			require.NoError(t, err)
			_, err = File(one, 0, 2)
			return err
		},
		"file more than kv heads": func() error { _, err := File(models.Default(), 0, 5); return err },
		"load a whole model":      func() error { _, err := Load(models.Default()); return err },
		"shard without exchange":  func() error { _, err := NewSession(parts[0], nil, engine.SessionOptions{}); return err },
		"follower generates": func() error {
			_, err := follower.Generate(context.Background(), "x", engine.GenerateOptions{}, nil)
			return err
		},
		"leader follows": leader.Follow,
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, ErrSplit)
			t.Log(err)
		})
	}
	// The engine refuses a shard without peers, and peers for a whole model.
	_, err := parts[0].Model.NewSession(engine.SessionOptions{})
	require.ErrorIs(t, err, engine.ErrInvalidOption)
	_, err = m.NewSession(engine.SessionOptions{Peers: leader.group})
	require.ErrorIs(t, err, engine.ErrInvalidOption)
	// Engine.Load of a shard's file without its rows fails on the shapes.
	one, err := File(models.Default(), 1, 2)
	require.NoError(t, err)
	_, err = engine.Load(one, engine.LoadOptions{})
	require.ErrorIs(t, err, engine.ErrFormat)
}

// TestMismatchIsAClearError: shards that are not the parts of one model,
// split one way and connected in order, with one context length and prompt
// block, refuse to generate with an error saying what differs — every
// time, never hanging — and the group still closes cleanly.
func TestMismatchIsAClearError(t *testing.T) {
	m := defaultModel(t)
	c := m.Config()
	_, other := loadGGUF(t, modelgen.Spec{
		Shape: modelgen.Shape{Dim: c.Dim, HiddenDim: c.HiddenDim, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads,
			VocabSize: c.VocabSize, ContextLength: c.ContextLength},
		Seed: 99, Std: 0.05,
	})
	otherShards := splitModel(t, other, 3)
	three := splitModel(t, m, 3)
	two := splitModel(t, m, 2)
	cases := []struct {
		name  string
		parts []*Part
		opts  []engine.SessionOptions
		want  string
	}{
		{"another model", []*Part{three[0], otherShards[1], three[2]}, nil, "cut from another model"},
		{"connected out of order", []*Part{three[0], three[2], three[1]}, nil, "holds shard 2's weights"},
		{"another split", []*Part{two[0], three[1]}, nil, "one of 3 shards"},
		{"another context", []*Part{three[0], three[1], three[2]},
			[]engine.SessionOptions{{ContextLength: 128}, {ContextLength: 128}, {ContextLength: 64}}, "holds 64 positions"},
		{"another prompt block", []*Part{three[0], three[1], three[2]},
			[]engine.SessionOptions{{PromptBlock: 8}, {PromptBlock: 16}, {PromptBlock: 8}}, "prompt blocks of 16 tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sessions := sessionsOf(t, c.parts, exchanges(NewLocalExchange(len(c.parts))), c.opts)
			done := startGroup(sessions)
			for range 2 {
				_, err := sessions[0].Generate(context.Background(), onceUpon, engine.GenerateOptions{MaxTokens: 5}, nil)
				require.ErrorIs(t, err, ErrMismatch)
				assert.Contains(t, err.Error(), c.want)
			}
			require.NoError(t, sessions[0].Close())
			for range sessions[1:] {
				assert.NoError(t, <-done)
			}
		})
	}
}

// faultyExchange fails the failAt-th Recv of a gather's data (counting from
// 1): the message is consumed and lost, as when a transport drops one. (A
// lost step header is beyond repair by design: the follower cannot know
// what the step was, so it breaks the group.)
type faultyExchange struct {
	Exchange
	recvs, failAt atomic.Int64
}

var errInjected = errors.New("injected fault")

func (f *faultyExchange) Recv(from int) ([]float32, error) {
	m, err := f.Exchange.Recv(from)
	if err == nil && len(m) > 1 && m[1] == kindData && f.recvs.Add(1) == f.failAt.Load() {
		return nil, errInjected
	}
	return m, err
}

// TestExchangeFailureLeavesSessionUsable: a message lost mid-generation, on
// the leader or a follower, fails that generation with an error naming the
// shard that lost it; the next generation, on the same sessions, gives the
// whole model's tokens.
func TestExchangeFailureLeavesSessionUsable(t *testing.T) {
	m := defaultModel(t)
	whole := newSession(t, m)
	opts := engine.GenerateOptions{MaxTokens: 60}
	for _, faulty := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("shard %d loses a message", faulty), func(t *testing.T) {
			local := NewLocalExchange(3)
			ex := exchanges(local)
			f := &faultyExchange{Exchange: local[faulty]}
			f.failAt.Store(400) // well into the generation
			ex[faulty] = f
			sessions := sessionsOf(t, splitModel(t, m, 3), ex, nil)
			done := startGroup(sessions)

			_, err := sessions[0].Generate(context.Background(), onceUpon, opts, nil)
			require.ErrorIs(t, err, ErrExchange)
			assert.Contains(t, err.Error(), fmt.Sprintf("shard %d could not receive from shard", faulty))
			assert.GreaterOrEqual(t, f.recvs.Load(), int64(400), "the fault was injected")

			for _, prompt := range []string{onceUpon, "Lily"} { // the cached prefix, then a new prompt
				assert.Equal(t, generate(t, whole, prompt, opts), generate(t, sessions[0].Session, prompt, opts))
			}
			require.NoError(t, sessions[0].Close())
			for range 2 {
				assert.NoError(t, <-done)
			}
		})
	}
}

// TestDeadPeerIsAnErrorNotAHang: a follower whose connection dies mid-
// generation (a worker that crashed) fails the generation, and every later
// one, with an error — none waits forever.
func TestDeadPeerIsAnErrorNotAHang(t *testing.T) {
	local := NewLocalExchange(3)
	sessions := sessionsOf(t, splitModel(t, defaultModel(t), 3), exchanges(local), nil)
	done := startGroup(sessions)
	n := 0
	_, err := sessions[0].Generate(context.Background(), onceUpon, engine.GenerateOptions{MaxTokens: 100}, func(engine.Token) error {
		if n++; n == 10 {
			local[2].Close()
		}
		return nil
	})
	require.ErrorIs(t, err, ErrExchange)
	assert.Contains(t, err.Error(), "shard 2")
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrExchange, "the dead shard's Follow ends")
	case <-time.After(10 * time.Second):
		t.Fatal("the dead shard's Follow did not end")
	}
	_, err = sessions[0].Generate(context.Background(), onceUpon, engine.GenerateOptions{MaxTokens: 5}, nil)
	require.ErrorIs(t, err, ErrExchange, "later generations fail too")
	assert.Error(t, sessions[0].Close(), "shard 2 cannot be told to stop")
	assert.NoError(t, <-done, "shard 1 stops")
}

// switchedExchange is the leader's end of one of two connected sets, chosen
// by which: it lets a test replace a follower by a fresh one, as when a
// worker restarts, without the leader noticing.
type switchedExchange struct {
	sets  [2][]*LocalExchange
	which atomic.Int32
}

func (e *switchedExchange) Send(to int, head, body []float32) error {
	return e.sets[e.which.Load()][0].Send(to, head, body)
}

func (e *switchedExchange) Recv(from int) ([]float32, error) {
	return e.sets[e.which.Load()][0].Recv(from)
}

// restartedFollower sets up shard 0 of a 2-way split after it generated
// prompt with a follower that is then replaced by a fresh session (a worker
// restarted): the leader's cache holds the prompt and its last hello
// succeeded, the new follower's cache is empty.
func restartedFollower(t *testing.T, m *engine.Model, prompt string) (leader *Session, done <-chan error) {
	parts := splitModel(t, m, 2)
	ex := &switchedExchange{sets: [2][]*LocalExchange{NewLocalExchange(2), NewLocalExchange(2)}}
	leader, err := NewSession(parts[0], ex, engine.SessionOptions{})
	require.NoError(t, err)
	first, err := NewSession(parts[1], ex.sets[0][1], engine.SessionOptions{})
	require.NoError(t, err)
	firstDone := startGroup([]*Session{leader, first})
	generate(t, leader.Session, prompt, engine.GenerateOptions{MaxTokens: 10})

	ex.sets[0][1].Close() // the first follower's worker dies...
	assert.ErrorIs(t, <-firstDone, ErrExchange)
	ex.which.Store(1) // ...and a new one takes its place
	second, err := NewSession(parts[1], ex.sets[1][1], engine.SessionOptions{})
	require.NoError(t, err)
	return leader, startGroup([]*Session{leader, second})
}

// TestRestartedFollowerIsGreeted: a follower whose session is new (a worker
// restarted) has an empty KV cache; the leader finds out at the next
// greeting and evaluates the prompt again rather than reusing its cache. A
// forward pass asked of it before any greeting fails, and the leader greets
// again before the next.
func TestRestartedFollowerIsGreeted(t *testing.T) {
	m := defaultModel(t)
	opts := engine.GenerateOptions{MaxTokens: 40}
	want := generate(t, newSession(t, m), onceUpon, opts)

	leader, done := restartedFollower(t, m, onceUpon)
	assert.Equal(t, want, generate(t, leader.Session, onceUpon, opts), "the cached prompt is evaluated again")
	require.NoError(t, leader.Close())
	assert.NoError(t, <-done)

	leader, done = restartedFollower(t, m, onceUpon)
	err := leader.Forward(1, 0, true)
	require.ErrorIs(t, err, ErrExchange)
	assert.Contains(t, err.Error(), "has not been greeted")
	assert.Equal(t, want, generate(t, leader.Session, onceUpon, opts))
	require.NoError(t, leader.Close())
	assert.NoError(t, <-done)
}

// TestShardedAbortLeavesSessionUsable: cancelling a split model's generation
// ends it between tokens like a whole model's; the next one is unaffected.
func TestShardedAbortLeavesSessionUsable(t *testing.T) {
	m := defaultModel(t)
	leader := startShards(t, splitModel(t, m, 2), engine.SessionOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := leader.Generate(ctx, onceUpon, engine.GenerateOptions{MaxTokens: 100}, func(engine.Token) error {
		if n++; n == 5 {
			cancel()
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, engine.FinishAbort, res.FinishReason)
	opts := engine.GenerateOptions{MaxTokens: 50}
	assert.Equal(t, generate(t, newSession(t, m), "Lily", opts), generate(t, leader.Session, "Lily", opts))
}

// TestNonFiniteWeightsFailSplitGeneration: a split model whose classifier
// holds a NaN fails every generation with invalid_model, as a whole model
// does — each forward pass runs to its end first, so the shards stay in
// step, nothing hangs, and the group still closes cleanly.
func TestNonFiniteWeightsFailSplitGeneration(t *testing.T) {
	sp := randomSpecs()["llama-gqa-F32"]
	sp.SeparateOutput = true
	f, err := gguf.Parse(testmodel.GGUF(t, sp))
	require.NoError(t, err)
	b := gguf.NewBuilder()
	for _, kv := range f.KVs() {
		b.Set(kv.Key, kv.Value)
	}
	for _, ti := range f.Tensors() {
		data := ti.Data
		if ti.Name == "output.weight" {
			data = append([]byte(nil), data...)
			binary.LittleEndian.PutUint32(data[4*int(ti.Dims[0])*250:], math.Float32bits(float32(math.NaN()))) // row 250: shard 1's rows of 2
		}
		b.AddTensor(ti.Name, ti.Type, ti.Dims, data)
	}
	data, err := b.Bytes()
	require.NoError(t, err)
	m, err := engine.LoadGGUF(data)
	require.NoError(t, err, "the classifier is not scanned at load")

	sessions := sessionsOf(t, splitModel(t, m, 2), exchanges(NewLocalExchange(2)), nil)
	done := startGroup(sessions)
	for range 2 {
		_, err := sessions[0].Generate(context.Background(), "abc", engine.GenerateOptions{MaxTokens: 5}, nil)
		require.ErrorIs(t, err, engine.ErrFormat)
		assert.Equal(t, engine.CodeInvalidModel, engine.CodeOf(err))
		assert.Contains(t, err.Error(), "not finite")
	}
	require.NoError(t, sessions[0].Close())
	assert.NoError(t, <-done)
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
	"github.com/wasmlm/wasmlm/tokenizer"
)

func defaultModel(t testing.TB) *Model {
	t.Helper()
	m, err := Load(models.Default(), LoadOptions{})
	require.NoError(t, err)
	return m
}

func TestShardMisuseIsAnError(t *testing.T) {
	m := defaultModel(t) // 4 kv heads
	shards := splitModel(t, m, 2)
	ex := NewLocalExchange(2)
	leader, err := shards[0].NewSession(SessionOptions{Exchange: ex[0]})
	require.NoError(t, err)
	follower, err := shards[1].NewSession(SessionOptions{Exchange: ex[1]})
	require.NoError(t, err)
	whole := newSession(t, m)

	for name, call := range map[string]func() error{
		"index out of range": func() error { _, err := m.Shard(2, 2); return err },
		"negative index":     func() error { _, err := m.Shard(-1, 2); return err },
		"no shards":          func() error { _, err := m.Shard(0, 0); return err },
		"more than kv heads": func() error { _, err := m.Shard(0, 5); return err },
		"shard of a shard":   func() error { _, err := shards[1].Shard(0, 2); return err },
		"gguf of a shard": func() error {
			one, err := ShardGGUF(models.Default(), 1, 2)
			require.NoError(t, err)
			_, err = ShardGGUF(one, 0, 2)
			return err
		},
		"gguf more than kv heads": func() error { _, err := ShardGGUF(models.Default(), 0, 5); return err },
		"shard without exchange":  func() error { _, err := shards[0].NewSession(SessionOptions{}); return err },
		"whole with exchange": func() error {
			_, err := m.NewSession(SessionOptions{Exchange: NewLocalExchange(2)[0]})
			return err
		},
		"follower generates": func() error {
			_, err := follower.Generate(context.Background(), "x", GenerateOptions{}, nil)
			return err
		},
		"leader follows": leader.Follow,
		"whole follows":  whole.Follow,
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, ErrShard)
			t.Log(err)
		})
	}
}

// startGroup connects sessions (shard i at index i, over exchanges ex) and
// starts Follow for 1..n-1; their results arrive on the returned channel.
func startGroup(t testing.TB, sessions []*Session) <-chan error {
	t.Helper()
	done := make(chan error, len(sessions))
	for _, s := range sessions[1:] {
		go func() { done <- s.Follow() }()
	}
	return done
}

// sessionsOf makes a session for each shard on its exchange.
func sessionsOf(t testing.TB, shards []*Model, ex []Exchange, opts []SessionOptions) []*Session {
	t.Helper()
	out := make([]*Session, len(shards))
	for i, m := range shards {
		var o SessionOptions
		if opts != nil {
			o = opts[i]
		}
		o.Exchange = ex[i]
		s, err := m.NewSession(o)
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

func exchanges(local []*LocalExchange) []Exchange {
	out := make([]Exchange, len(local))
	for i, e := range local {
		out[i] = e
	}
	return out
}

// TestShardMismatchIsAClearError: shards that are not the parts of one
// model, split one way and connected in order, with one context length,
// refuse to generate with an error saying what differs — every time, never
// hanging — and the group still closes cleanly.
func TestShardMismatchIsAClearError(t *testing.T) {
	m := defaultModel(t)
	other, err := LoadGGUF(buildGGUF(t, specOf("llama", m.Config, 99, 0.05)))
	require.NoError(t, err)
	otherShards := splitModel(t, other, 3)
	three := splitModel(t, m, 3)
	two := splitModel(t, m, 2)
	cases := []struct {
		name   string
		shards []*Model
		opts   []SessionOptions
		want   string
	}{
		{"another model", []*Model{three[0], otherShards[1], three[2]}, nil, "cut from another model"},
		{"connected out of order", []*Model{three[0], three[2], three[1]}, nil, "holds shard 2's weights"},
		{"another split", []*Model{two[0], three[1]}, nil, "one of 3 shards"},
		{"another context", []*Model{three[0], three[1], three[2]},
			[]SessionOptions{{ContextLength: 128}, {ContextLength: 128}, {ContextLength: 64}}, "holds 64 positions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sessions := sessionsOf(t, c.shards, exchanges(NewLocalExchange(len(c.shards))), c.opts)
			done := startGroup(t, sessions)
			for range 2 {
				_, err := sessions[0].Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 5}, nil)
				require.ErrorIs(t, err, ErrShardMismatch)
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

// TestShardExchangeFailureLeavesSessionUsable: a message lost mid-generation,
// on the leader or a follower, fails that generation with an error naming
// the shard that lost it; the next generation, on the same sessions, gives
// the whole model's tokens.
func TestShardExchangeFailureLeavesSessionUsable(t *testing.T) {
	m := defaultModel(t)
	whole := newSession(t, m)
	opts := GenerateOptions{MaxTokens: 60}
	for _, faulty := range []int{0, 1, 2} {
		t.Run(fmt.Sprintf("shard %d loses a message", faulty), func(t *testing.T) {
			local := NewLocalExchange(3)
			ex := exchanges(local)
			f := &faultyExchange{Exchange: local[faulty]}
			f.failAt.Store(400) // well into the generation
			ex[faulty] = f
			sessions := sessionsOf(t, splitModel(t, m, 3), ex, nil)
			done := startGroup(t, sessions)

			_, err := sessions[0].Generate(context.Background(), onceUpon, opts, nil)
			require.ErrorIs(t, err, ErrExchange)
			assert.Contains(t, err.Error(), fmt.Sprintf("shard %d could not receive from shard", faulty))
			assert.GreaterOrEqual(t, f.recvs.Load(), int64(400), "the fault was injected")

			for _, prompt := range []string{onceUpon, "Lily"} { // the cached prefix, then a new prompt
				assert.Equal(t, generate(t, whole, prompt, opts), generate(t, sessions[0], prompt, opts))
			}
			require.NoError(t, sessions[0].Close())
			for range 2 {
				assert.NoError(t, <-done)
			}
		})
	}
}

// TestShardDeadPeerIsAnErrorNotAHang: a follower whose connection dies mid-
// generation (a worker that crashed) fails the generation, and every later
// one, with an error — none waits forever.
func TestShardDeadPeerIsAnErrorNotAHang(t *testing.T) {
	local := NewLocalExchange(3)
	sessions := sessionsOf(t, splitModel(t, defaultModel(t), 3), exchanges(local), nil)
	done := startGroup(t, sessions)
	n := 0
	_, err := sessions[0].Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 100}, func(Token) error {
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
	_, err = sessions[0].Generate(context.Background(), onceUpon, GenerateOptions{MaxTokens: 5}, nil)
	require.ErrorIs(t, err, ErrExchange, "later generations fail too")
	assert.Error(t, sessions[0].Close(), "shard 2 cannot be told to stop")
	assert.NoError(t, <-done, "shard 1 stops")
}

// TestShardRestartedFollowerIsGreeted: a follower whose session is new (a
// worker restarted) has an empty KV cache; the leader finds out at the next
// greeting and evaluates the prompt again rather than reusing its cache. A
// forward pass asked of it before any greeting fails, and the leader greets
// again before the next.
func TestShardRestartedFollowerIsGreeted(t *testing.T) {
	m := defaultModel(t)
	opts := GenerateOptions{MaxTokens: 40}
	want := generate(t, newSession(t, m), onceUpon, opts)

	sessions := sessionsOf(t, splitModel(t, m, 2), exchanges(NewLocalExchange(2)), nil)
	leader := sessions[0]
	// As if shard 0 had generated with a follower that is now gone: a
	// cached prompt, and a successful greeting behind it.
	prompt, err := m.Tokenizer.Encode(onceUpon, tokenizer.EncodeOptions{AddSpecial: true})
	require.NoError(t, err)
	leader.tokens = append(leader.tokens[:0], prompt[:3]...)
	leader.group.greeted = true
	done := startGroup(t, sessions)

	err = leader.forward(1, 0, true)
	require.ErrorIs(t, err, ErrExchange)
	assert.Contains(t, err.Error(), "has not been greeted")
	assert.Equal(t, want, generate(t, leader, onceUpon, opts))
	require.NoError(t, leader.Close())
	assert.NoError(t, <-done)
}

// TestShardedAbortLeavesSessionUsable: cancelling a split model's generation
// ends it between tokens like a whole model's; the next one is unaffected.
func TestShardedAbortLeavesSessionUsable(t *testing.T) {
	m := defaultModel(t)
	leader := startShards(t, splitModel(t, m, 2), SessionOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := leader.Generate(ctx, onceUpon, GenerateOptions{MaxTokens: 100}, func(Token) error {
		if n++; n == 5 {
			cancel()
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, FinishAbort, res.FinishReason)
	opts := GenerateOptions{MaxTokens: 50}
	assert.Equal(t, generate(t, newSession(t, m), "Lily", opts), generate(t, leader, "Lily", opts))
}

package jsbridge

import (
	"syscall/js"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmlm/wasmlm/models"
)

// withSession is options plus session: id.
func withSession(options js.Value, id int) js.Value {
	o := js.Global().Get("Object").Call("assign", obj(map[string]any{}), options)
	o.Set("session", id)
	return o
}

// TestSessionsKeepTheirOwnConversations: two opened sessions of one model,
// their turns interleaved, each continue their own conversation as a
// binding with that conversation alone does — the same tokens, and only
// the new prompt tokens evaluated, so neither cache was overwritten by the
// other's — while the binding's own session is untouched by both.
func TestSessionsKeepTheirOwnConversations(t *testing.T) {
	openings := []string{"Once upon a time, there was a little girl named Lily.", "Tom had a big red ball."}
	type turns struct{ first, next js.Value }
	alone := make([]turns, len(openings))
	for i, o := range openings {
		b := newLoaded(t)
		r := mustCall(t, b, "generate", o, greedy(8))
		alone[i] = turns{r, mustCall(t, b, "generate", o+r.Get("text").String()+" Then", greedy(8))}
	}

	b := newLoaded(t)
	ids := []int{mustCall(t, b, "openSession").Int(), mustCall(t, b, "openSession").Int()}
	assert.NotEqual(t, ids[0], ids[1])
	assert.Equal(t, 2, mustCall(t, b, "sessions").Get("open").Int())
	assert.Equal(t, 0, mustCall(t, b, "sessions").Get("allocated").Int(), "a session's KV cache waits for its first call")
	firsts := make([]js.Value, len(ids))
	for i, id := range ids {
		firsts[i] = mustCall(t, b, "generate", openings[i], withSession(greedy(8), id))
		assert.Equal(t, ints(alone[i].first.Get("tokens")), ints(firsts[i].Get("tokens")), "session %d", id)
	}
	assert.Equal(t, 2, mustCall(t, b, "sessions").Get("allocated").Int())
	own := mustCall(t, b, "generate", "The sun", greedy(4))
	assert.True(t, mustCall(t, b, "sessions").Get("own").Bool(), "the binding's own session, made by its first call")
	assert.Equal(t, 2, mustCall(t, b, "sessions").Get("open").Int(), "open counts openSession's")
	assert.Equal(t, len(ints(own.Get("promptTokens"))), own.Get("timings").Get("prefillTokens").Int(), "the binding's own session started empty")
	for i, id := range ids {
		next := openings[i] + firsts[i].Get("text").String() + " Then"
		got := mustCall(t, b, "generate", next, withSession(greedy(8), id))
		assert.Equal(t, ints(alone[i].next.Get("tokens")), ints(got.Get("tokens")), "session %d", id)
		assert.Equal(t, alone[i].next.Get("timings").Get("prefillTokens").Int(), got.Get("timings").Get("prefillTokens").Int(),
			"session %d evaluates only its new tokens", id)
	}
}

// TestConcurrentSessionsStream: streams of three sessions started at once
// take turns and each gives the tokens it gives alone.
func TestConcurrentSessionsStream(t *testing.T) {
	prompts := []string{"Once upon a time", "Lily and Ben", "The little dog"}
	b := newLoaded(t)
	want := make([][]int, len(prompts))
	for i, p := range prompts {
		want[i] = ints(mustCall(t, b, "generate", p, greedy(12)).Get("tokens"))
	}
	promises := make([]js.Value, len(prompts))
	logs := make([]*chunkLog, len(prompts))
	for i, p := range prompts {
		id := mustCall(t, b, "openSession").Int()
		logs[i] = newChunkLog(t)
		promises[i] = b.Value().Call("stream", p, withSession(greedy(12), id), logs[i].fn)
	}
	for i, p := range promises {
		r, err := await(t, p)
		require.NoError(t, err)
		assert.Equal(t, want[i], ints(r.Get("tokens")), "stream %d", i)
		assert.Equal(t, r.Get("text").String(), logs[i].joined(), "stream %d's chunks", i)
	}
}

// TestCloseSession: a closed session is freed and refused afterwards; an
// unknown id is refused naming the session field; closing twice, or an id
// never opened, does nothing; a session is opened before any model and
// used after the load; a chat, an embedding, saveState and loadState run
// in the session named.
func TestCloseSession(t *testing.T) {
	b := New()
	t.Cleanup(b.Release)
	early := mustCall(t, b, "openSession").Int()
	_, err := call(t, b, "generate", "Once", withSession(greedy(2), early))
	var je *jsError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "no_model", je.Code)

	mustCall(t, b, "load", jsBytes(models.Default()))
	assert.NotEmpty(t, ints(mustCall(t, b, "generate", "Once", withSession(greedy(2), early)).Get("tokens")))
	mustCall(t, b, "closeSession", early)
	id := mustCall(t, b, "openSession").Int()
	other := mustCall(t, b, "openSession").Int()
	r := mustCall(t, b, "chat", greedyChat(t, userSays("Tell me a story."), 6), obj(map[string]any{"session": id}))
	assert.NotEmpty(t, r.Get("content").String())
	state := mustCall(t, b, "saveState", obj(map[string]any{"session": id}))
	restored := mustCall(t, b, "loadState", state, obj(map[string]any{"session": other}))
	assert.Positive(t, restored.Get("tokens").Int())

	counts := mustCall(t, b, "closeSession", id)
	assert.Equal(t, 1, counts.Get("open").Int())
	assert.Equal(t, 1, counts.Get("allocated").Int())
	_, err = call(t, b, "generate", "Once", withSession(greedy(2), id))
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "invalid_argument", je.Code)
	assert.Equal(t, "session", je.Field)
	assert.Equal(t, 1, mustCall(t, b, "closeSession", id).Get("open").Int())
	assert.Equal(t, 1, mustCall(t, b, "closeSession", 99).Get("open").Int())
	assert.Equal(t, 0, mustCall(t, b, "closeSession", other).Get("open").Int())
	for _, bad := range []any{0, -1, 1.5, "1"} {
		_, err = call(t, b, "closeSession", bad)
		require.ErrorAs(t, err, &je, "closeSession(%v)", bad)
		assert.Equal(t, "id", je.Field)
	}
	_, err = call(t, b, "generate", "Once", obj(map[string]any{"session": -1}))
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "session", je.Field)
}

package grammar

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// closes reports whether text is n "a" followed by a prefix of n closers,
// each one of closers (whole: exactly n of them): the language of
// x ::= "a" x C | "" for C one of closers, and its prefixes.
func closes(text, closers string) (prefix, whole bool) {
	rest := strings.TrimLeft(text, "a")
	n := len(text) - len(rest)
	if len(rest) > n || strings.Trim(rest, closers) != "" {
		return false, false
	}
	return true, len(rest) == n
}

// TestPruningKeepsAMatch: a grammar whose parses multiply with every "a"
// goes past maxParses within a few characters; the matcher keeps the
// maxParses parses that finish soonest instead of failing. Walking
// generations under a token budget, "a" while the mask allows it, then
// closers at random: the mask is never
// empty, no error is returned, the text is always a prefix of the
// grammar's language and a whole match when the budget runs out, and the
// same walk gives the same text on a fresh grammar and on one whose tables
// other texts filled first (pruning does not depend on stack ids).
func TestPruningKeepsAMatch(t *testing.T) {
	pieces := [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("aa"), []byte("aaaa"), []byte("bc"), []byte("cb"), []byte("x"), {}}
	const eos = 9
	v := NewVocab(pieces)
	for _, tc := range []struct{ name, src, lead, closers string }{
		{"doubling", "root ::= x\nx ::= \"a\" x \"b\" | y\ny ::= \"a\" x \"c\" | \"\"\n", "", "bc"},
		{"tripling", "root ::= x\nx ::= \"a\" x \"b\" | y | \"\"\ny ::= \"a\" x \"c\" | z\nz ::= \"a\" x \"d\"\n", "", "bcd"},
		{"doubling behind a prefix", "root ::= \"x\" x\nx ::= \"a\" x \"b\" | y\ny ::= \"a\" x \"c\" | \"\"\n", "x", "bc"},
	} {
		lang := func(text string) (prefix, whole bool) {
			if len(text) <= len(tc.lead) {
				return strings.HasPrefix(tc.lead, text), false
			}
			if !strings.HasPrefix(text, tc.lead) {
				return false, false
			}
			return closes(text[len(tc.lead):], tc.closers)
		}
		walk := func(g *Grammar, seed uint64, budget int) (string, int) {
			r := rand.New(rand.NewPCG(seed, 7))
			c := NewConstraint(g, v, []int{eos})
			var text []byte
			widest := 0
			for left := budget; left > 0; left-- {
				logits := make([]float32, len(pieces))
				complete, err := c.Mask(logits, left)
				require.NoError(t, err, "%s after %q", tc.name, text)
				g.mu.Lock()
				widest = max(widest, len(c.t.sets[c.t.states[c.state].set]))
				g.mu.Unlock()
				if complete {
					break
				}
				var allowed []int
				for id := range pieces {
					if !math.IsInf(float64(logits[id]), -1) {
						allowed = append(allowed, id)
					}
				}
				require.NotEmpty(t, allowed, "%s after %q", tc.name, text)
				id := allowed[r.IntN(len(allowed))]
				if allowed[0] == 0 {
					id = 0 // "a" while the budget lets the text close
				}
				if id == eos {
					break
				}
				require.NoError(t, c.Accept(pieces[id]), tc.name)
				text = append(text, pieces[id]...)
				prefix, _ := lang(string(text))
				require.True(t, prefix, "%s: %q", tc.name, text)
			}
			return string(text), widest
		}
		warm := mustParse(t, tc.src)
		walk(warm, 99, 50)
		for seed := range uint64(3) {
			for _, budget := range []int{30, 50} {
				fresh := mustParse(t, tc.src)
				text, widest := walk(fresh, seed, budget)
				require.Equal(t, maxParses, widest, "%s seed %d: the walk went past the limit", tc.name, seed)
				_, whole := lang(text)
				require.True(t, whole, "%s seed %d budget %d: %q", tc.name, seed, budget, text)
				require.True(t, fresh.Accepts(text), tc.name)
				again, _ := walk(warm, seed, budget)
				require.Equal(t, text, again, "%s seed %d: the same walk on a grammar that met other texts", tc.name, seed)
			}
		}
	}
}

// TestFullTablesAreRenewed: a text under a grammar whose parses double
// with every "a" fills the matcher's 2^21 stacks after about 210
// characters (the pruned parses' stacks stay interned); the grammar then
// renews its tables and the match goes on in them, so a generation of 240
// "a" and as many closers ends in a whole match with no error, the same
// text as on a grammar whose tables other texts had filled and renewed
// first, and Accepts and Continues hold texts as long; a match begun
// before the renewal goes on in the new tables.
func TestFullTablesAreRenewed(t *testing.T) {
	pieces := [][]byte{[]byte("a"), []byte("b"), []byte("c"), {}}
	const eos = 3
	v := NewVocab(pieces)
	src := "root ::= x\nx ::= \"a\" x \"b\" | y\ny ::= \"a\" x \"c\" | \"\"\n"
	walk := func(g *Grammar) (text string, renewals int) {
		r := rand.New(rand.NewPCG(5, 6))
		c := NewConstraint(g, v, []int{eos})
		at := c.t
		for left := 480; left > 0; left-- {
			logits := make([]float32, len(pieces))
			complete, err := c.Mask(logits, left)
			require.NoError(t, err, "after %d bytes", len(text))
			if complete {
				break
			}
			id := 0 // "a" while the budget lets the text close
			if math.IsInf(float64(logits[0]), -1) {
				var allowed []int
				for id := range pieces {
					if !math.IsInf(float64(logits[id]), -1) {
						allowed = append(allowed, id)
					}
				}
				require.NotEmpty(t, allowed, "after %d bytes", len(text))
				id = allowed[r.IntN(len(allowed))]
			}
			if id == eos {
				break
			}
			require.NoError(t, c.Accept(pieces[id]), "after %d bytes", len(text))
			text += string(pieces[id])
			if c.t != at {
				renewals, at = renewals+1, c.t
			}
		}
		return text, renewals
	}
	fresh := mustParse(t, src)
	text, renewals := walk(fresh)
	_, whole := closes(text, "bc")
	require.True(t, whole, "%q", text)
	require.Equal(t, 480, len(text))
	require.Positive(t, renewals)
	require.True(t, fresh.Accepts(text))

	used := mustParse(t, src)
	waiting := NewConstraint(used, v, []int{eos})
	require.NoError(t, waiting.Accept([]byte("aaab")))
	// Past pruning, the closers kept are the first few as they come and
	// the rest those of the parses first in compareStacks' order, "b".
	long := strings.Repeat("a", 230) + "cc" + strings.Repeat("b", 228)
	require.True(t, used.Accepts(long))
	require.True(t, used.Continues(strings.Repeat("a", 250)))
	require.False(t, used.Accepts(long+"b"))
	// A match begun before the tables were renewed moves into the new ones.
	require.NotSame(t, waiting.t, used.t)
	require.NoError(t, waiting.Accept([]byte("cb")))
	require.Same(t, waiting.t, used.t)
	require.True(t, waiting.Accepting())
	again, _ := walk(used)
	require.Equal(t, text, again, "the same walk on tables renewed by other texts")
}

package bpe

import (
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// Text repeats its words, and merging a word costs far more than looking it
// up, so each tokenizer remembers the tokens of recent short words, as
// Hugging Face's and transformers.js's BPE do.
//
// The cache is direct-mapped: a word hashes to one slot, which holds the last
// word stored there. Slots are atomic pointers to immutable entries, so
// concurrent Encode calls share it without locks, and its size is fixed:
// cacheSlots entries of at most cacheMaxWord bytes and their tokens. It
// never changes what Encode returns, only how fast.
const (
	cacheSlots   = 1 << 14
	cacheMaxWord = 48
)

type cacheEntry struct {
	word string
	ids  []int32
}

type wordCache struct {
	seed  maphash.Seed
	slots [cacheSlots]atomic.Pointer[cacheEntry]
}

func (c *wordCache) slot(word string) *atomic.Pointer[cacheEntry] {
	return &c.slots[maphash.String(c.seed, word)&(cacheSlots-1)]
}

// get returns the tokens of word if the cache holds them.
func (c *wordCache) get(word string) ([]int32, bool) {
	if e := c.slot(word).Load(); e != nil && e.word == word {
		return e.ids, true
	}
	return nil, false
}

// put remembers the tokens of word (copying both: word is usually part of
// the caller's text).
func (c *wordCache) put(word string, ids []int) {
	e := &cacheEntry{word: strings.Clone(word), ids: make([]int32, len(ids))}
	for i, id := range ids {
		e.ids[i] = int32(id)
	}
	c.slot(word).Store(e)
}

//go:build !js

package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// (d) cache.list() describes each entry, delete(url) removes one and says
// whether there was one, clear() removes every entry — also those of Cache
// Storage's wasmlm-models-v1, where wasmlm.js kept models before — and
// says how many.
func TestBrowserCacheListDeleteClear(t *testing.T) {
	tb, m := newCacheSite(t)
	one := randomModel(1<<20, 8)
	two := randomModel(2<<20+1, 9)
	m.put("one.gguf", one)
	m.put("two.gguf", two)
	type listed struct {
		Entries []cacheEntry `json:"entries"`
		Names   []string     `json:"names"`
	}
	got := eval[listed](t, tb, cacheScript(`
		await cachedModel('`+modelsPath+`one.gguf');
		await cachedModel('`+modelsPath+`two.gguf', { sha256: '`+sha256Hex(two)+`' });
		await (await caches.open('wasmlm-models-v1')).put('/legacy.gguf', new Response('abc', { headers: { 'content-length': '3' } }));
		return { entries: await cache.list(), names: await entryNames() };`))
	require.Len(t, got.Entries, 3)
	assert.Len(t, got.Names, 4, "a .bin and a .json file per OPFS entry")
	byURL := map[string]cacheEntry{}
	for _, e := range got.Entries {
		byURL[e.URL[strings.LastIndex(e.URL, "/"):]] = e
		assert.True(t, e.Complete, e.URL)
		if e.Storage == "opfs" { // a Cache Storage entry has a time only when it has a Date header
			assert.Positive(t, e.Modified, e.URL)
		}
	}
	assert.Equal(t, cacheEntry{URL: tb.site.url + modelsPath + "one.gguf", Size: ptr(len(one)), Total: ptr(len(one)),
		Complete: true, Storage: "opfs", Modified: byURL["/one.gguf"].Modified}, byURL["/one.gguf"])
	assert.Equal(t, sha256Hex(two), byURL["/two.gguf"].SHA256)
	assert.Equal(t, "opfs", byURL["/two.gguf"].Storage)
	assert.Equal(t, "cache-storage", byURL["/legacy.gguf"].Storage)
	assert.Equal(t, 3, *byURL["/legacy.gguf"].Size)

	deleted := eval[[]bool](t, tb, cacheScript(`
		return [await cache.delete('`+modelsPath+`one.gguf'), await cache.delete('`+modelsPath+`one.gguf')];`))
	assert.Equal(t, []bool{true, false}, deleted)
	got = eval[listed](t, tb, cacheScript(`return { entries: await cache.list(), names: await entryNames() };`))
	assert.Len(t, got.Entries, 2)
	assert.Len(t, got.Names, 2)

	cleared := eval[struct {
		Removed int          `json:"removed"`
		Entries []cacheEntry `json:"entries"`
		Names   []string     `json:"names"`
		Again   int          `json:"again"`
	}](t, tb, cacheScript(`
		const removed = await cache.clear();
		return { removed, entries: await cache.list(), names: await entryNames(), again: await cache.clear() };`))
	assert.Equal(t, 2, cleared.Removed)
	assert.Empty(t, cleared.Entries)
	assert.Empty(t, cleared.Names)
	assert.Zero(t, cleared.Again)

	reloaded := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelsPath+`one.gguf'));`))
	assert.False(t, reloaded.Cached, "a deleted entry is downloaded again")
	assert.Equal(t, sha256Hex(one), reloaded.SHA)
}

func ptr(n int) *int { return &n }

// Without OPFS the cache keeps whole responses in Cache Storage: the second
// call reads it from there; a dropped download leaves nothing (it cannot be
// resumed) and the next call starts over; a wrong SHA-256 stores nothing.
// Without Cache Storage either, cachedModel returns null.
func TestBrowserCacheFallsBackToCacheStorage(t *testing.T) {
	tb, m := newCacheSite(t)
	tb.expect("ERR_CONTENT_LENGTH_MISMATCH")
	data := randomModel(2<<20+17, 10)
	m.put("model.gguf", data)
	eval[bool](t, tb, `(() => { navigator.storage.getDirectory = undefined; return true; })()`)

	first := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelURL+`', { sha256: '`+sha256Hex(data)+`' }));`))
	require.Empty(t, first.Code, first.Message)
	assert.False(t, first.Cached)
	assert.Equal(t, sha256Hex(data), first.SHA)
	second := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelURL+`', { sha256: '`+sha256Hex(data)+`' }));`))
	assert.True(t, second.Cached)
	assert.Equal(t, sha256Hex(data), second.SHA)
	entries := eval[[]cacheEntry](t, tb, cacheScript(`return cache.list();`))
	require.Len(t, entries, 1)
	assert.Equal(t, "cache-storage", entries[0].Storage)
	assert.Equal(t, sha256Hex(data), entries[0].SHA256)
	assert.Len(t, m.log(), 1)

	m.put("cut.gguf", data)
	m.dropAfter(len(data) / 2)
	cut := eval[cacheResult](t, tb, cacheScript(`
		return attempt(cachedModel('`+modelsPath+`cut.gguf', { onProgress: releaseAt(`+strconv.Itoa(len(data)/2)+`) }));`))
	assert.Equal(t, "fetch_failed", cut.Code, "%+v", cut)
	again := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelsPath+`cut.gguf'));`))
	require.Empty(t, again.Code, again.Message)
	assert.Equal(t, sha256Hex(data), again.SHA)
	log := m.log()
	require.Len(t, log, 3)
	assert.Empty(t, log[2].Range, "Cache Storage cannot resume")

	m.put("wrong.gguf", data)
	wrong := eval[struct {
		Result  cacheResult  `json:"result"`
		Entries []cacheEntry `json:"entries"`
	}](t, tb, cacheScript(`
		const result = await attempt(cachedModel('`+modelsPath+`wrong.gguf', { sha256: '`+strings.Repeat("ab", 32)+`' }));
		return { result, entries: await cache.list() };`))
	assert.Equal(t, "integrity_failed", wrong.Result.Code, "%+v", wrong.Result)
	assert.Len(t, wrong.Entries, 2, "model.gguf and cut.gguf only")

	tb2, _ := newCacheSite(t)
	none := eval[cacheResult](t, tb2, cacheScript(`
		navigator.storage.getDirectory = undefined;
		Object.defineProperty(window, 'caches', { value: undefined });
		return attempt(cachedModel('`+modelURL+`'));`))
	assert.True(t, none.None, "%+v", none)
}

// cachedModel checks its arguments: code invalid_argument, naming the field.
func TestBrowserCacheChecksArguments(t *testing.T) {
	tb, _ := newCacheSite(t)
	got := eval[[]cacheResult](t, tb, cacheScript(`
		return Promise.all([
			attempt(cachedModel(42)),
			attempt(cachedModel('/m.gguf', { sha256: 'abc' })),
			attempt(cachedModel('/m.gguf', { signal: {} })),
			attempt(cachedModel('/m.gguf', { onProgress: 1 })),
		]);`))
	require.Len(t, got, 4)
	for i, field := range []string{"url", "sha256", "signal", "onProgress"} {
		assert.Equal(t, "invalid_argument", got[i].Code, field)
		assert.Contains(t, got[i].Message, field)
	}
}

// A browser that will store no more (the origin's quota, lowered through
// the DevTools protocol) makes cachedModel reject with code storage_failed
// in OPFS and in Cache Storage.
func TestBrowserCacheReportsAFullStorage(t *testing.T) {
	for _, store := range []struct{ name, hide string }{
		{"opfs", ``},
		{"cache-storage", `navigator.storage.getDirectory = undefined;`},
	} {
		t.Run(store.name, func(t *testing.T) {
			tb, m := newCacheSite(t)
			m.put("model.gguf", randomModel(4<<20, 12))
			quota := float64(1 << 20)
			require.NoError(t, chromedp.Do(tb.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
				_, err := cdp.Call(ctx, target, storage.OverrideQuotaForOrigin,
					storage.OverrideQuotaForOriginParams{Origin: tb.site.url, QuotaSize: &quota})
				return err
			})))
			got := eval[cacheResult](t, tb, cacheScript(store.hide+`
				return attempt(cachedModel('`+modelURL+`'));`))
			assert.Equal(t, "storage_failed", got.Code, "%+v", got)
			t.Log(got.Message)
		})
	}
}

//go:build !js

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The model cache (web/cache.js) in Chromium: downloads cut off halfway and
// resumed, files changed on the server, stored files corrupted, aborts.
// browser_cache_manage_test.go has list/delete/clear, the Cache Storage
// fallback and the SHA-256.

// modelURL is the URL of a model the cache tests serve, as the page names it.
const modelURL = modelsPath + "model.gguf"

// (a) A download whose connection drops halfway fails with fetch_failed and
// keeps its bytes; the next call asks for the rest (Range from where they
// end, If-Range with the ETag), and the bytes it returns are the file's.
// Both writers: the worker's FileSystemSyncAccessHandle (with
// createWritable hidden, as in Safari before 26) and the page's
// FileSystemWritableFileStream (with Worker hidden).
func TestBrowserCacheResumesAnInterruptedDownload(t *testing.T) {
	for _, writer := range []struct{ name, hide string }{
		{"sync access handle", `FileSystemFileHandle.prototype.createWritable = undefined;`},
		{"writable stream", `window.Worker = undefined;`},
	} {
		t.Run(writer.name, func(t *testing.T) {
			tb, m := newCacheSite(t)
			tb.expect("ERR_CONTENT_LENGTH_MISMATCH")
			data := randomModel(3<<20+12345, 1)
			etag := m.put("model.gguf", data)
			half := len(data)/2 + 7
			m.dropAfter(half)
			eval[bool](t, tb, `(() => { `+writer.hide+` return true; })()`)

			first := eval[cacheResult](t, tb, cacheScript(`
				return attempt(cachedModel('`+modelURL+`', { onProgress: releaseAt(`+strconv.Itoa(half)+`) }));`))
			require.Equal(t, "fetch_failed", first.Code, "%+v", first)
			entries := eval[[]cacheEntry](t, tb, cacheScript(`return cache.list();`))
			require.Len(t, entries, 1)
			assert.False(t, entries[0].Complete)
			assert.Equal(t, half, *entries[0].Size, "the bytes received before the drop are on disk")
			assert.Equal(t, len(data), *entries[0].Total)

			second := eval[struct {
				cacheResult
				Progress []progressCall `json:"progress"`
			}](t, tb, cacheScript(progressJS+`
				return { ...(await attempt(cachedModel('`+modelURL+`', { onProgress }))), progress: seen };`))
			require.Empty(t, second.Code, second.Message)
			assert.False(t, second.Cached)
			assert.Equal(t, len(data), second.Size)
			assert.Equal(t, sha256Hex(data), second.SHA, "the resumed file's bytes")
			require.NotEmpty(t, second.Progress)
			assert.Equal(t, half, second.Progress[0].Loaded, "progress counts the bytes on disk")
			last := second.Progress[len(second.Progress)-1]
			assert.Equal(t, len(data), last.Loaded)
			assert.Equal(t, len(data), *last.Total)

			log := m.log()
			require.Len(t, log, 2)
			assert.True(t, log[0].Dropped)
			assert.Empty(t, log[0].Range)
			assert.Equal(t, fmt.Sprintf("bytes=%d-", half), log[1].Range)
			assert.Equal(t, etag, log[1].IfRange)
			assert.Equal(t, 206, log[1].Status)

			third := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelURL+`'));`))
			assert.True(t, third.Cached)
			assert.Equal(t, sha256Hex(data), third.SHA)
			assert.Len(t, m.log(), 2, "a complete entry is read from disk")
		})
	}
}

// (e) When the file changes on the server between the drop and the resume
// (a new ETag), If-Range makes the server send the whole new file, which
// replaces the partial one. A server that ignores Range does the same.
func TestBrowserCacheRestartsWhenTheServerCannotResume(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(m *modelServer, old []byte) []byte // after the drop; returns the file the resume must give
	}{
		{"file changed", func(m *modelServer, _ []byte) []byte {
			data := randomModel(2<<20+99, 3)
			m.put("model.gguf", data)
			return data
		}},
		{"server without Range", func(m *modelServer, old []byte) []byte {
			m.setIgnoreRange(true)
			return old
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb, m := newCacheSite(t)
			tb.expect("ERR_CONTENT_LENGTH_MISMATCH")
			old := randomModel(3<<20, 2)
			etag := m.put("model.gguf", old)
			half := len(old) / 2
			m.dropAfter(half)
			first := eval[cacheResult](t, tb, cacheScript(`
				return attempt(cachedModel('`+modelURL+`', { onProgress: releaseAt(`+strconv.Itoa(half)+`) }));`))
			require.Equal(t, "fetch_failed", first.Code, "%+v", first)

			want := c.change(m, old)
			second := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelURL+`'));`))
			require.Empty(t, second.Code, second.Message)
			assert.False(t, second.Cached)
			assert.Equal(t, len(want), second.Size)
			assert.Equal(t, sha256Hex(want), second.SHA)
			log := m.log()
			require.Len(t, log, 2, "one request: the 200 of the resume is the whole file")
			assert.Equal(t, fmt.Sprintf("bytes=%d-", half), log[1].Range)
			assert.Equal(t, etag, log[1].IfRange)
			assert.Equal(t, 200, log[1].Status)

			entries := eval[[]cacheEntry](t, tb, cacheScript(`return cache.list();`))
			require.Len(t, entries, 1)
			assert.True(t, entries[0].Complete)
			assert.Equal(t, len(want), *entries[0].Size)
		})
	}
}

// (b) A stored file that was corrupted is found and downloaded again: a
// byte overwritten, when the call gives the SHA-256 (a hash verified
// before counts only while the file is unchanged, so the second call does
// not hash, the third does); a file cut short, by its size, without one;
// a record that is not JSON.
func TestBrowserCacheDetectsCorruptedEntries(t *testing.T) {
	tb, m := newCacheSite(t)
	data := randomModel(2<<20+555, 4)
	m.put("model.gguf", data)
	sum := sha256Hex(data)
	type call struct {
		cacheResult
		Progress []progressCall `json:"progress"`
	}
	load := func(options string) call {
		return eval[call](t, tb, cacheScript(progressJS+`
			return { ...(await attempt(cachedModel('`+modelURL+`', { onProgress, `+options+` }))), progress: seen };`))
	}
	withHash := `sha256: '` + sum + `'`

	first := load(withHash)
	require.Empty(t, first.Code, first.Message)
	assert.Equal(t, sum, first.SHA)
	assert.Equal(t, []string{"download"}, phases(first.Progress), "hashed as it streamed in")
	entries := eval[[]cacheEntry](t, tb, cacheScript(`return cache.list();`))
	require.Len(t, entries, 1)
	assert.Equal(t, sum, entries[0].SHA256, "the verified hash is recorded")

	again := load(withHash)
	assert.True(t, again.Cached)
	assert.Equal(t, []string{"cached"}, phases(again.Progress), "a verified, unchanged file is not hashed again")

	flipped := eval[int](t, tb, cacheScript(`
		const h = await dataFile();
		const at = 1000003;
		const [b] = new Uint8Array(await (await h.getFile()).slice(at, at + 1).arrayBuffer());
		const w = await h.createWritable({ keepExistingData: true });
		await w.write({ type: 'write', position: at, data: new Uint8Array([b ^ 0x5a]) });
		await w.close();
		return at;`))
	require.Equal(t, 1000003, flipped)
	third := load(withHash)
	require.Empty(t, third.Code, third.Message)
	assert.False(t, third.Cached, "the corrupted file is downloaded again")
	assert.Equal(t, sum, third.SHA)
	assert.Equal(t, []string{"verify", "download"}, phases(third.Progress))
	log := m.log()
	require.Len(t, log, 2)
	assert.Empty(t, log[1].Range, "a corrupted file is fetched whole")

	eval[bool](t, tb, cacheScript(`
		const w = await (await dataFile()).createWritable({ keepExistingData: true });
		await w.truncate(12345);
		await w.close();
		return true;`))
	fourth := load(``)
	require.Empty(t, fourth.Code, fourth.Message)
	assert.False(t, fourth.Cached, "a file cut short is downloaded again")
	assert.Equal(t, sum, fourth.SHA)
	log = m.log()
	require.Len(t, log, 3)
	assert.Empty(t, log[2].Range, "a complete entry cut short is not resumed")

	eval[bool](t, tb, cacheScript(`
		for await (const [name, h] of (await dir()).entries()) {
			if (!name.endsWith('.json')) continue;
			const w = await h.createWritable();
			await w.write('{"version": 1, "url": ');
			await w.close();
		}
		return true;`))
	fifth := load(``)
	require.Empty(t, fifth.Code, fifth.Message)
	assert.False(t, fifth.Cached, "an entry with an unreadable record is downloaded again")
	assert.Equal(t, sum, fifth.SHA)
	assert.Len(t, m.log(), 4)
}

// (c) A download whose SHA-256 is not the one asked for rejects with
// integrity_failed and leaves no entry.
func TestBrowserCacheRejectsTheWrongHash(t *testing.T) {
	tb, m := newCacheSite(t)
	data := randomModel(1<<20+3, 5)
	m.put("model.gguf", data)
	wrong := sha256Hex(append([]byte{0}, data...))
	got := eval[struct {
		Result  cacheResult  `json:"result"`
		Entries []cacheEntry `json:"entries"`
		Names   []string     `json:"names"`
	}](t, tb, cacheScript(`
		const result = await attempt(cachedModel('`+modelURL+`', { sha256: '`+wrong+`' }));
		return { result, entries: await cache.list(), names: await entryNames() };`))
	assert.Equal(t, "integrity_failed", got.Result.Code, "%+v", got.Result)
	assert.Contains(t, got.Result.Message, sha256Hex(data))
	assert.Empty(t, got.Entries)
	assert.Empty(t, got.Names, "no file is left behind")
}

// (f) An abort through the signal rejects with code aborted (an
// AbortError) and keeps what was downloaded, which the next call resumes;
// a signal aborted before the call sends no request.
func TestBrowserCacheAborts(t *testing.T) {
	tb, m := newCacheSite(t)
	data := randomModel(3<<20+1, 6)
	m.put("model.gguf", data)

	before := eval[cacheResult](t, tb, cacheScript(`
		return attempt(cachedModel('`+modelURL+`', { signal: AbortSignal.abort() }));`))
	assert.Equal(t, "aborted", before.Code)
	assert.Equal(t, "AbortError", before.Name)
	assert.Empty(t, m.log())

	during := eval[cacheResult](t, tb, cacheScript(`
		const controller = new AbortController();
		const onProgress = (loaded) => { if (loaded > 0) controller.abort(); };
		return attempt(cachedModel('`+modelURL+`', { signal: controller.signal, onProgress }));`))
	assert.Equal(t, "aborted", during.Code, "%+v", during)
	assert.Equal(t, "AbortError", during.Name)
	entries := eval[[]cacheEntry](t, tb, cacheScript(`return cache.list();`))
	require.Len(t, entries, 1)
	require.False(t, entries[0].Complete)
	kept := *entries[0].Size
	assert.Positive(t, kept, "the bytes received before the abort are kept")

	resumed := eval[cacheResult](t, tb, cacheScript(`return attempt(cachedModel('`+modelURL+`'));`))
	require.Empty(t, resumed.Code, resumed.Message)
	assert.Equal(t, sha256Hex(data), resumed.SHA)
	log := m.log()
	require.Len(t, log, 2)
	assert.Equal(t, fmt.Sprintf("bytes=%d-", kept), log[1].Range)
}

// Two calls for one URL at once in a page share the download: one request;
// the second waits (seeing the first's progress), then finds the entry
// complete. A waiting call's signal ends its wait, not the download.
func TestBrowserCacheSharesADownload(t *testing.T) {
	tb, m := newCacheSite(t)
	data := randomModel(3<<20, 7)
	m.put("model.gguf", data)
	got := eval[struct {
		A, B, C cacheResult
		Watched int `json:"watched"`
	}](t, tb, cacheScript(`
		let watched = 0;
		const controller = new AbortController();
		const a = attempt(cachedModel('`+modelURL+`'));
		const b = attempt(cachedModel('`+modelURL+`', { onProgress: (loaded, total, phase) => { if (phase === 'download') watched++; } }));
		const c = attempt(cachedModel('`+modelURL+`', { signal: controller.signal }));
		controller.abort();
		return { A: await a, B: await b, C: await c, watched };`))
	require.Empty(t, got.A.Code, got.A.Message)
	require.Empty(t, got.B.Code, got.B.Message)
	assert.False(t, got.A.Cached)
	assert.True(t, got.B.Cached)
	assert.Equal(t, sha256Hex(data), got.A.SHA)
	assert.Equal(t, sha256Hex(data), got.B.SHA)
	assert.Positive(t, got.Watched, "the waiting call saw the download's progress")
	assert.Equal(t, "aborted", got.C.Code)
	assert.Len(t, m.log(), 1)
}

// Two tabs of one origin loading one URL at once: the second waits for the
// first's Web Lock (its request is pending while the first downloads), then
// finds the entry complete. One request reaches the server.
func TestBrowserCacheLocksAcrossTabs(t *testing.T) {
	a, m := newCacheSite(t)
	b := openTab(t, a.site, blankPage, nil)
	data := randomModel(2<<20+5, 11)
	m.put("model.gguf", data)
	half := len(data) / 2
	m.holdAt(half)
	startHeldDownload(t, a, half)
	waiting := eval[bool](t, b, cacheScript(`
		window.result = attempt(cachedModel('`+modelURL+`'));
		for (let i = 0; i < 1000; i++) {
			const { pending } = await navigator.locks.query();
			if (pending.some((l) => l.name.startsWith('wasmlm-models '))) return true;
			await new Promise((r) => setTimeout(r, 10));
		}
		return false;`))
	require.True(t, waiting, "the second tab waits for the first's lock")
	eval[bool](t, b, `fetch('`+releasePath+`', { method: 'POST' }).then(() => true)`)
	first := eval[cacheResult](t, a, `window.result`)
	second := eval[cacheResult](t, b, `window.result`)
	require.Empty(t, first.Code, first.Message)
	require.Empty(t, second.Code, second.Message)
	assert.False(t, first.Cached)
	assert.True(t, second.Cached)
	assert.Equal(t, sha256Hex(data), first.SHA)
	assert.Equal(t, sha256Hex(data), second.SHA)
	assert.Len(t, m.log(), 1)
}

// A tab closed mid-download keeps what its worker wrote (whole 1 MiB
// pieces: the piece being gathered in the page is lost with it); another
// tab resumes from there.
func TestBrowserCacheResumesAfterTheTabCloses(t *testing.T) {
	a, m := newCacheSite(t)
	b := openTab(t, a.site, blankPage, nil)
	data := randomModel(4<<20+77, 13)
	m.put("model.gguf", data)
	held := 2<<20 + 5
	m.holdAt(held)
	startHeldDownload(t, a, held)
	written := 2 << 20
	stored := eval[int](t, b, cacheScript(`
		for (let i = 0; i < 1000; i++) {
			const [e] = await cache.list();
			if (e?.size >= `+strconv.Itoa(written)+`) return e.size;
			await new Promise((r) => setTimeout(r, 10));
		}
		return -1;`))
	require.Equal(t, written, stored, "the worker wrote the whole pieces")
	require.NoError(t, chromedp.Do(a.ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, page.Close, cdp.Empty{})
		return err
	})))
	eval[bool](t, b, `fetch('`+releasePath+`', { method: 'POST' }).then(() => true)`)

	got := eval[cacheResult](t, b, cacheScript(`return attempt(cachedModel('`+modelURL+`'));`))
	require.Empty(t, got.Code, got.Message)
	assert.Equal(t, sha256Hex(data), got.SHA)
	log := m.log()
	require.Len(t, log, 2)
	assert.Equal(t, fmt.Sprintf("bytes=%d-", written), log[1].Range)
}

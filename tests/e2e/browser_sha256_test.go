//go:build !js

package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// sha256.js's incremental SHA-256 equals crypto.subtle.digest on every
// length from 0 to 200 (both sides of the 55/56- and 64-byte padding
// boundaries), around 4 KiB and 64 KiB and on a few MiB, fed whole and in
// random pieces.
func TestBrowserCacheSHA256(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		Mismatches []string `json:"mismatches"`
		Checked    int      `json:"checked"`
		MBps       float64  `json:"mbps"`
	}](t, tb, `(async () => {
		const { Sha256 } = await import('/sha256.js');
		const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
		const lengths = [...Array(201).keys(), 4095, 4096, 4097, 65535, 65536, 65537, (3 << 20) + 5];
		const mismatches = [];
		let seed = 1;
		const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
		for (const n of lengths) {
			const data = new Uint8Array(n);
			for (let at = 0; at < n; at += 65536) crypto.getRandomValues(data.subarray(at, Math.min(n, at + 65536)));
			const want = hex(await crypto.subtle.digest('SHA-256', data));
			if (new Sha256().update(data).hex() !== want) mismatches.push(n + ' whole');
			const h = new Sha256();
			for (let at = 0; at < n;) {
				const k = Math.min(n - at, 1 + Math.floor(random() * (n < 300 ? 70 : 100000)));
				h.update(data.subarray(at, at + k));
				at += k;
			}
			if (h.hex() !== want) mismatches.push(n + ' in pieces');
		}
		const big = new Uint8Array(32 << 20);
		const t0 = performance.now();
		new Sha256().update(big).hex();
		return { mismatches, checked: lengths.length, mbps: 32 / ((performance.now() - t0) / 1000) };
	})()`)
	assert.Empty(t, got.Mismatches)
	assert.Equal(t, 208, got.Checked)
	t.Logf("sha256.js hashes %.0f MB/s in this Chromium", got.MBps)
}

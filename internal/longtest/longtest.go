// Package longtest says whether the exhaustive checks run: make test-long
// sets WASMLM_LONG=1, and the tests that make test runs on a representative
// part (a subset of strings, fewer layers or cases) then run whole. What
// each such test leaves to make test-long is listed in docs/testing.md.
package longtest

import "os"

// Enabled reports whether WASMLM_LONG is set (to anything but the empty
// string): the tests run their whole sets.
func Enabled() bool { return os.Getenv("WASMLM_LONG") != "" }

// Every returns every k-th item of items, from the first, or all of them
// when Enabled (or k <= 1): a fixed, evenly spread subset for make test.
func Every[T any](items []T, k int) []T {
	if Enabled() || k <= 1 {
		return items
	}
	out := make([]T, 0, (len(items)+k-1)/k)
	for i := 0; i < len(items); i += k {
		out = append(out, items[i])
	}
	return out
}

//go:build !race

// Package race says whether the program was built with the race detector
// (go test -race). Tests that count allocations skip under it: the
// detector's instrumentation allocates where the code itself does not.
package race

// Enabled reports whether the race detector is built in.
const Enabled = false

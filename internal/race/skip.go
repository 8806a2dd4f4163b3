package race

import "testing"

// SkipAllocationCount skips a test that counts allocations when the race
// detector is built in: its instrumentation allocates where the code
// itself does not.
func SkipAllocationCount(t testing.TB) {
	t.Helper()
	if Enabled {
		t.Skip("counts allocations, which the race detector adds")
	}
}

package engine

import (
	"fmt"
	"syscall"
)

// hostMemory is the most memory a session and its model may take, and what
// bounds it: the machine's physical memory (sysinfo's total RAM), or the
// address space the process may map (RLIMIT_AS, ulimit -v) when that is
// less. A KV cache beyond it could never be resident: the allocation would
// fail, or the machine swap, long after the user asked for it.
func hostMemory() (int64, string) {
	limit, what := int64(fallbackMemory), fallbackMemoryWhat
	var info syscall.Sysinfo_t
	if syscall.Sysinfo(&info) == nil && info.Totalram > 0 {
		unit := max(uint64(info.Unit), 1)
		limit = int64(min(uint64(info.Totalram)*unit, fallbackMemory))
		what = fmt.Sprintf("this machine's %d MiB of memory", limit>>20)
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && uint64(rl.Cur) < uint64(limit) {
		limit = int64(rl.Cur)
		what = fmt.Sprintf("the %d MiB of address space this process may map (ulimit -v)", limit>>20)
	}
	return limit, what
}

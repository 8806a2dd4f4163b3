package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Peak memory, per model. Natively it is the process's peak resident set
// (VmHWM in /proc/self/status), which Linux lets a process reset (writing 5
// to /proc/self/clear_refs) so each model is measured alone. Under
// WebAssembly the Go heap is the instance's linear memory, which never
// shrinks: runtime.MemStats.Sys, the bytes the runtime has taken, is its
// size — run one model per process there, as the benchmark harness does.
const (
	sourceVmHWM    = "VmHWM"
	sourceSys      = "MemStats.Sys"
	sourceLifetime = "VmHWM (not reset: since the process started)"
)

// resetPeakMemory frees what earlier models left and, where Linux allows,
// restarts the process's peak-RSS count; it reports whether it could (a
// system without /proc/self/clear_refs, or one that refuses the write,
// keeps counting from the process's start).
func resetPeakMemory() (reset bool) {
	runtime.GC()
	debug.FreeOSMemory()
	// Under wasm in Node this resets Node's own count, for ProcessPeakRSSBytes.
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakMemory is the peak memory of the current model and how it was
// measured; reset is what resetPeakMemory reported before the model loaded.
func peakMemory(reset bool) (uint64, string) {
	if runtime.GOOS != "js" {
		if hwm, ok := procStatus("VmHWM"); ok {
			if !reset {
				return hwm, sourceLifetime
			}
			return hwm, sourceVmHWM
		}
	}
	var st runtime.MemStats
	runtime.ReadMemStats(&st)
	return st.Sys, sourceSys
}

// peakMemoryNote explains peakMemory's numbers on this platform.
func peakMemoryNote() string {
	if _, ok := procStatus("VmHWM"); runtime.GOOS == "js" || !ok {
		return "runtime.MemStats.Sys (under WebAssembly: the size of the linear memory, which never shrinks)"
	}
	return "the process's peak resident set (VmHWM), reset before each model"
}

// procStatus reads a "Key:  N kB" line of /proc/self/status, in bytes.
func procStatus(key string) (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb * 1024, err == nil
	}
	return 0, false
}

//go:build unix

package main

import "syscall"

// openFileLimit is the number of files the process may open (the Go runtime
// raised its soft limit to the hard one at start), or 0 if unknown.
func openFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= 1<<62 { // RLIM_INFINITY
		return 0
	}
	return lim.Cur
}

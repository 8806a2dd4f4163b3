//go:build !unix

package main

// openFileLimit is 0 (unknown) where the process has no file limit to ask.
func openFileLimit() uint64 { return 0 }

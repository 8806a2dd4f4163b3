//go:build unix

package main

import (
	"os"
	"syscall"
)

// hangupSignals are the signals that make serve re-read its key file.
var hangupSignals = []os.Signal{syscall.SIGHUP}

//go:build unix

package servecli

import (
	"os"
	"syscall"
)

// hangupSignals are the signals that make serve re-read its key file.
var hangupSignals = []os.Signal{syscall.SIGHUP}

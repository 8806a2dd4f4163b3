//go:build !unix

package servecli

import "os"

// hangupSignals are the signals that make serve re-read its key file:
// none where there is no SIGHUP (restart serve to change its keys).
var hangupSignals []os.Signal

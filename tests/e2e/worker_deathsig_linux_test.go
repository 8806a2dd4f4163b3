//go:build linux

package e2e

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd when the test binary dies, so a
// crashed or timed-out test run leaves no workerd behind.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

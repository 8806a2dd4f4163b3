//go:build !linux && !js

package e2e

import "os/exec"

// setDeathSignal does nothing where the kernel offers no parent-death
// signal; t.Cleanup still stops workerd when the tests end normally.
func setDeathSignal(*exec.Cmd) {}

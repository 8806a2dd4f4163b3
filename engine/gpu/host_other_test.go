//go:build !js && !gpuops_cdp

package gpu_test

import (
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// testHost skips: the kernels run on WebGPU, which the tests find in
// Chromium (make test-gpu: GOOS=js GOARCH=wasm binaries in a Web Worker).
func testHost(t testing.TB) gpu.Host {
	t.Skip("the kernel tests run in Chromium with WebGPU: make test-gpu")
	return nil
}

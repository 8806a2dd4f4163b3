//go:build js

package gpu_test

import (
	"errors"
	"os"
	"testing"

	"github.com/wasmlm/wasmlm/engine/gpu"
	"github.com/wasmlm/wasmlm/webgpu"
)

var (
	host    *webgpu.Host
	hostErr error
)

// testHost is the browser's WebGPU device, opened once for the test
// binary. Without WebGPU the test skips (Node, under make test-wasm), but
// not under tools/wasmbrowser (WASMLM_WASMBROWSER set), whose Chromium has
// SwiftShader's adapter: there it fails.
func testHost(t testing.TB) gpu.Host {
	t.Helper()
	if host == nil && hostErr == nil {
		host, hostErr = webgpu.Open(webgpu.Options{})
	}
	if hostErr != nil {
		if errors.Is(hostErr, gpu.ErrUnsupported) && os.Getenv("WASMLM_WASMBROWSER") == "" {
			t.Skipf("%v (the kernel tests run in Chromium: make test-gpu)", hostErr)
		}
		t.Fatal(hostErr)
	}
	return host
}

// testHostWithout is a second device, opened without the features named
// (as a device that lacks them), closed when the test ends; it skips and
// fails as testHost does.
func testHostWithout(t testing.TB, features ...string) gpu.Host {
	t.Helper()
	h, err := webgpu.Open(webgpu.Options{WithoutFeatures: features})
	if err != nil {
		if errors.Is(err, gpu.ErrUnsupported) && os.Getenv("WASMLM_WASMBROWSER") == "" {
			t.Skipf("%v (the kernel tests run in Chromium: make test-gpu)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

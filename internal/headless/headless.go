//go:build !js

// Package headless starts the headless Chromium that the browser tests and
// the benchmark drive: Debian's chromium (or $CHROME_PATH) with the flags the
// project runs it with everywhere, a fresh profile, and nothing that reaches
// the network on its own.
package headless

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Names are the executable names Path looks for on PATH, in order.
// tools/ensure-deps.sh looks for the same ones (a test keeps them equal)
// and installs Debian's chromium when none is there and CHROME_PATH is
// unset.
func Names() []string {
	return []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"}
}

// Path finds the browser: $CHROME_PATH when set, else the first of Names
// on PATH.
func Path() (string, error) {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p, nil
	}
	for _, name := range Names() {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found: install the Debian package chromium (apt-get install chromium), or set CHROME_PATH")
}

// WebGPUFlags are the flags StartWebGPU adds: WebGPU on SwiftShader's
// Vulkan, Chromium's software adapter, which runs compute shaders on the CPU
// of a machine without a GPU. WebGPU needs the GPU process, so StartWebGPU
// leaves out --disable-gpu, which Start passes.
func WebGPUFlags() map[string]any {
	return map[string]any{
		"enable-unsafe-webgpu": true,
		// chromedp's defaults enable these two features: the flag replaces
		// its value, so it keeps them.
		"enable-features":    "NetworkService,NetworkServiceInProcess,Vulkan",
		"use-vulkan":         "swiftshader",
		"use-webgpu-adapter": "swiftshader",
	}
}

// SystemGPUFlags are the flags that give pages the machine's own GPU
// through WebGPU (Chromium on Linux reaches it through Vulkan; elsewhere
// the feature is harmless): for StartWith, on a machine with a GPU, where
// WebGPUFlags would take SwiftShader instead. The developer features let
// timestamp queries keep their full resolution (Chromium rounds them to
// 100 µs otherwise).
func SystemGPUFlags() map[string]any {
	return map[string]any{
		"enable-unsafe-webgpu":             true,
		"enable-webgpu-developer-features": true,
		"enable-features":                  "NetworkService,NetworkServiceInProcess,Vulkan",
		"ignore-gpu-blocklist":             true,
	}
}

// Start launches the browser with a fresh profile in a temporary directory
// named after profilePrefix, and returns a chromedp context of its first tab
// and stop, which ends the browser and removes the profile. On error nothing
// is left running. The browser has no GPU (--disable-gpu): pages see no
// WebGPU adapter; StartWebGPU gives them SwiftShader's.
func Start(profilePrefix string) (ctx context.Context, stop func(), err error) {
	return start(profilePrefix, chromedp.DisableGPU)
}

// StartWebGPU is Start with WebGPU (WebGPUFlags): pages and their workers
// served from http://127.0.0.1 (a secure context) find navigator.gpu and
// SwiftShader's fallback adapter.
func StartWebGPU(profilePrefix string) (ctx context.Context, stop func(), err error) {
	return StartWith(profilePrefix, WebGPUFlags())
}

// StartWith is Start with the GPU process and flags (name → value; false
// removes a default one: "headless": false shows the window), such as
// WebGPUFlags or SystemGPUFlags.
func StartWith(profilePrefix string, flags map[string]any) (ctx context.Context, stop func(), err error) {
	var opts []chromedp.ExecAllocatorOption
	for name, value := range flags {
		opts = append(opts, chromedp.Flag(name, value))
	}
	return start(profilePrefix, opts...)
}

func start(profilePrefix string, extra ...chromedp.ExecAllocatorOption) (ctx context.Context, stop func(), err error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	profile, err := os.MkdirTemp("", profilePrefix)
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 960),
	)
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	stop = func() {
		cancel()
		cancelAlloc()
		os.RemoveAll(profile)
	}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		stop()
		return nil, nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return ctx, stop, nil
}

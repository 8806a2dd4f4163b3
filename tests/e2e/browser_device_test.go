//go:build !js

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/wasmlm/wasmlm/internal/headless"
)

var theGPUBrowser shared[context.Context]

// gpuBrowser returns the context of this test binary's second Chromium,
// the one started with SwiftShader's WebGPU adapter (headless.StartWebGPU):
// a fallback adapter, which device 'auto' skips and 'webgpu' takes.
func gpuBrowser(t testing.TB) context.Context {
	t.Helper()
	return theGPUBrowser.get(t, func() (context.Context, error) {
		ctx, stop, err := headless.StartWebGPU("wasmlm-chromium-webgpu-")
		if err != nil {
			return nil, err
		}
		atShutdown(stop)
		return ctx, nil
	})
}

// deviceOutcome is what a load with a device option gave: where the model
// runs and why, or the load's error.
type deviceOutcome struct {
	Device       string `json:"device"`
	DeviceReason string `json:"deviceReason"`
	Adapter      *struct {
		Vendor       string `json:"vendor"`
		Architecture string `json:"architecture"`
		Fallback     bool   `json:"fallback"`
	} `json:"adapter"`
	Tokens int    `json:"tokens"` // generated after the load
	Code   string `json:"code"`   // the load's error
	Field  string `json:"field"`
	Error  string `json:"error"`
}

// loadWithDevice is a script that loads the default model with options
// (JavaScript), generates four tokens and reports a deviceOutcome.
func loadWithDevice(options string) string {
	return apiScript(`
		try {
			const lm = await WasmLM.load(DEFAULT_MODEL, ` + options + `);
			const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 4 });
			lm.unload();
			return { device: lm.info.device, deviceReason: lm.info.deviceReason ?? '', adapter: lm.info.adapter ?? null, tokens: r.tokens.length };
		} catch (err) {
			return { code: err.code, field: err.field ?? '', error: err.message };
		}`)
}

// In the browser the tests run (--disable-gpu), navigator.gpu gives no
// adapter: device 'auto' (the default) runs on the CPU and says why,
// 'webgpu' rejects with device_unsupported before any weights are read,
// 'cpu' says it was asked for. A device option that is none of the three,
// and 'webgpu' with several workers, are invalid arguments; inspect
// reports memory.gpu.
func TestBrowserDeviceWithoutGPU(t *testing.T) {
	cases := []struct {
		name    string
		options string
		want    deviceOutcome
	}{
		{"default", `{}`, deviceOutcome{Device: "cpu", DeviceReason: "navigator.gpu has no adapter", Tokens: 4}},
		{"auto", `{ device: 'auto' }`, deviceOutcome{Device: "cpu", DeviceReason: "navigator.gpu has no adapter", Tokens: 4}},
		{"cpu", `{ device: 'cpu' }`, deviceOutcome{Device: "cpu", DeviceReason: "the device: 'cpu' load option", Tokens: 4}},
		{"webgpu", `{ device: 'webgpu' }`, deviceOutcome{Code: "device_unsupported",
			Error: "wasmlm: device 'webgpu' cannot run this model: navigator.gpu has no adapter"}},
		{"webgpu on two workers", `{ device: 'webgpu', workers: 2 }`, deviceOutcome{Code: "invalid_argument", Field: "workers",
			Error: "wasmlm: invalid argument: workers must be 1 or 'auto' with device: 'webgpu' (one GPU serves one worker), got 2"}},
		{"a device that is none", `{ device: 'gpu' }`, deviceOutcome{Code: "invalid_argument", Field: "device",
			Error: `wasmlm: invalid argument: device must be 'auto', 'webgpu' or 'cpu', got string "gpu"`}},
	}
	tb := newTab(t, blankPage)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := eval[deviceOutcome](t, tb, loadWithDevice(c.options))
			if c.want.Code != "" {
				assert.Equal(t, c.want.Code, got.Code, got.Error)
				assert.Equal(t, c.want.Field, got.Field)
				assert.Equal(t, c.want.Error, got.Error)
				return
			}
			assert.Empty(t, got.Error)
			assert.Equal(t, c.want.Device, got.Device)
			assert.Equal(t, c.want.Tokens, got.Tokens)
			assert.Nil(t, got.Adapter)
			assert.Equal(t, c.want.DeviceReason, got.DeviceReason)
		})
	}
	mem := eval[struct {
		GPU     int64 `json:"gpu"`
		Weights int64 `json:"weights"`
		KVCache int64 `json:"kvCache"`
	}](t, tb, apiScript(`return (await WasmLM.inspect(DEFAULT_MODEL, { device: 'webgpu' })).memory;`))
	assert.Equal(t, mem.Weights+mem.KVCache, mem.GPU, "memory.gpu: the weights and the KV cache")
}

// With SwiftShader's WebGPU adapter, a fallback (software) one, device
// 'auto' runs on the CPU and says the adapter is a fallback one.
func TestBrowserDeviceFallbackAdapter(t *testing.T) {
	tb := openTabIn(t, gpuBrowser(t), webSite(t), blankPage, nil)
	got := eval[deviceOutcome](t, tb, loadWithDevice(`{ device: 'auto' }`))
	assert.Empty(t, got.Error)
	assert.Equal(t, "cpu", got.Device)
	assert.Equal(t, "the WebGPU adapter (google swiftshader) is a fallback, software one, which device: 'auto' skips (device: 'webgpu' uses it)", got.DeviceReason)
	assert.Equal(t, 4, got.Tokens)
}

// The demo page shows where the model runs beside its kernels (here the
// CPU, with why not the GPU), and its device choice loads the model again
// there.
func TestBrowserDemoDevice(t *testing.T) {
	tb := newTab(t, "/")
	ready := `document.getElementById('status').dataset.state === 'ready'`
	waitFor(t, tb, ready, 30*time.Second)
	assert.Contains(t, text(t, tb, "model-info"), "SIMD kernels · 1 worker · CPU (not the GPU: navigator.gpu has no adapter)")
	eval[bool](t, tb, `(() => {
		const s = document.getElementById('device');
		s.value = 'cpu';
		s.dispatchEvent(new Event('change'));
		return true;
	})()`)
	waitFor(t, tb, ready+` && document.getElementById('model-info').textContent.includes("the device: 'cpu' load option")`, 30*time.Second)
	assert.Contains(t, text(t, tb, "model-info"), "1 worker · CPU (not the GPU: the device: 'cpu' load option)")
	assert.Contains(t, text(t, tb, "status"), "stories260K ready in")
}

//go:build !js

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
			Error: "wasmlm: device 'webgpu' cannot be used: navigator.gpu has no adapter"}},
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

	// WebGPU, which this browser has no adapter for: the load fails, the
	// model on the CPU goes on, and the chooser says 'cpu' again.
	eval[bool](t, tb, `(() => {
		const s = document.getElementById('device');
		s.value = 'webgpu';
		s.dispatchEvent(new Event('change'));
		return true;
	})()`)
	waitFor(t, tb, ready+` && document.getElementById('message').textContent.includes('Could not load')`, 30*time.Second)
	assert.Contains(t, text(t, tb, "message"), "navigator.gpu has no adapter", "the message says why")
	assert.Equal(t, "cpu", eval[string](t, tb, `document.getElementById('device').value`))
	assert.Contains(t, text(t, tb, "status"), "stories260K ready")
}

// A GPU device lost mid-generation (here a stand-in: the worker's reply to
// the first generation is the error the engine gives then) rejects the
// call with device_lost; the model is done, so its later calls reject the
// same way, and the page's next load with device 'auto' runs on the CPU,
// saying why, while device 'cpu' says it was asked for.
func TestBrowserDeviceLost(t *testing.T) {
	tb := newTab(t, blankPage)
	got := eval[struct {
		First, Later       string
		Device, Reason     string
		CPUReason, Message string
		Tokens             int
	}](t, tb, apiScript(`
		const { host } = await import('/host.js');
		let lost = false;
		host.newWorker = (name) => {
			const w = new Worker(new URL('/wasmlm.worker.js', location.href), { type: 'module', name });
			const generations = new Set();
			const proxy = {
				onmessage: null, onerror: null, onmessageerror: null,
				postMessage(m, transfer) {
					if (m.type === 'generate') generations.add(m.id);
					w.postMessage(m, transfer);
				},
				terminate: () => w.terminate(),
			};
			w.onmessage = (e) => {
				let data = e.data;
				if (!lost && data.type === 'result' && generations.has(data.id)) {
					lost = true;
					data = { type: 'result', id: data.id, error: { code: 'device_lost', message: 'wasmlm: reading the logits: gpu: device lost: destroyed by the test' } };
				}
				proxy.onmessage?.({ data });
			};
			w.onerror = (e) => proxy.onerror?.(e);
			w.onmessageerror = (e) => proxy.onmessageerror?.(e);
			return proxy;
		};
		const lm = await WasmLM.load(DEFAULT_MODEL);
		const code = (p) => p.then(() => 'resolved', (err) => err.code);
		const first = await code(lm.generate('Once upon a time', { maxTokens: 4 }));
		const later = await code(lm.tokenize('Once'));
		let message = '';
		await lm.generate('x').catch((err) => { message = err.message; });
		const again = await WasmLM.load(DEFAULT_MODEL);
		const r = await again.generate('Once upon a time', { temperature: 0, maxTokens: 4 });
		const cpu = await WasmLM.load(DEFAULT_MODEL, { device: 'cpu' });
		const out = { first, later, device: again.info.device, reason: again.info.deviceReason, cpuReason: cpu.info.deviceReason, message, tokens: r.tokens.length };
		again.unload();
		cpu.unload();
		host.newWorker = null;
		return out;
	`))
	assert.Equal(t, "device_lost", got.First)
	assert.Equal(t, "device_lost", got.Later, "the model is done")
	assert.Equal(t, "wasmlm: the model's GPU device was lost: load the model again (device 'auto' then runs it on the CPU)", got.Message)
	assert.Equal(t, "cpu", got.Device)
	assert.Equal(t, "a WebGPU device was lost on this page (reading the logits: gpu: device lost: destroyed by the test); device: 'webgpu' tries the GPU again", got.Reason)
	assert.Equal(t, "the device: 'cpu' load option", got.CPUReason)
	assert.Equal(t, 4, got.Tokens)
}

// With SwiftShader's adapter, device 'webgpu' runs a model on the GPU:
// info says so and names the adapter, and it generates (how many greedy
// tokens agree with the CPU's is logged: the GPU sums in another order,
// and engine/gpu's tests hold its exactness).
func TestBrowserDeviceWebGPU(t *testing.T) {
	tb := openTabIn(t, gpuBrowser(t), webSite(t), blankPage, nil)
	for _, file := range []string{"synth-k256-Q4_K_M.gguf", "synth-k256-Q6_K.gguf"} {
		t.Run(file, func(t *testing.T) {
			got := eval[struct {
				Device  string `json:"device"`
				Reason  string `json:"reason"`
				Adapter struct {
					Vendor       string `json:"vendor"`
					Architecture string `json:"architecture"`
					Fallback     bool   `json:"fallback"`
				} `json:"adapter"`
				GPU, CPU []int
				Error    string `json:"error"`
			}](t, tb, apiScript(`
				try {
					const tokens = async (device) => {
						const lm = await WasmLM.load('`+llama2cDir+`gguf/`+file+`', { device, cache: false });
						const r = await lm.generate('Once upon a time', { temperature: 0, maxTokens: 16 });
						lm.unload();
						return [lm.info, r.tokens];
					};
					const [info, gpu] = await tokens('webgpu');
					const [, cpu] = await tokens('cpu');
					return { device: info.device, reason: info.deviceReason ?? '', adapter: info.adapter, gpu, cpu };
				} catch (err) {
					return { error: err.code + ': ' + err.message };
				}`))
			require.Empty(t, got.Error)
			assert.Equal(t, "webgpu", got.Device, got.Reason)
			assert.Equal(t, "swiftshader", got.Adapter.Architecture)
			assert.True(t, got.Adapter.Fallback)
			require.Len(t, got.GPU, 16)
			same := 0
			for same < len(got.GPU) && same < len(got.CPU) && got.GPU[same] == got.CPU[same] {
				same++
			}
			t.Logf("%s: the GPU's greedy tokens agree with the CPU's for %d of 16", file, same)
		})
	}
}

// TestBrowserDeviceUnloadFreesGPU loads a model with device 'webgpu' in a
// worker whose GPU buffers are counted, generates, and unloads it:
// lm.unload() must have destroyed every buffer the worker made before the
// page ends the worker.
func TestBrowserDeviceUnloadFreesGPU(t *testing.T) {
	tb := openTabIn(t, gpuBrowser(t), webSite(t), blankPage, nil)
	got := eval[struct {
		Device    string `json:"device"`
		Created   int    `json:"created"`
		Destroyed int    `json:"destroyed"`
		Error     string `json:"error"`
	}](t, tb, apiScript(gpuWorkerScript+`
		try {
			const lm = await WasmLM.load('`+llama2cDir+`gguf/synth-k256-Q4_K_M.gguf', { device: 'webgpu', cache: false });
			await lm.generate('Once upon a time', { temperature: 0, maxTokens: 2 });
			lm.unload();
			await gpu.ended;
			return { device: lm.info.device, ...gpu.buffers };
		} catch (err) {
			return { error: err.code + ': ' + err.message };
		} finally {
			host.newWorker = null;
		}`))
	require.Empty(t, got.Error)
	assert.Equal(t, "webgpu", got.Device)
	assert.Positive(t, got.Created)
	assert.Equal(t, got.Created, got.Destroyed, "unload destroys every buffer the worker made")
}

// gpuWorkerScript is a script for apiScript that makes the page's next
// workers count their GPU buffers and obey {type: 'destroy-device'}: the
// worker's GPUDevice.destroy(), as a driver reset would lose it. It sets
// gpu.buffers ({created, destroyed}), gpu.ended (a Promise settled when the
// page ends the worker) and gpu.destroy() (the message to the last worker).
const gpuWorkerScript = `
	const { host } = await import('/host.js');
	const patch = URL.createObjectURL(new Blob([` + "`" + `
		let created = 0, destroyed = 0, device = null;
		const report = () => postMessage({ type: 'buffers', created, destroyed });
		const create = GPUDevice.prototype.createBuffer;
		GPUDevice.prototype.createBuffer = function (d) { created++; report(); return create.call(this, d); };
		const destroy = GPUBuffer.prototype.destroy;
		GPUBuffer.prototype.destroy = function () { destroyed++; report(); return destroy.call(this); };
		const requestDevice = GPUAdapter.prototype.requestDevice;
		GPUAdapter.prototype.requestDevice = async function (d) { device = await requestDevice.call(this, d); return device; };
		self.addEventListener('message', (e) => { if (e.data?.type === 'destroy-device') device?.destroy(); });
	` + "`" + `], { type: 'text/javascript' }));
	const main = URL.createObjectURL(new Blob([
		'import ' + JSON.stringify(patch) + '; import ' + JSON.stringify(new URL('/wasmlm.worker.js', location.href).href) + ';',
	], { type: 'text/javascript' }));
	let end;
	const gpu = { buffers: { created: 0, destroyed: 0 }, ended: new Promise((resolve) => { end = resolve; }), destroy: null };
	host.newWorker = (name) => {
		const w = new Worker(main, { type: 'module', name });
		const proxy = {
			onmessage: null, onerror: null, onmessageerror: null,
			postMessage: (m, transfer) => w.postMessage(m, transfer),
			terminate: () => { w.terminate(); end(); },
		};
		w.onmessage = (e) => {
			if (e.data.type === 'buffers') gpu.buffers = e.data;
			else proxy.onmessage?.(e);
		};
		w.onerror = (e) => proxy.onerror?.(e);
		w.onmessageerror = (e) => proxy.onmessageerror?.(e);
		gpu.destroy = () => w.postMessage({ type: 'destroy-device' });
		return proxy;
	};
`

// A GPU device destroyed mid-generation (GPUDevice.destroy() in the
// worker) rejects the generation with device_lost; the model is done, and
// the page's next load with device 'auto' runs on the CPU.
func TestBrowserDeviceDestroyedMidGeneration(t *testing.T) {
	tb := openTabIn(t, gpuBrowser(t), webSite(t), blankPage, nil)
	got := eval[struct {
		Device, Code, Later, Again, Reason, Error string
		Chunks                                    int
	}](t, tb, apiScript(gpuWorkerScript+`
		try {
			const lm = await WasmLM.load('`+llama2cDir+`gguf/synth-k256-Q6_K.gguf', { device: 'webgpu', cache: false });
			let chunks = 0, code = 'resolved';
			try {
				for await (const _ of lm.stream('Once upon a time', { temperature: 0, maxTokens: 200 })) {
					if (++chunks === 2) gpu.destroy();
				}
			} catch (err) {
				code = err.code;
			}
			const later = await lm.tokenize('x').then(() => 'resolved', (err) => err.code);
			const { host } = await import('/host.js');
			host.newWorker = null;
			const again = await WasmLM.load('`+llama2cDir+`gguf/synth-k256-Q6_K.gguf', { cache: false });
			const out = { device: lm.info.device, code, chunks, later, again: again.info.device, reason: again.info.deviceReason };
			again.unload();
			return out;
		} catch (err) {
			return { error: err.code + ': ' + err.message };
		}`))
	require.Empty(t, got.Error)
	assert.Equal(t, "webgpu", got.Device)
	assert.Equal(t, "device_lost", got.Code, "after %d chunks", got.Chunks)
	assert.Less(t, got.Chunks, 200)
	assert.Equal(t, "device_lost", got.Later)
	assert.Equal(t, "cpu", got.Again)
	assert.Contains(t, got.Reason, "a WebGPU device was lost on this page")
}

// A generation on the GPU aborted mid-way resolves with finishReason
// 'abort', and the model goes on: the same greedy tokens as before.
func TestBrowserDeviceAbortOnGPU(t *testing.T) {
	tb := openTabIn(t, gpuBrowser(t), webSite(t), blankPage, nil)
	got := eval[struct {
		Device, Finish, Error string
		Before, After         []int
	}](t, tb, apiScript(`
		try {
			const lm = await WasmLM.load('`+llama2cDir+`gguf/synth-k256-Q6_K.gguf', { device: 'webgpu', cache: false });
			const greedy = { temperature: 0, maxTokens: 8 };
			const before = (await lm.generate('Once upon a time', greedy)).tokens;
			const controller = new AbortController();
			const s = lm.stream('It was a dark night', { temperature: 0, maxTokens: 200, signal: controller.signal });
			let chunks = 0;
			for await (const _ of s) if (++chunks === 2) controller.abort();
			const finish = (await s.result).finishReason;
			const after = (await lm.generate('Once upon a time', greedy)).tokens;
			lm.unload();
			return { device: lm.info.device, finish, before, after };
		} catch (err) {
			return { error: err.code + ': ' + err.message };
		}`))
	require.Empty(t, got.Error)
	assert.Equal(t, "webgpu", got.Device)
	assert.Equal(t, "abort", got.Finish)
	assert.Len(t, got.Before, 8)
	assert.Equal(t, got.Before, got.After)
}

//go:build js

package webgpu

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// Options say which adapter and device Open asks for; the zero value is
// the browser's default adapter with every optional feature it has.
type Options struct {
	// PowerPreference is GPURequestAdapterOptions.powerPreference:
	// "low-power", "high-performance", or "" for the browser's choice.
	PowerPreference string
	// WithoutFeatures are features not to request even where the adapter
	// has them ("subgroups", "shader-f16", "timestamp-query"): a test runs
	// a kernel's path for devices without them.
	WithoutFeatures []string
}

// Features are the optional features Open requests where the adapter has
// them.
var Features = []string{"subgroups", "shader-f16", "timestamp-query"}

// limits are the limits Open requests at the adapter's own values (the
// defaults are far lower: 256 MiB buffers, 128 MiB storage bindings).
var limits = []string{
	"maxBufferSize",
	"maxStorageBufferBindingSize",
	"maxComputeWorkgroupStorageSize",
	"maxStorageBuffersPerShaderStage",
	"maxComputeInvocationsPerWorkgroup",
	"maxComputeWorkgroupSizeX",
}

// Host is a WebGPU device: gpu.Host over navigator.gpu. It is used by one
// goroutine at a time, never from inside a js.FuncOf callback.
type Host struct {
	adapter gpu.Adapter
	device  js.Value
	queue   js.Value

	mu   sync.Mutex // guards lost, which the device's callbacks set
	lost error

	pending error              // the first misuse Write saw, returned by the next call that can fail
	live    map[*buffer]bool   // buffers NewBuffer made, not yet destroyed
	staging *buffer            // Read's MAP_READ buffer, grown as needed
	upload  js.Value           // Write's Uint8Array, grown as needed
	timing  timing             // SubmitTimed's query set and buffers
	release []func()           // the device's callbacks and listeners, released by Close
	kernels map[string]*kernel // compiled pipelines by entry point and source: a model loaded again compiles nothing
	closed  bool
}

var _ gpu.Host = (*Host)(nil)

// Open requests an adapter and a device. Without navigator.gpu (a browser
// without WebGPU, an insecure context, Node.js) or without an adapter, the
// error wraps gpu.ErrUnsupported and says which.
func Open(opts Options) (h *Host, err error) {
	defer catchJS(&err, "opening the device")
	navigator := js.Global().Get("navigator")
	if navigator.Type() != js.TypeObject || navigator.Get("gpu").Type() != js.TypeObject {
		return nil, fmt.Errorf("webgpu: no navigator.gpu (this browser has no WebGPU, or the page is not a secure context): %w", gpu.ErrUnsupported)
	}
	request := js.Global().Get("Object").New()
	if opts.PowerPreference != "" {
		request.Set("powerPreference", opts.PowerPreference)
	}
	adapter, err := await(navigator.Get("gpu").Call("requestAdapter", request))
	if err != nil {
		return nil, fmt.Errorf("webgpu: requestAdapter: %v: %w", err, gpu.ErrUnsupported)
	}
	if adapter.Type() != js.TypeObject {
		return nil, fmt.Errorf("webgpu: navigator.gpu has no adapter: %w", gpu.ErrUnsupported)
	}

	desc := js.Global().Get("Object").New()
	features := js.Global().Get("Array").New()
	for _, f := range Features {
		if adapter.Get("features").Call("has", f).Bool() && !slices.Contains(opts.WithoutFeatures, f) {
			features.Call("push", f)
		}
	}
	desc.Set("requiredFeatures", features)
	required := js.Global().Get("Object").New()
	for _, name := range limits {
		if v := adapter.Get("limits").Get(name); v.Type() == js.TypeNumber {
			required.Set(name, v)
		}
	}
	desc.Set("requiredLimits", required)
	desc.Set("label", "wasmlm")
	device, err := await(adapter.Call("requestDevice", desc))
	if err != nil {
		return nil, fmt.Errorf("webgpu: requestDevice: %v: %w", err, gpu.ErrUnsupported)
	}

	h = &Host{device: device, queue: device.Get("queue"), live: map[*buffer]bool{}}
	h.adapter = describe(adapter, device)
	h.watch()
	return h, nil
}

// describe reads the adapter's information and the device's features and
// limits.
func describe(adapter, device js.Value) gpu.Adapter {
	info := adapter.Get("info")
	str := func(name string) string {
		if v := info.Get(name); v.Type() == js.TypeString {
			return v.String()
		}
		return ""
	}
	num := func(v js.Value) int {
		if v.Type() == js.TypeNumber {
			return v.Int()
		}
		return 0
	}
	fallback := info.Get("isFallbackAdapter")
	if fallback.Type() != js.TypeBoolean {
		fallback = adapter.Get("isFallbackAdapter") // browsers before GPUAdapterInfo had it
	}
	has := func(f string) bool { return device.Get("features").Call("has", f).Bool() }
	lim := device.Get("limits")
	return gpu.Adapter{
		Vendor:                            str("vendor"),
		Architecture:                      str("architecture"),
		Device:                            str("device"),
		Description:                       str("description"),
		Fallback:                          fallback.Type() == js.TypeBoolean && fallback.Bool(),
		Subgroups:                         has("subgroups"),
		SubgroupMin:                       num(info.Get("subgroupMinSize")),
		SubgroupMax:                       num(info.Get("subgroupMaxSize")),
		F16:                               has("shader-f16"),
		TimestampQuery:                    has("timestamp-query"),
		MaxBufferSize:                     num(lim.Get("maxBufferSize")),
		MaxStorageBufferBindingSize:       num(lim.Get("maxStorageBufferBindingSize")),
		MaxComputeWorkgroupStorageSize:    num(lim.Get("maxComputeWorkgroupStorageSize")),
		MaxComputeInvocationsPerWorkgroup: num(lim.Get("maxComputeInvocationsPerWorkgroup")),
		MaxComputeWorkgroupsPerDimension:  num(lim.Get("maxComputeWorkgroupsPerDimension")),
		MaxStorageBuffersPerShaderStage:   num(lim.Get("maxStorageBuffersPerShaderStage")),
	}
}

// watch makes the device's loss and its uncaptured errors the host's
// error. The callbacks only record it: they never block.
func (h *Host) watch() {
	// The lost Promise settles once, at the latest when Close destroys the
	// device: its callback releases itself.
	var onLost js.Func
	onLost = js.FuncOf(func(_ js.Value, args []js.Value) any {
		defer onLost.Release()
		info := arg0(args)
		reason, msg := "unknown", ""
		if info.Type() == js.TypeObject {
			if r := info.Get("reason"); r.Type() == js.TypeString {
				reason = r.String()
			}
			if m := info.Get("message"); m.Type() == js.TypeString {
				msg = strings.TrimSpace(m.String())
			}
		}
		h.setLost(fmt.Errorf("webgpu: the device was lost (%s): %s: %w", reason, msg, gpu.ErrDeviceLost))
		return nil
	})
	h.device.Get("lost").Call("then", onLost)
	onError := js.FuncOf(func(_ js.Value, args []js.Value) any {
		ev := arg0(args)
		msg := "an error without a message"
		if ev.Type() == js.TypeObject && ev.Get("error").Type() == js.TypeObject {
			msg = jsError(ev.Get("error")).Error()
			ev.Call("preventDefault") // reported here, not on the console
		}
		h.setLost(fmt.Errorf("webgpu: uncaptured WebGPU error: %s: %w", msg, gpu.ErrDeviceLost))
		return nil
	})
	h.device.Call("addEventListener", "uncapturederror", onError)
	h.release = append(h.release, func() {
		h.device.Call("removeEventListener", "uncapturederror", onError)
		onError.Release()
	})
}

// setLost records the first reason the device stopped working.
func (h *Host) setLost(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost == nil {
		h.lost = err
	}
}

// Err is nil while the device works; after it is lost, an uncaptured error
// happened or the host was closed, an error wrapping gpu.ErrDeviceLost.
func (h *Host) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost
}

// Adapter describes the adapter and the device: its features and the
// limits it was requested with.
func (h *Host) Adapter() gpu.Adapter { return h.adapter }

// LiveBuffers is how many buffers NewBuffer made that are not destroyed
// (Read's staging buffer is the host's own and not counted).
func (h *Host) LiveBuffers() int { return len(h.live) }

// errClosed is Err after Close.
var errClosed = fmt.Errorf("webgpu: the host is closed: %w", gpu.ErrDeviceLost)

// Close destroys every live buffer and the device; later calls fail with
// an error wrapping gpu.ErrDeviceLost. Closing twice does nothing.
func (h *Host) Close() {
	if h.closed {
		return
	}
	h.closed = true
	h.setLost(errClosed)
	for b := range h.live {
		b.Destroy()
	}
	if h.staging != nil {
		h.staging.Destroy()
		h.staging = nil
	}
	h.destroyTiming()
	func() {
		var err error
		defer catchJS(&err, "destroying the device")
		h.device.Call("destroy")
	}()
	for _, f := range h.release {
		f()
	}
	h.release = nil
}

// usable is the error every call returns once the device stopped, and the
// misuse a Write recorded (once).
func (h *Host) usable() error {
	if err := h.Err(); err != nil {
		return err
	}
	if err := h.pending; err != nil {
		h.pending = nil
		return err
	}
	return nil
}

// scoped runs f inside WebGPU error scopes of filters ("validation",
// "out-of-memory"; pushed in this order) and returns the filter and message
// of an error the device reported in them (the innermost scope's first),
// or f's own error (a JavaScript exception f throws included: the scopes
// are popped whatever f does). A device lost meanwhile is Err's error;
// what names the work in errors.
func (h *Host) scoped(what string, f func() error, filters ...string) (filter, message string, err error) {
	for _, fl := range filters {
		h.device.Call("pushErrorScope", fl)
	}
	ferr := func() (err error) {
		defer catchJS(&err, what)
		return f()
	}()
	for i := len(filters) - 1; i >= 0; i-- {
		reported, perr := await(h.device.Call("popErrorScope"))
		switch {
		case perr != nil && err == nil:
			err = fmt.Errorf("webgpu: %s: popErrorScope: %v: %w", what, perr, gpu.ErrDeviceLost)
		case reported.Type() == js.TypeObject && filter == "":
			filter, message = filters[i], strings.TrimSpace(reported.Get("message").String())
		}
	}
	if lost := h.Err(); lost != nil {
		return "", "", lost
	}
	if ferr != nil {
		return "", "", ferr
	}
	return filter, message, err
}

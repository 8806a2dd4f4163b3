//go:build js

package webgpu

import (
	"fmt"
	"strings"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// kernel is a compute pipeline and its bind group 0's layout.
type kernel struct {
	host     *Host
	label    string
	pipeline js.Value
	layout   js.Value
}

// Label is the name the kernel was compiled with.
func (k *kernel) Label() string { return k.label }

// bindings is a bind group made for one kernel.
type bindings struct {
	kernel  *kernel
	group   js.Value
	buffers []*buffer // Submit refuses a group with a destroyed buffer, which the device would take as a lost device
}

// NewKernel compiles source's entry point into a compute pipeline with
// layout "auto", once per host: the same entry point of the same source
// is the pipeline compiled the first time (its label the first one's). A shader that does not compile is an error listing the
// compiler's messages with their lines and columns ("3:7: error: …"); a
// pipeline the device rejects (no such entry point, a workgroup over the
// limits) is an error with the device's message.
func (h *Host) NewKernel(label, source, entry string) (k gpu.Kernel, err error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	key := entry + "\x00" + source
	if k, ok := h.kernels[key]; ok {
		return k, nil
	}
	defer func() {
		if k, ok := k.(*kernel); ok && err == nil {
			if h.kernels == nil {
				h.kernels = map[string]*kernel{}
			}
			h.kernels[key] = k
		}
	}()
	defer catchJS(&err, fmt.Sprintf("kernel %q", label))
	var module js.Value
	var compileErr error
	filter, msg, err := h.scoped(fmt.Sprintf("kernel %q", label), func() error {
		desc := js.Global().Get("Object").New()
		desc.Set("label", label)
		desc.Set("code", source)
		module = h.device.Call("createShaderModule", desc)
		info, err := await(module.Call("getCompilationInfo"))
		if err != nil {
			return fmt.Errorf("webgpu: kernel %q: getCompilationInfo: %w", label, err)
		}
		compileErr = compileErrors(label, info)
		return nil
	}, "validation")
	switch {
	case err != nil:
		return nil, err
	case compileErr != nil:
		return nil, compileErr
	case filter != "":
		return nil, fmt.Errorf("webgpu: kernel %q: %s", label, msg)
	}

	desc := js.Global().Get("Object").New()
	desc.Set("label", label)
	desc.Set("layout", "auto")
	compute := js.Global().Get("Object").New()
	compute.Set("module", module)
	compute.Set("entryPoint", entry)
	desc.Set("compute", compute)
	var pipeline js.Value
	filter, msg, err = h.scoped(fmt.Sprintf("kernel %q", label), func() error {
		p, err := await(h.device.Call("createComputePipelineAsync", desc))
		if err != nil {
			return fmt.Errorf("webgpu: kernel %q, entry point %q: %w", label, entry, err)
		}
		pipeline = p
		return nil
	}, "validation")
	switch {
	case err != nil:
		return nil, err
	case filter != "":
		return nil, fmt.Errorf("webgpu: kernel %q, entry point %q: %s", label, entry, msg)
	}
	return &kernel{host: h, label: label, pipeline: pipeline, layout: pipeline.Call("getBindGroupLayout", 0)}, nil
}

// compileErrors is the error messages of a GPUCompilationInfo, one a line
// as "line:column: error: message", or nil where there are none (warnings
// and notes alone are not errors).
func compileErrors(label string, info js.Value) error {
	msgs := info.Get("messages")
	var b strings.Builder
	errs := 0
	for i := range msgs.Length() {
		m := msgs.Index(i)
		if m.Get("type").String() != "error" {
			continue
		}
		errs++
		fmt.Fprintf(&b, "\n\t%d:%d: error: %s", m.Get("lineNum").Int(), m.Get("linePos").Int(), m.Get("message").String())
	}
	if errs == 0 {
		return nil
	}
	return fmt.Errorf("webgpu: kernel %q does not compile:%s", label, b.String())
}

// NewBindings makes kernel k's bind group 0 from bindings, binding i the
// i-th (a Size of 0 binds to the buffer's end). A group the device rejects
// (a binding too large, of the wrong usage or alignment) is an error with
// its message.
func (h *Host) NewBindings(k gpu.Kernel, list ...gpu.Binding) (_ gpu.Bindings, err error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	kern, ok := k.(*kernel)
	if !ok || kern == nil || kern.host != h {
		return nil, fmt.Errorf("webgpu: NewBindings: %T is not a kernel of this host", k)
	}
	defer catchJS(&err, fmt.Sprintf("bindings of kernel %q", kern.label))
	entries := js.Global().Get("Array").New()
	var bufs []*buffer
	for i, b := range list {
		buf, err := h.own(b.Buffer, 0, fmt.Sprintf("NewBindings of kernel %q, binding %d", kern.label, i))
		if err != nil {
			return nil, err
		}
		size := b.Size
		if size == 0 {
			size = buf.size - b.Offset
		}
		if b.Offset < 0 || size <= 0 || b.Offset+size > buf.size {
			return nil, fmt.Errorf("webgpu: NewBindings of kernel %q, binding %d: bytes [%d, %d) are not within buffer %q of %d bytes",
				kern.label, i, b.Offset, b.Offset+size, buf.label, buf.size)
		}
		resource := js.Global().Get("Object").New()
		resource.Set("buffer", buf.v)
		resource.Set("offset", b.Offset)
		resource.Set("size", size)
		entry := js.Global().Get("Object").New()
		entry.Set("binding", i)
		entry.Set("resource", resource)
		entries.Call("push", entry)
		bufs = append(bufs, buf)
	}
	desc := js.Global().Get("Object").New()
	desc.Set("label", kern.label)
	desc.Set("layout", kern.layout)
	desc.Set("entries", entries)
	var group js.Value
	filter, msg, err := h.scoped(fmt.Sprintf("bindings of kernel %q", kern.label), func() error {
		group = h.device.Call("createBindGroup", desc)
		return nil
	}, "validation")
	switch {
	case err != nil:
		return nil, err
	case filter != "":
		return nil, fmt.Errorf("webgpu: bindings of kernel %q: %s", kern.label, msg)
	}
	return &bindings{kernel: kern, group: group, buffers: bufs}, nil
}

// Submit records dispatches into one compute pass of one command buffer
// and submits it. Dispatches are checked here (kernels and bindings of
// this host, each binding made for its kernel, no buffer destroyed,
// workgroup counts within the device's limit); an error the device finds
// later makes Err non-nil.
func (h *Host) Submit(dispatches []gpu.Dispatch) (err error) {
	if err := h.usable(); err != nil {
		return err
	}
	if err := h.checkDispatches(dispatches); err != nil {
		return err
	}
	defer catchJS(&err, "Submit")
	enc := h.device.Call("createCommandEncoder")
	pass := enc.Call("beginComputePass")
	for _, d := range dispatches {
		pass.Call("setPipeline", d.Kernel.(*kernel).pipeline)
		pass.Call("setBindGroup", 0, d.Bindings.(*bindings).group)
		pass.Call("dispatchWorkgroups", d.X, d.Y, d.Z)
	}
	pass.Call("end")
	h.queue.Call("submit", []any{enc.Call("finish")})
	return nil
}

// checkDispatches checks what Submit and SubmitTimed record: kernels and
// bindings of this host, each binding made for its kernel, no buffer
// destroyed, workgroup counts within the device's limit.
func (h *Host) checkDispatches(dispatches []gpu.Dispatch) error {
	limit := h.adapter.MaxComputeWorkgroupsPerDimension
	for i, d := range dispatches {
		kern, ok := d.Kernel.(*kernel)
		if !ok || kern == nil || kern.host != h {
			return fmt.Errorf("webgpu: Submit: dispatch %d: %T is not a kernel of this host", i, d.Kernel)
		}
		b, ok := d.Bindings.(*bindings)
		if !ok || b == nil || b.kernel != kern {
			return fmt.Errorf("webgpu: Submit: dispatch %d of kernel %q: its bindings were not made for it", i, kern.label)
		}
		for _, buf := range b.buffers {
			if buf.destroyed {
				return fmt.Errorf("webgpu: Submit: dispatch %d of kernel %q: buffer %q is destroyed", i, kern.label, buf.label)
			}
		}
		if d.X < 0 || d.Y < 0 || d.Z < 0 || d.X > limit || d.Y > limit || d.Z > limit {
			return fmt.Errorf("webgpu: Submit: dispatch %d of kernel %q: %d×%d×%d workgroups (at most %d a dimension)", i, kern.label, d.X, d.Y, d.Z, limit)
		}
	}
	return nil
}

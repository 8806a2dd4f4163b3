//go:build js

package webgpu

import (
	"encoding/binary"
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// maxTimed is the dispatches one timed command buffer holds: a query set
// holds at most 4096 timestamps, two a dispatch. SubmitTimed submits more
// in several, in order.
const maxTimed = 2048

// usageQueryResolve is GPUBufferUsage.QUERY_RESOLVE.
const usageQueryResolve gpu.Usage = 0x0200

// timing is what SubmitTimed keeps between calls: the query set and the
// buffers its timestamps are resolved into and read back from, made the
// first time and destroyed by Close.
type timing struct {
	set               js.Value
	resolve, readback *buffer
}

var _ gpu.Timer = (*Host)(nil)

// SubmitTimed submits dispatches as Submit does, checked the same way, but
// each in a compute pass of its own whose beginning and end the device
// writes into a timestamp query set (timestampWrites), resolved into a
// buffer and read back: it waits for the device. A device without
// timestamp-query is an error wrapping gpu.ErrUnsupported.
func (h *Host) SubmitTimed(dispatches []gpu.Dispatch) (_ []gpu.Span, err error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	if !h.adapter.TimestampQuery {
		return nil, fmt.Errorf("webgpu: SubmitTimed: the device has no timestamp-query: %w", gpu.ErrUnsupported)
	}
	if err := h.checkDispatches(dispatches); err != nil {
		return nil, err
	}
	spans := make([]gpu.Span, 0, len(dispatches))
	for start := 0; start < len(dispatches); start += maxTimed {
		part := dispatches[start:min(start+maxTimed, len(dispatches))]
		s, err := h.submitTimed(part)
		if err != nil {
			return nil, err
		}
		spans = append(spans, s...)
	}
	return spans, h.Err()
}

// submitTimed times at most maxTimed checked dispatches.
func (h *Host) submitTimed(dispatches []gpu.Dispatch) (_ []gpu.Span, err error) {
	defer catchJS(&err, "SubmitTimed")
	if err := h.timingBuffers(); err != nil {
		return nil, err
	}
	t := &h.timing
	n := 2 * len(dispatches) // timestamps
	enc := h.device.Call("createCommandEncoder")
	for i, d := range dispatches {
		writes := js.Global().Get("Object").New()
		writes.Set("querySet", t.set)
		writes.Set("beginningOfPassWriteIndex", 2*i)
		writes.Set("endOfPassWriteIndex", 2*i+1)
		desc := js.Global().Get("Object").New()
		desc.Set("timestampWrites", writes)
		pass := enc.Call("beginComputePass", desc)
		pass.Call("setPipeline", d.Kernel.(*kernel).pipeline)
		pass.Call("setBindGroup", 0, d.Bindings.(*bindings).group)
		pass.Call("dispatchWorkgroups", d.X, d.Y, d.Z)
		pass.Call("end")
	}
	enc.Call("resolveQuerySet", t.set, 0, n, t.resolve.v, 0)
	enc.Call("copyBufferToBuffer", t.resolve.v, 0, t.readback.v, 0, 8*n)
	h.queue.Call("submit", []any{enc.Call("finish")})
	mapRead := js.Global().Get("GPUMapMode").Get("READ")
	if _, err := await(t.readback.v.Call("mapAsync", mapRead, 0, 8*n)); err != nil {
		h.setLost(fmt.Errorf("webgpu: SubmitTimed: mapping the timestamps: %v: %w", err, gpu.ErrDeviceLost))
		return nil, h.Err()
	}
	raw := make([]byte, 8*n)
	js.CopyBytesToGo(raw, js.Global().Get("Uint8Array").New(t.readback.v.Call("getMappedRange", 0, 8*n)))
	t.readback.v.Call("unmap")
	spans := make([]gpu.Span, len(dispatches))
	for i := range spans {
		spans[i] = gpu.Span{Begin: binary.LittleEndian.Uint64(raw[16*i:]), End: binary.LittleEndian.Uint64(raw[16*i+8:])}
	}
	return spans, nil
}

// timingBuffers makes the query set and its buffers the first time.
func (h *Host) timingBuffers() error {
	t := &h.timing
	if t.readback != nil {
		return nil
	}
	const n = 2 * maxTimed
	desc := js.Global().Get("Object").New()
	desc.Set("label", "timestamps")
	desc.Set("type", "timestamp")
	desc.Set("count", n)
	filter, msg, err := h.scoped("the timestamp query set", func() error {
		t.set = h.device.Call("createQuerySet", desc)
		return nil
	}, "validation")
	if err == nil && filter != "" {
		err = fmt.Errorf("webgpu: the timestamp query set: %s", msg)
	}
	if err != nil {
		return err
	}
	if t.resolve, err = h.createBuffer("timestamps", 8*n, usageQueryResolve|gpu.UsageCopySrc); err != nil {
		return err
	}
	t.readback, err = h.createBuffer("timestamps read", 8*n, gpu.UsageMapRead|gpu.UsageCopyDst)
	return err
}

// destroyTiming frees what timingBuffers made.
func (h *Host) destroyTiming() {
	t := &h.timing
	for _, b := range []*buffer{t.resolve, t.readback} {
		if b != nil {
			b.Destroy()
		}
	}
	if t.set.Type() == js.TypeObject {
		var err error
		func() {
			defer catchJS(&err, "destroying the query set")
			t.set.Call("destroy")
		}()
	}
	h.timing = timing{}
}

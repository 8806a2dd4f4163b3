//go:build js

package webgpu

import (
	"fmt"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine/gpu"
)

// buffer is a GPUBuffer.
type buffer struct {
	host      *Host
	v         js.Value
	label     string
	size      int
	usage     gpu.Usage
	destroyed bool
}

// Size is the buffer's size in bytes.
func (b *buffer) Size() int { return b.size }

// Destroy frees the buffer at once (GPUBuffer.destroy); destroying it
// again does nothing.
func (b *buffer) Destroy() {
	if b.destroyed {
		return
	}
	b.destroyed = true
	delete(b.host.live, b)
	var err error
	defer catchJS(&err, "destroying a buffer")
	b.v.Call("destroy")
}

// NewBuffer makes a zero-filled buffer of size bytes (a multiple of 4) for
// usage. A size over the device's maxBufferSize, or memory the device
// cannot allocate (an out-of-memory error in the buffer's error scope), is
// an error wrapping gpu.ErrOutOfMemory; another error the device reports
// (an invalid usage) is an error naming the buffer.
func (h *Host) NewBuffer(label string, size int, usage gpu.Usage) (_ gpu.Buffer, err error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	if size <= 0 || size%4 != 0 {
		return nil, fmt.Errorf("webgpu: buffer %q: size must be a positive multiple of 4, got %d", label, size)
	}
	if size > h.adapter.MaxBufferSize {
		return nil, fmt.Errorf("webgpu: buffer %q: %d bytes is more than the device's maxBufferSize (%d): %w",
			label, size, h.adapter.MaxBufferSize, gpu.ErrOutOfMemory)
	}
	defer catchJS(&err, fmt.Sprintf("buffer %q", label))
	b, err := h.createBuffer(label, size, usage)
	if err != nil {
		return nil, err
	}
	h.live[b] = true
	return b, nil
}

// createBuffer makes a buffer inside out-of-memory and validation error
// scopes, and destroys it again where the device reported an error.
func (h *Host) createBuffer(label string, size int, usage gpu.Usage) (*buffer, error) {
	desc := js.Global().Get("Object").New()
	desc.Set("label", label)
	desc.Set("size", size)
	desc.Set("usage", int(usage))
	var v js.Value
	filter, msg, err := h.scoped(fmt.Sprintf("buffer %q", label), func() error {
		v = h.device.Call("createBuffer", desc)
		return nil
	}, "out-of-memory", "validation")
	if err == nil && filter != "" {
		err = fmt.Errorf("webgpu: buffer %q (%d bytes): %s", label, size, msg)
		if filter == "out-of-memory" {
			err = fmt.Errorf("%w: %w", err, gpu.ErrOutOfMemory)
		}
	}
	if err != nil {
		if v.Type() == js.TypeObject {
			v.Call("destroy")
		}
		return nil, err
	}
	return &buffer{host: h, v: v, label: label, size: size, usage: usage}, nil
}

// own is b as one of h's buffers, alive, with usage; or the error naming
// what is wrong.
func (h *Host) own(b gpu.Buffer, usage gpu.Usage, what string) (*buffer, error) {
	buf, ok := b.(*buffer)
	switch {
	case !ok || buf == nil:
		return nil, fmt.Errorf("webgpu: %s: %T is not a buffer of this package", what, b)
	case buf.host != h:
		return nil, fmt.Errorf("webgpu: %s: buffer %q belongs to another host", what, buf.label)
	case buf.destroyed:
		return nil, fmt.Errorf("webgpu: %s: buffer %q is destroyed", what, buf.label)
	case buf.usage&usage != usage:
		return nil, fmt.Errorf("webgpu: %s: buffer %q's usage %#x lacks %#x", what, buf.label, buf.usage, usage)
	}
	return buf, nil
}

// Write queues data (a multiple of 4 bytes) to be copied into b at offset
// (a multiple of 4) before the next submitted work runs. Misuse (a
// destroyed buffer, one without COPY_DST, bytes past its end) writes
// nothing, and the next call that can fail (Submit, Read, NewBuffer, …)
// returns the error.
func (h *Host) Write(b gpu.Buffer, offset int, data []byte) {
	if h.Err() != nil || len(data) == 0 {
		return
	}
	err := h.write(b, offset, data)
	if err != nil && h.pending == nil {
		h.pending = err
	}
}

func (h *Host) write(b gpu.Buffer, offset int, data []byte) (err error) {
	buf, err := h.own(b, gpu.UsageCopyDst, "Write")
	if err != nil {
		return err
	}
	if offset < 0 || offset%4 != 0 || len(data)%4 != 0 || offset+len(data) > buf.size {
		return fmt.Errorf("webgpu: Write: %d bytes at offset %d into buffer %q of %d bytes (offset and length must be multiples of 4, within the buffer)",
			len(data), offset, buf.label, buf.size)
	}
	defer catchJS(&err, "Write")
	if h.upload.IsUndefined() || h.upload.Length() < len(data) {
		h.upload = js.Global().Get("Uint8Array").New(max(len(data), 2*h.uploadLen()))
	}
	js.CopyBytesToJS(h.upload, data)
	h.queue.Call("writeBuffer", buf.v, offset, h.upload, 0, len(data))
	return nil
}

func (h *Host) uploadLen() int {
	if h.upload.IsUndefined() {
		return 0
	}
	return h.upload.Length()
}

// Read copies len(dst) bytes of b from offset (a multiple of 4) into dst
// once all submitted work is done: a copy into a MAP_READ staging buffer
// (the host's, kept and grown as reads need), mapped and read. A device
// lost before or meanwhile is an error wrapping gpu.ErrDeviceLost.
func (h *Host) Read(b gpu.Buffer, offset int, dst []byte) (err error) {
	if err := h.usable(); err != nil {
		return err
	}
	buf, err := h.own(b, gpu.UsageCopySrc, "Read")
	if err != nil {
		return err
	}
	n := (len(dst) + 3) &^ 3 // copies move whole words
	if offset < 0 || offset%4 != 0 || offset+n > buf.size {
		return fmt.Errorf("webgpu: Read: %d bytes at offset %d of buffer %q of %d bytes (the offset must be a multiple of 4, the words read within the buffer)",
			len(dst), offset, buf.label, buf.size)
	}
	if n == 0 {
		return nil
	}
	defer catchJS(&err, "Read")
	if h.staging == nil || h.staging.size < n {
		if h.staging != nil {
			h.staging.Destroy()
			h.staging = nil
		}
		size := 256
		for size < n {
			size *= 2
		}
		staging, err := h.createBuffer("staging", min(size, max(n, h.adapter.MaxBufferSize)), gpu.UsageMapRead|gpu.UsageCopyDst)
		if err != nil {
			return err
		}
		h.staging = staging
	}
	enc := h.device.Call("createCommandEncoder")
	enc.Call("copyBufferToBuffer", buf.v, offset, h.staging.v, 0, n)
	h.queue.Call("submit", []any{enc.Call("finish")})
	mapRead := js.Global().Get("GPUMapMode").Get("READ")
	if _, err := await(h.staging.v.Call("mapAsync", mapRead, 0, n)); err != nil {
		// The staging buffer is valid and not mapped: a failed map means
		// the device is gone, whether or not its lost Promise has settled.
		h.setLost(fmt.Errorf("webgpu: Read: mapping the staging buffer: %v: %w", err, gpu.ErrDeviceLost))
		return h.Err()
	}
	view := js.Global().Get("Uint8Array").New(h.staging.v.Call("getMappedRange", 0, n), 0, len(dst))
	js.CopyBytesToGo(dst, view)
	h.staging.v.Call("unmap")
	return h.Err()
}

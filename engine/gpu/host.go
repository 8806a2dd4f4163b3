package gpu

import "errors"

// Host is the WebGPU device a backend computes with: the few calls of the
// WebGPU API the kernels need, implemented by the browser host (package
// webgpu, over navigator.gpu through syscall/js). Everything here is
// recorded or queued; only Read waits for the device. A Host is used by one
// goroutine at a time.
type Host interface {
	// Adapter describes the adapter and device: what the kernels may use.
	Adapter() Adapter
	// NewBuffer makes a buffer of size bytes (a multiple of 4) for usage,
	// zero-filled. It fails, with an error wrapping ErrOutOfMemory, where the
	// device cannot allocate it.
	NewBuffer(label string, size int, usage Usage) (Buffer, error)
	// Write queues data (a multiple of 4 bytes) to be copied into b at
	// offset before the next submitted work runs.
	Write(b Buffer, offset int, data []byte)
	// NewKernel compiles the WGSL compute shader source, entry point entry,
	// into a pipeline whose bind group 0 holds bindings 0, 1, … in the
	// order the shader declares them. A shader the device rejects is an
	// error carrying the compiler's messages.
	NewKernel(label, source, entry string) (Kernel, error)
	// NewBindings makes the bind group 0 of kernel k from bindings, in the
	// order of their binding numbers (0, 1, …).
	NewBindings(k Kernel, bindings ...Binding) (Bindings, error)
	// Submit records dispatches, in order, into one command buffer (one
	// compute pass: each dispatch sees the writes of those before it) and
	// submits it.
	Submit(dispatches []Dispatch) error
	// Read copies size bytes of b from offset into dst once all submitted
	// work is done, waiting for it. A lost device is an error wrapping
	// ErrDeviceLost.
	Read(b Buffer, offset int, dst []byte) error
	// Err is nil while the device works, and after the device is lost or
	// an uncaptured error happened, an error wrapping ErrDeviceLost.
	Err() error
}

// Adapter is what a host's adapter and device offer.
type Adapter struct {
	Vendor, Architecture, Device, Description string // GPUAdapterInfo
	// Fallback is GPUAdapterInfo.isFallbackAdapter: a software
	// implementation (SwiftShader), which device 'auto' skips.
	Fallback bool
	// Subgroups says the device was requested with the subgroups feature
	// (WGSL `enable subgroups;`); SubgroupMin/Max are the adapter's
	// subgroup sizes (SwiftShader: 4; GPUs: 8–128).
	Subgroups                bool
	SubgroupMin, SubgroupMax int
	// F16 says the device has shader-f16 (WGSL `enable f16;`).
	F16 bool
	// TimestampQuery says the device has timestamp-query.
	TimestampQuery bool
	// The limits the device was requested with.
	MaxBufferSize, MaxStorageBufferBindingSize int
	MaxComputeWorkgroupStorageSize             int
	MaxComputeInvocationsPerWorkgroup          int
	MaxComputeWorkgroupsPerDimension           int
	MaxStorageBuffersPerShaderStage            int
}

// Usage is how a buffer is used (GPUBufferUsage's flags).
type Usage uint32

// The buffer usages kernels need.
const (
	UsageMapRead  Usage = 0x0001
	UsageCopySrc  Usage = 0x0004
	UsageCopyDst  Usage = 0x0008
	UsageUniform  Usage = 0x0040
	UsageStorage  Usage = 0x0080
	UsageReadback       = UsageStorage | UsageCopySrc | UsageCopyDst // what Read and Write need of a storage buffer
)

// Buffer is a GPUBuffer. Destroy frees it at once (GPUBuffer.destroy).
type Buffer interface {
	Size() int
	Destroy()
}

// Kernel is a compiled compute pipeline.
type Kernel interface {
	Label() string
}

// Bindings is a bind group made for one kernel.
type Bindings interface{}

// Binding is one buffer bound to a kernel: the bytes [Offset,
// Offset+Size) of Buffer (Size 0: to its end).
type Binding struct {
	Buffer       Buffer
	Offset, Size int
}

// Dispatch is one dispatchWorkgroups(X, Y, Z) of a kernel with its bindings.
type Dispatch struct {
	Kernel   Kernel
	Bindings Bindings
	X, Y, Z  int
}

// Errors a host's calls wrap.
var (
	// ErrOutOfMemory: the device could not allocate a buffer.
	ErrOutOfMemory = errors.New("gpu: out of device memory")
	// ErrDeviceLost: the device was lost (GPUDevice.lost, destroy) or
	// reported an uncaptured error; nothing more runs on it.
	ErrDeviceLost = errors.New("gpu: device lost")
	// ErrUnsupported: the adapter lacks something the model needs.
	ErrUnsupported = errors.New("gpu: unsupported")
)

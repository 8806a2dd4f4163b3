package jsbridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"syscall/js"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/shard"
	"github.com/wasmlm/wasmlm/engine/tensor"
	"github.com/wasmlm/wasmlm/policy"
)

// inspectFields are the keys of inspect's options.
var inspectFields = []string{"contextLength", "kvType", "workers", "deviceMemory", "device"}

// parseInspect: inspect(prefixes, sizes, {contextLength, kvType, workers,
// deviceMemory, device}) describes the model the files' headers describe
// and what loading it would take (memory: see inspection), or {more: i}.
// With device 'auto' or 'webgpu' it also says whether the worker's WebGPU
// adapter would take the model (gpuVerdict), opening it; device 'webgpu'
// rejects with device_unsupported when there is none to take it.
func (b *Binding) parseInspect(args []js.Value) (work, error) {
	o, err := b.readFields(arg(args, 2), "options", inspectFields)
	if err != nil {
		return nil, err
	}
	ctxLen, err := o.integer("contextLength", 0, 0, maxInt32, ">= 0 (0: the model's, at most 4096)")
	if err != nil {
		return nil, err
	}
	workers, err := o.integer("workers", 0, 0, maxWorkersSearch, fmt.Sprintf("in 0..%d (0: as few as fit)", maxWorkersSearch))
	if err != nil {
		return nil, err
	}
	kvType, err := o.kvType()
	if err != nil {
		return nil, err
	}
	_, probe := o.value("device")
	mode, err := o.device()
	if err != nil {
		return nil, err
	}
	device := 0.0
	if v, ok := o.value("deviceMemory"); ok {
		if typeOf(v) != js.TypeNumber || !(v.Float() > 0) {
			return nil, invalid("deviceMemory", "must be navigator.deviceMemory (GiB, > 0), got %s", b.describe(v))
		}
		device = v.Float()
	}
	return func() (any, error) {
		f, whole, _, more, err := b.headers(args)
		if err != nil || more >= 0 {
			return map[string]any{"more": more}, err
		}
		h, err := engine.ReadHeader(f)
		if err != nil {
			return nil, err
		}
		out, err := inspection(f, h, int64(whole.Size), arg(args, 1).Length(), ctxLen, kvType, workers, device)
		if err != nil || !probe || mode == deviceCPU {
			return out, err
		}
		return out, b.gpuVerdict(out, mode, h.Config(), deviceTypes(f))
	}, nil
}

// gpuVerdict adds to an inspection whether the worker's WebGPU adapter
// would take the model (of config c, whose device reads tensors of types)
// under mode,
// before its weights are read: device 'webgpu' and adapter ({vendor,
// architecture, description, fallback}), or device 'cpu' and deviceReason
// (under deviceWebGPU, an error wrapping ErrDeviceUnsupported instead).
// From the header it knows the adapter and what the GPU path runs
// (gpuRunsHeader); the rest (each matrix against the limits, the kernels)
// only the load finds out.
func (b *Binding) gpuVerdict(out map[string]any, mode deviceMode, c engine.Config, types []tensor.Type) error {
	h, err := b.gpuHost()
	problem := adapterProblem(mode, h, err)
	if problem == "" {
		if err := b.gpu.runsHeader(c, types); err != nil {
			problem = deviceProblem(err)
		}
	}
	if problem != "" {
		if mode == deviceWebGPU {
			return fmt.Errorf("%w: %s", ErrDeviceUnsupported, problem)
		}
		cpuBecause("%s", problem).set(out)
		return nil
	}
	a := h.Adapter()
	placement{adapter: &a}.set(out)
	return nil
}

// deviceTypes are the storage types of the tensors of f a device reads:
// all but the token embedding, which is looked up on the CPU unless the
// output shares it.
func deviceTypes(f *gguf.File) []tensor.Type {
	_, ownOutput := f.Tensor("output.weight")
	var types []tensor.Type
	for _, t := range f.Tensors() {
		if !(ownOutput && t.Name == "token_embd.weight") && !slices.Contains(types, t.Type) {
			types = append(types, t.Type)
		}
	}
	return types
}

// inspection is the header's engine.Info in camelCase plus chatTemplate
// (the recognised template's name, or null), chatTemplateSource (the
// file's Jinja source, or ""), sessionContextLength, kvType
// (the one a load would use), parts (files) and memory: {weights, kvCache,
// scratch, total} of the model whole, and perWorker (the same, for the
// largest shard) across workers (the count asked, or the fewest that fit),
// gpu (the bytes of the GPU's buffers a load on it would take: gpuMemory),
// workersNeeded (the fewest that fit, or null when no split fits), fits,
// and limits: {worker, device} in bytes (device null when unknown).
func inspection(f *gguf.File, h *engine.Header, size int64, parts, ctxLen int, kvType engine.KVType, workers int, deviceGiB float64) (map[string]any, error) {
	c := h.Config()
	info := h.Info(int(size))
	positions, err := h.SessionContextLength(ctxLen) // beyond the trained context too, as a load
	if err != nil {
		return nil, err
	}
	kvType = kvType.Resolve(info.Parameters)
	whole := engine.EstimateMemory(c, size, positions, kvType)
	perWorker := func(n int) (engine.Memory, error) {
		if n <= 1 {
			return whole, nil
		}
		largest := int64(0)
		for i := range n {
			w, err := shard.PartBytes(f, i, n)
			if err != nil {
				return engine.Memory{}, err
			}
			largest = max(largest, w)
		}
		m := engine.EstimateMemory(c, largest, positions, kvType)
		kvHeads := (c.KVHeads + n - 1) / n // the later shards get one more
		m.KVCache = m.KVCache * int64(kvHeads) / int64(c.KVHeads)
		m.Total = m.Weights + m.KVCache + m.RecurrentState + m.Scratch
		return m, nil
	}
	device := int64(deviceGiB * (1 << 30))
	// Chromium reports at most 8 (GiB): more memory than that is not a limit it can tell.
	if deviceGiB >= 8 {
		device = 0
	}
	fits := func(m engine.Memory, n int) bool {
		return m.Total <= workerLimit && m.Weights <= maxModelBytes && (device == 0 || m.Total*int64(n) <= device)
	}
	needed := 0
	for n := 1; n <= min(c.KVHeads, maxWorkersSearch); n++ {
		m, err := perWorker(n)
		if err != nil {
			break // a model that does not split n ways
		}
		if fits(m, n) {
			needed = n
			break
		}
	}
	n := workers
	if n == 0 {
		n = max(needed, 1)
	}
	if n > 1 && n > c.KVHeads {
		return nil, invalid("workers", "must be at most %d: this model splits at most %d ways (one per key/value head), got %d", c.KVHeads, c.KVHeads, n)
	}
	per, err := perWorker(n)
	if err != nil {
		return nil, err
	}
	out, err := camelInfo(info)
	if err != nil {
		return nil, err
	}
	out["chatTemplate"] = nil
	if t, err := policy.TemplateOf(h.ChatTemplate()); err == nil {
		out["chatTemplate"] = t.Name()
	}
	out["chatTemplateSource"] = h.ChatTemplate()
	out["sessionContextLength"] = positions
	out["kvType"] = kvType.String()
	out["parts"] = parts
	out["simd"] = tensor.SIMD()
	limits := map[string]any{"worker": int64(workerLimit), "device": nil}
	if device > 0 {
		limits["device"] = device
	}
	var neededValue any
	if needed > 0 {
		neededValue = needed
	}
	out["memory"] = map[string]any{
		"weights": whole.Weights, "kvCache": whole.KVCache, "recurrentState": whole.RecurrentState, "scratch": whole.Scratch, "total": whole.Total,
		"workers": n, "perWorker": map[string]any{"weights": per.Weights, "kvCache": per.KVCache, "scratch": per.Scratch, "total": per.Total},
		"workersNeeded": neededValue, "fits": fits(per, n), "limits": limits,
		"gpu": gpuMemory(whole),
	}
	return out, nil
}

// camelInfo is info with its JSON names in camelCase, the layers' recipes
// too (the GGUF metadata keys inside are left as they are).
func camelInfo(info engine.Info) (map[string]any, error) {
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	out := make(map[string]any, len(fields)+8)
	for k, v := range fields {
		if k == "layers" || k == "ssm" {
			v = camelKeys(v)
		}
		out[camelCase(k)] = v
	}
	return out, nil
}

// camelKeys is v, a value decoded from JSON, with the keys of every object
// in it in camelCase: the layers' recipes, the recurrent layers' shape.
func camelKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[camelCase(k)] = camelKeys(x)
		}
		return out
	case []any:
		for i, x := range v {
			v[i] = camelKeys(x)
		}
	}
	return v
}

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
)

// ParamSlot is the bytes of one kernel's parameters in a Pass's uniform
// arena: a slot is reserved when an operation is bound (once per session)
// and rewritten each time the operation is recorded.
const ParamSlot = 256 // minUniformBufferOffsetAlignment's default

// Pass records the dispatches of one submission and the parameters of
// their kernels. Parameters live in one uniform buffer, the arena, each
// bound operation owning a ParamSlot-byte slot of it; Submit writes the
// arena once and submits every dispatch in one command buffer.
type Pass struct {
	host       Host
	arena      Buffer
	bytes      []byte // the arena's contents, as Submit writes them
	used       int    // bytes of the arena reserved
	dispatches []Dispatch
}

// NewPass makes a pass with room for slots operations' parameters.
func NewPass(h Host, slots int) (*Pass, error) {
	b, err := h.NewBuffer("params", slots*ParamSlot, UsageUniform|UsageCopyDst)
	if err != nil {
		return nil, err
	}
	return &Pass{host: h, arena: b, bytes: make([]byte, slots*ParamSlot)}, nil
}

// Host is the host the pass submits to.
func (p *Pass) Host() Host { return p.host }

// Params is one operation's slot in a pass's arena.
type Params struct {
	pass *Pass
	off  int
}

// Reserve reserves the next slot of the arena.
func (p *Pass) Reserve() (Params, error) {
	if p.used+ParamSlot > len(p.bytes) {
		return Params{}, fmt.Errorf("gpu: the pass's %d parameter slots are all reserved", len(p.bytes)/ParamSlot)
	}
	q := Params{p, p.used}
	p.used += ParamSlot
	return q, nil
}

// Binding is the slot as a kernel binds it (a uniform of at most
// ParamSlot bytes).
func (q Params) Binding() Binding {
	return Binding{Buffer: q.pass.arena, Offset: q.off, Size: ParamSlot}
}

// SetU32 sets the i-th 32-bit word of the slot to v.
func (q Params) SetU32(i int, v uint32) {
	binary.LittleEndian.PutUint32(q.pass.bytes[q.off+4*i:], v)
}

// SetF32 sets the i-th 32-bit word of the slot to v.
func (q Params) SetF32(i int, v float32) { q.SetU32(i, math.Float32bits(v)) }

// Dispatch records a dispatch of k with bindings over x×y×z workgroups.
func (p *Pass) Dispatch(k Kernel, b Bindings, x, y, z int) {
	p.dispatches = append(p.dispatches, Dispatch{Kernel: k, Bindings: b, X: x, Y: y, Z: z})
}

// Dispatches is how many dispatches are recorded and not yet submitted.
func (p *Pass) Dispatches() int { return len(p.dispatches) }

// Submit writes the parameters and submits the recorded dispatches in one
// command buffer; the pass is then empty, its slots still reserved.
func (p *Pass) Submit() error {
	if len(p.dispatches) == 0 {
		return p.host.Err()
	}
	p.host.Write(p.arena, 0, p.bytes[:p.used])
	err := p.host.Submit(p.dispatches)
	clear(p.dispatches)
	p.dispatches = p.dispatches[:0]
	return err
}

// Destroy frees the arena.
func (p *Pass) Destroy() { p.arena.Destroy() }

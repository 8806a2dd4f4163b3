package gpu

import (
	"fmt"
	"time"
)

// Timer is a Host that can time each dispatch of a submission on the
// device (the timestamp-query feature): a benchmark's way to see where a
// token's time goes. Timing puts every dispatch in a compute pass of its
// own, whose beginning and end the device stamps, and waits for the
// submission, so it is a separate call: Submit, the forward pass's, is
// unchanged.
type Timer interface {
	Host
	// SubmitTimed is Submit with each dispatch in a compute pass of its
	// own, timed; it waits for the device and returns when each dispatch
	// ran, spans[i] dispatch i's. A device without timestamp-query is an
	// error wrapping ErrUnsupported.
	SubmitTimed(dispatches []Dispatch) (spans []Span, err error)
}

// Span is when the device ran one dispatch: the timestamps, in
// nanoseconds of the device's clock, at which its pass began and ended.
// Browsers may round them (Chromium to 100 µs unless started with
// --enable-webgpu-developer-features).
type Span struct {
	Begin, End uint64
}

// Duration is the span's length (0 where the device's clock went back).
func (s Span) Duration() time.Duration {
	if s.End < s.Begin {
		return 0
	}
	return time.Duration(s.End - s.Begin)
}

// Profile is a Host that counts what a workload submits to the host it
// wraps — submissions, and dispatches by kernel — and, when made to time,
// submits through the host's Timer to add up each kernel's time on the
// device (SetTimed). A benchmark makes its device over a Profile; the forward pass
// runs unchanged on top.
type Profile struct {
	Host
	timer Timer // nil: counting only
	// Submissions and Dispatches are counted since the last Reset.
	Submissions, Dispatches int
	// Kernels are the dispatches of each kernel (by its label) since the
	// last Reset, and their time on the device when timing.
	Kernels map[string]KernelStat
}

// KernelStat is what a Profile saw of one kernel.
type KernelStat struct {
	Dispatches int
	Time       time.Duration // 0 when not timing
}

var _ Host = (*Profile)(nil)

// NewProfile wraps h, counting; SetTimed makes it time too.
func NewProfile(h Host) *Profile {
	return &Profile{Host: h, Kernels: map[string]KernelStat{}}
}

// SetTimed makes the profile time every submission (on) or only count
// them. Timing needs a Timer on a device with timestamp-query, else the
// error wraps ErrUnsupported.
func (p *Profile) SetTimed(on bool) error {
	if !on {
		p.timer = nil
		return nil
	}
	t, ok := p.Host.(Timer)
	if !ok {
		return fmt.Errorf("%w: a %T cannot time its dispatches", ErrUnsupported, p.Host)
	}
	if !p.Host.Adapter().TimestampQuery {
		return fmt.Errorf("%w: the device has no timestamp-query", ErrUnsupported)
	}
	p.timer = t
	return nil
}

// Timed says whether the profile times its submissions.
func (p *Profile) Timed() bool { return p.timer != nil }

// Submit counts the dispatches and submits them, timed when the profile
// times.
func (p *Profile) Submit(dispatches []Dispatch) error {
	p.Submissions++
	p.Dispatches += len(dispatches)
	var spans []Span
	if p.timer != nil {
		var err error
		if spans, err = p.timer.SubmitTimed(dispatches); err != nil {
			return err
		}
	} else if err := p.Host.Submit(dispatches); err != nil {
		return err
	}
	for i, d := range dispatches {
		k := p.Kernels[d.Kernel.Label()]
		k.Dispatches++
		if spans != nil {
			k.Time += spans[i].Duration()
		}
		p.Kernels[d.Kernel.Label()] = k
	}
	return nil
}

// Reset forgets what was counted.
func (p *Profile) Reset() {
	p.Submissions, p.Dispatches = 0, 0
	clear(p.Kernels)
}

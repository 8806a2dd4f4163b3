package gpu

// Library compiles each kernel once per host: a session's operations ask
// it for their pipelines by name, and the same WGSL source is never
// compiled twice.
type Library struct {
	host    Host
	kernels map[string]Kernel
}

// NewLibrary makes an empty library for h.
func NewLibrary(h Host) *Library {
	return &Library{host: h, kernels: map[string]Kernel{}}
}

// Host is the library's host.
func (l *Library) Host() Host { return l.host }

// Kernel returns the pipeline of source's entry point, compiling it the
// first time; name identifies the (source, entry) pair and labels it.
func (l *Library) Kernel(name, source, entry string) (Kernel, error) {
	if k, ok := l.kernels[name]; ok {
		return k, nil
	}
	k, err := l.host.NewKernel(name, source, entry)
	if err != nil {
		return nil, err
	}
	l.kernels[name] = k
	return k, nil
}

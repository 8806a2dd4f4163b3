package engine

// hostMemory is the most memory a session and its model may take, and what
// bounds it: a WebAssembly memory's 4 GiB of addresses.
func hostMemory() (int64, string) {
	return 4 << 30, "the 4096 MiB a WebAssembly memory can address"
}

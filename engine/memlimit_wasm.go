package engine

// memoryLimit is the most memory a session and its model may take: a
// WebAssembly module addresses 4 GiB.
const memoryLimit = 4 << 30

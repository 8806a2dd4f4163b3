package engine

// refusedArchitectures are families llama.cpp runs and the engine does not
// yet, each with what it lacks: a file of one is refused with that reason
// rather than as an unknown architecture.
var refusedArchitectures = map[string]string{
	"gemma3n": "gemma3n (Gemma 3n) is not supported yet: its AltUp streams (altup_*), LAuReL layers (laurel_*) and activation sparsity are steps the engine does not have",
}

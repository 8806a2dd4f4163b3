package gguf_test

import (
	"encoding/json"
	"fmt"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/engine/tensor"
)

// Build a tiny model file, then read it back.
func Example() {
	b := gguf.NewBuilder()
	b.Set("general.architecture", gguf.ValueOf("llama"))
	b.Set("llama.context_length", gguf.ValueOf(uint32(512)))
	b.Set("tokenizer.ggml.tokens", gguf.ArrayOf([]string{"<unk>", "<s>", "</s>", "a", "b"}))
	b.AddTensor("output_norm.weight", tensor.F32, []uint64{4}, make([]byte, 4*4))
	data, err := b.Bytes()
	if err != nil {
		fmt.Println(err)
		return
	}

	f, err := gguf.Parse(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	arch, err := f.String("general.architecture")
	if err != nil {
		fmt.Println(err)
		return
	}
	contextLength, err := f.Uint32(arch + ".context_length")
	if err != nil {
		fmt.Println(err)
		return
	}
	heads, err := f.Uint32Or(arch+".attention.head_count", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(arch, contextLength, heads)
	_, err = f.Float32("llama.context_length")
	fmt.Println(err)
	for _, t := range f.Tensors() {
		fmt.Println(t.Name, t.Type, t.Dims, len(t.Data))
	}
	summary, err := json.Marshal(f.Summary(2))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(summary))
	// Output:
	// llama 512 1
	// gguf: wrong value type: "llama.context_length" is uint32 512, want float32
	// output_norm.weight F32 [4] 16
	// {"general.architecture":"llama","llama.context_length":512,"tokenizer.ggml.tokens":{"head":["\u003cunk\u003e","\u003cs\u003e"],"len":5,"type":"string"}}
}

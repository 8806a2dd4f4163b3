package engine_test

import (
	"context"
	"fmt"

	"github.com/wasmlm/wasmlm/engine"
	"github.com/wasmlm/wasmlm/models"
)

// Embedding wasmlm in a Go program: load a model from its bytes (here the
// embedded default, stories260K; a GGUF file read with os.ReadFile works
// the same), open a session, and generate. Greedy decoding (the zero
// options' temperature) writes llama2.c's own continuation, token for token.
func Example() {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	session, err := model.NewSession(engine.SessionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := session.Generate(context.Background(), "Once upon a time", engine.GenerateOptions{MaxTokens: 16},
		func(t engine.Token) error {
			fmt.Print(t.Text) // each token's text as soon as it is sampled
			return nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("\n%d tokens, finish reason %q\n", len(res.Tokens), res.FinishReason)
	// Output:
	// , there was a little girl named Lily. She loved to play
	// 16 tokens, finish reason "length"
}

// Options out of range are an *engine.OptionError that names the option,
// which each host shows in its own spelling.
func ExampleOptionError() {
	opts := engine.DefaultGenerateOptions()
	opts.Sampling.TopP = 1.5
	err := opts.Validate(512)
	fmt.Println(err)
	fmt.Println(engine.CodeOf(err))
	// Output:
	// engine: invalid option: top_p must be in [0, 1] (0 or 1 = off), got 1.5
	// invalid_argument
}

// A session's KV cache holds its keys and values in F16 when asked (half
// the memory); KVAuto, the zero value, chooses F16 for models of more than
// 100M parameters only, so the small default model keeps F32 unless asked.
func ExampleSessionOptions_kvType() {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := model.Config()
	for _, kv := range []engine.KVType{engine.KVAuto, engine.KVF16} {
		session, err := model.NewSession(engine.SessionOptions{KVType: kv})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s, %d bytes\n", kv, session.KVType(), c.KVCacheBytes(session.ContextLength(), session.KVType()))
	}
	// Output:
	// auto: f32, 655360 bytes
	// f16: f16, 327680 bytes
}

// Embedding texts from Go: every model embeds (an embedding model as its
// file's pooling_type says; the default model, a generative one, by the
// mean of its final states), the vectors of unit length, so a dot product
// is their cosine similarity.
func ExampleSession_Embed() {
	model, err := engine.Load(models.Default(), engine.LoadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	session, err := model.NewSession(engine.SessionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	embs, err := session.Embed(context.Background(), []string{"The cat sat on the mat.", "A kitten slept on the rug.", "Once upon a time"}, engine.EmbedOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	fmt.Println(len(embs), "vectors of", len(embs[0].Vector), "values;", embs[0].Tokens, "tokens in the first")
	fmt.Println("the cat nearer the kitten than the story:", dot(embs[0].Vector, embs[1].Vector) > dot(embs[0].Vector, embs[2].Vector))
	// Output:
	// 3 vectors of 64 values; 11 tokens in the first
	// the cat nearer the kitten than the story: true
}

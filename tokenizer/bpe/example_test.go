package bpe_test

import (
	"fmt"

	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/bpe"
)

// A byte-level BPE with a tiny vocabulary: the pre-tokenizer splits "hello
// hello" into "hello" and " hello" (spelled "Ġhello" in GPT-2's byte
// alphabet), and the merges, applied by rank, build each word.
func ExampleNew() {
	tok, err := bpe.New(bpe.Config{
		Tokens:       []string{"h", "e", "l", "o", "Ġ", "he", "ll", "hell", "hello", "Ġhello"},
		Merges:       []string{"h e", "l l", "he ll", "hell o", "Ġ hello"},
		PreTokenizer: "gpt-2",
		Special:      tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := tok.Encode("hello hello", tokenizer.EncodeOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ids)
	text, err := tokenizer.Decode(tok, ids)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", text)
	// Output:
	// [8 9]
	// "hello hello"
}

package tokenizer_test

import (
	"fmt"
	"os"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// Encode a sentence with the stories260K vocabulary and decode it again.
// The ids are those llama2.c's run.c produces (internal/golden's runc_tokenizer.json).
func Example() {
	data, err := os.ReadFile("testdata/tok512.bin")
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := tokenizer.LoadLlama2C(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := tok.Encode("Once upon a time", tokenizer.EncodeOptions{AddSpecial: true})
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
	// [1 403 407 261 378]
	// "Once upon a time"
}

// A character split over byte-fallback tokens comes out of the stream
// decoder whole, with its last byte.
func ExampleStreamDecoder() {
	data, err := os.ReadFile("testdata/tok512.bin")
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := tokenizer.LoadLlama2C(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	d := tokenizer.NewStreamDecoder(tok)
	for _, b := range []byte("€!") {
		fmt.Printf("%q\n", d.Add(int(b)+3)) // tok512's byte token for b is b+3
	}
	fmt.Printf("%q\n", d.Flush())
	// Output:
	// ""
	// ""
	// "€"
	// "!"
	// ""
}

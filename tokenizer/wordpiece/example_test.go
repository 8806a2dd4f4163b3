package wordpiece_test

import (
	"fmt"

	"github.com/wasmlm/wasmlm/tokenizer"
	"github.com/wasmlm/wasmlm/tokenizer/wordpiece"
)

// A WordPiece vocabulary spelled as GGUF files spell it: pieces that start
// a word after "▁", the others bare. "Unaffable!" is lower-cased, cut into
// the words "unaffable" and "!", and each word into its longest pieces;
// AddSpecial puts [CLS] before and [SEP] after.
func ExampleNew() {
	tok, err := wordpiece.New(wordpiece.Config{
		Tokens:    []string{"[UNK]", "[CLS]", "[SEP]", "▁un", "aff", "able", "▁!"},
		Types:     []tokenizer.TokenType{3, 3, 3, 1, 1, 1, 1},
		Special:   tokenizer.Special{BOS: 1, EOS: -1, EOT: -1, UNK: 0, PAD: -1, SEP: 2, AddBOS: true, AddSEP: true},
		Lowercase: true, StripAccents: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := tok.Encode("Unaffable!", tokenizer.EncodeOptions{AddSpecial: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ids)
	text, err := tok.Detokenize(ids)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%q\n", text)
	// Output:
	// [1 3 4 5 6 2]
	// " unaffable!"
}

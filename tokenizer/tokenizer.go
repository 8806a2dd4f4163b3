// Package tokenizer turns text into token ids and back.
//
// It holds the SentencePiece-style tokenizer of llama2.c checkpoints and
// GGUF "llama" vocabularies; the byte-level BPE of GPT-2-style vocabularies
// is in tokenizer/bpe. Every tokenizer satisfies [Tokenizer]; decoding,
// including the streaming decoder that never splits a UTF-8 character, is
// written once over that interface.
//
// The package depends on nothing else in wasmlm: constructors take bytes or
// plain slices, so the engine (which reads model files) builds tokenizers
// without this package knowing any file format but its own.
package tokenizer

// Tokenizer encodes text to token ids and renders ids back to bytes.
// Implementations are immutable after construction and safe for concurrent use.
type Tokenizer interface {
	// Encode splits text into token ids. Text must be valid UTF-8
	// (ErrInvalidUTF8 otherwise).
	Encode(text string, opts EncodeOptions) ([]int, error)

	// AppendPiece appends to dst the bytes that token id contributes to
	// decoded text and returns the extended slice. prev is the token decoded
	// just before id, or -1 at the start of a text: SentencePiece drops the
	// leading space of the first piece after BOS. Control tokens (BOS, EOS,
	// ...) contribute nothing. An id outside [0, VocabSize()) contributes
	// nothing; callers that take ids from outside validate them first
	// (see Decode).
	AppendPiece(dst []byte, prev, id int) []byte

	// VocabSize is the number of token ids.
	VocabSize() int

	// Special reports the special token ids and the vocabulary's own
	// preferences for adding them.
	Special() Special

	// TokenText is the vocabulary's raw text for id ("" when out of range),
	// for display and debugging; it is not what decoding produces.
	TokenText(id int) string
}

// EncodeOptions controls Encode. The zero value tokenizes the text alone,
// as llama.cpp does with add_special=false, parse_special=false.
type EncodeOptions struct {
	// AddSpecial adds BOS and/or EOS as the vocabulary asks
	// (Special.AddBOS, Special.AddEOS); WordPiece adds BOS and SEP.
	AddSpecial bool
	// ParseSpecial turns the text of special tokens, such as "<s>", into
	// their ids instead of tokenizing their characters.
	ParseSpecial bool
}

// Special lists a vocabulary's special token ids; -1 means the vocabulary has
// no such token.
type Special struct {
	BOS, EOS, EOT, UNK, PAD int
	// SEP is the separator of BERT-style vocabularies ([SEP]), which ends
	// a WordPiece encoding and separates the two texts of a pair.
	SEP int
	// AddBOS and AddEOS say whether EncodeOptions.AddSpecial adds them.
	// A WordPiece vocabulary (tokenizer/wordpiece) adds BOS and SEP whatever
	// they say, as llama.cpp does; there they only shape pairs (AddSEP).
	AddBOS, AddEOS bool
	// AddSEP says whether SEP goes between the two texts of a pair, as
	// llama.cpp's llama_vocab_get_add_sep: its reranking input is
	// [BOS] query [EOS] [SEP] document [EOS], each marker present where its
	// flag says so (EOS falling back to SEP when there is none). Encode
	// never adds it.
	AddSEP bool
}

// IsEndOfGeneration reports whether id ends a generation: EOS or EOT.
func (s Special) IsEndOfGeneration(id int) bool {
	return id >= 0 && (id == s.EOS || id == s.EOT)
}

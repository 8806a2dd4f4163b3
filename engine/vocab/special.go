package vocab

import (
	"fmt"
	"strings"

	"github.com/wasmlm/wasmlm/engine/gguf"
	"github.com/wasmlm/wasmlm/tokenizer"
)

// defaults are llama.cpp's special ids and flags for a model type, used
// where the file has no key.
type defaults struct {
	bos, eos, unk, pad, sep int
	addBOS, addSEP          bool
	noBOS                   bool // the pre-tokenizer clears BOS (chatglm-bpe)
}

// vocab is what both tokenizer types read from a file.
type vocab struct {
	tokens         []string
	types          []tokenizer.TokenType
	special        tokenizer.Special
	lstrip, rstrip []int
	ids            map[string]int // id of each text named in markerTexts; the last id wins, as in llama.cpp
}

// Texts by which llama.cpp recognises marker tokens that a file does not
// name by id. llama.cpp looks them up in a hash map, so when a vocabulary
// has several texts of one list, which one it takes is unspecified; the
// first in list order is taken here.
var (
	eotTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "<｜end▁of▁sentence｜>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<PAD>"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"}
	fimSepTexts = []string{"<|file_sep|>"}
	// eogTexts are made control tokens wherever they occur.
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"}
	// otherTexts are looked up for the Phi-3 and Jina rules.
	otherTexts = []string{"</s>", "<unk>", "<s>", "<mask>"}
	// harmonyTexts are gpt-oss's (o200k_harmony) markers: the two that end
	// its turns and those that llama.cpp always renders, so that a reply's
	// channels can be read (see harmonyRules).
	harmonyTexts = []string{"<|return|>", "<|call|>", "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
	// gemma4EOGTexts end Gemma 4's generations in llama.cpp.
	gemma4EOGTexts = []string{"<eos>", "<turn|>", "<|tool_response>"}
)

// markers pairs each detection list with the keys that name its token
// (current and deprecated), as llama_vocab::impl::load does.
var markers = []struct {
	keys  []string
	texts []string
}{
	{[]string{keyEOT}, eotTexts},
	{[]string{keyEOM}, eomTexts},
	{[]string{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"}, fimPreTexts},
	{[]string{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"}, fimSufTexts},
	{[]string{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"}, fimMidTexts},
	{[]string{"tokenizer.ggml.fim_pad_token_id"}, fimPadTexts},
	{[]string{"tokenizer.ggml.fim_rep_token_id"}, fimRepTexts},
	{[]string{"tokenizer.ggml.fim_sep_token_id"}, fimSepTexts},
}

// readVocab reads tokens, token types and special ids, and applies
// llama.cpp's rules for what the file leaves out.
func readVocab(f *gguf.File, def defaults) (*vocab, error) {
	tokens, err := f.Strings(keyTokens)
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	n := len(tokens)
	v := &vocab{tokens: tokens, types: make([]tokenizer.TokenType, n), ids: make(map[string]int)}
	if err := v.readTypes(f); err != nil {
		return nil, err
	}
	wanted := make(map[string]bool)
	for _, list := range [][]string{eotTexts, eomTexts, fimPreTexts, fimSufTexts, fimMidTexts, fimPadTexts, fimRepTexts, fimSepTexts, eogTexts, otherTexts, harmonyTexts, gemma4EOGTexts} {
		for _, t := range list {
			wanted[t] = true
		}
	}
	for id, t := range tokens {
		if wanted[t] {
			v.ids[t] = id
		}
	}

	sp := tokenizer.Special{BOS: def.bos, EOS: def.eos, EOT: -1, UNK: def.unk, PAD: def.pad, SEP: def.sep, AddBOS: def.addBOS, AddSEP: def.addSEP}
	if def.noBOS {
		sp.BOS = -1
	}
	for _, p := range []*int{&sp.BOS, &sp.EOS, &sp.UNK, &sp.PAD, &sp.SEP} {
		if *p >= n {
			*p = -1 // a default the vocabulary is too small for
		}
	}
	for _, k := range []struct {
		key string
		id  *int
	}{{keyBOS, &sp.BOS}, {keyEOS, &sp.EOS}, {keyUNK, &sp.UNK}, {keySEP, &sp.SEP}, {keyPAD, &sp.PAD}} {
		if err := readID(f, k.key, n, k.id); err != nil {
			return nil, err
		}
	}
	for _, k := range []struct {
		key  string
		flag *bool
	}{{keyAddBOS, &sp.AddBOS}, {keyAddEOS, &sp.AddEOS}, {keyAddSEP, &sp.AddSEP}} {
		if *k.flag, err = f.BoolOr(k.key, *k.flag); err != nil {
			return nil, fmt.Errorf("vocab: %w", err)
		}
	}

	// Marker tokens named by key keep their type; those found by text
	// become control tokens, as llama.cpp forces them to be.
	for i, m := range markers {
		id := -1
		for _, key := range m.keys {
			if err := readID(f, key, n, &id); err != nil {
				return nil, err
			}
		}
		if id < 0 {
			id = v.first(m.texts)
			if id >= 0 {
				v.types[id] = tokenizer.TokenControl
			}
		}
		if i == 0 {
			sp.EOT = id
		}
	}
	for _, t := range eogTexts {
		if id, ok := v.ids[t]; ok {
			v.types[id] = tokenizer.TokenControl
		}
	}
	v.harmonyRules(&sp)
	v.gemma4Rules(&sp)
	v.special = sp

	name, err := f.StringOr(keyName, "")
	if err != nil {
		return nil, fmt.Errorf("vocab: %w", err)
	}
	if name = strings.ToLower(name); strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		v.phi3RStrip()
	}
	return v, nil
}

// readTypes reads tokenizer.ggml.token_type; without it every token is
// normal. Values outside llama.cpp's enum become TokenUndefined, as there.
func (v *vocab) readTypes(f *gguf.File) error {
	if _, ok := f.Lookup(keyTokenType); !ok {
		for i := range v.types {
			v.types[i] = tokenizer.TokenNormal
		}
		return nil
	}
	raw, err := f.Int32s(keyTokenType)
	if err != nil {
		return fmt.Errorf("vocab: %w", err)
	}
	if len(raw) != len(v.tokens) {
		return fmt.Errorf("%w: %d token types for %d tokens", ErrFormat, len(raw), len(v.tokens))
	}
	for i, t := range raw {
		if t < int32(tokenizer.TokenUndefined) || t > int32(tokenizer.TokenByte) {
			t = int32(tokenizer.TokenUndefined)
		}
		v.types[i] = tokenizer.TokenType(t)
	}
	return nil
}

// readID sets *id from key if the file has it and it names a token;
// llama.cpp ignores (with a warning) an id past the vocabulary.
func readID(f *gguf.File, key string, n int, id *int) error {
	if _, ok := f.Lookup(key); !ok {
		return nil
	}
	x, err := f.Uint32(key)
	if err != nil {
		return fmt.Errorf("vocab: %w", err)
	}
	if int64(x) < int64(n) {
		*id = int(x)
	}
	return nil
}

// first is the id of the first of texts in the vocabulary, or -1.
func (v *vocab) first(texts []string) int {
	for _, t := range texts {
		if id, ok := v.ids[t]; ok {
			return id
		}
	}
	return -1
}

// phi3RStrip sets llama.cpp's Phi-3 attributes: every control, user-defined
// and unknown token swallows the white space on its right, except <unk>,
// <s> and <|endoftext|>. (llama.cpp also sets it on </s>, which matters only
// when </s> is one of those types, as it is in Phi-3.)
func (v *vocab) phi3RStrip() {
	keep := map[int]bool{}
	for _, t := range []string{"<unk>", "<s>", "<|endoftext|>"} {
		if id, ok := v.ids[t]; ok {
			keep[id] = true
		}
	}
	for id, typ := range v.types {
		if (typ == tokenizer.TokenControl || typ == tokenizer.TokenUserDefined || typ == tokenizer.TokenUnknown) && !keep[id] {
			v.rstrip = append(v.rstrip, id)
		}
	}
}

// harmonyRules applies llama.cpp's rules for gpt-oss's markers. It always
// renders <|channel|>, <|message|>, <|start|> and <|constrain|> (they become
// user-defined tokens), so that a reply's channels reach the chat parser.
// <|return|> and <|call|> end a generation; where both are there, <|end|>,
// which closes every message of a harmony reply (the reasoning's too), does
// not, and is rendered. llama.cpp keeps a set of end-of-generation tokens;
// here EOS is the file's (<|return|> in gpt-oss's files) and EOT, which
// would have been <|end|>, becomes <|call|>.
func (v *vocab) harmonyRules(sp *tokenizer.Special) {
	for _, t := range harmonyTexts[2:] {
		if id, ok := v.ids[t]; ok {
			v.types[id] = tokenizer.TokenUserDefined
		}
	}
	ret, okRet := v.ids["<|return|>"]
	call, okCall := v.ids["<|call|>"]
	if !okRet || !okCall {
		return
	}
	for _, id := range []int{ret, call} {
		if v.types[id] != tokenizer.TokenUserDefined {
			v.types[id] = tokenizer.TokenControl
		}
	}
	if end, ok := v.ids["<|end|>"]; ok {
		v.types[end] = tokenizer.TokenUserDefined
		if sp.EOT == end || sp.EOT < 0 {
			sp.EOT = call
		}
	}
}

// gemma4Rules applies llama.cpp's rules for Gemma 4's markers: <eos>,
// <turn|> and <|tool_response> end a generation and are control tokens
// (even <|tool_response>, which Gemma 4's converter writes as user-defined:
// llama.cpp adds the control attribute, which then decides). Of llama.cpp's
// set of end-of-generation tokens, EOS is the file's (<eos>) and EOT, where
// the file names none, <turn|>, which ends every model turn.
func (v *vocab) gemma4Rules(sp *tokenizer.Special) {
	for _, t := range gemma4EOGTexts {
		if id, ok := v.ids[t]; ok {
			v.types[id] = tokenizer.TokenControl
		}
	}
	if turn, ok := v.ids["<turn|>"]; ok && sp.EOT < 0 {
		sp.EOT = turn
	}
}

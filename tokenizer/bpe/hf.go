package bpe

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/wasmlm/wasmlm/tokenizer"
)

// The pre-tokenizer regexes of Hugging Face tokenizer.json files that LoadHF
// recognises, exactly as the files spell them.
const (
	hfRegexGPT2   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	hfRegexLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	hfRegexQwen2  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// hfRegexes maps a Split regex to the pre-tokenizer it is.
var hfRegexes = map[string]string{
	hfRegexGPT2:   "gpt-2",
	hfRegexLlama3: "llama-bpe",
	hfRegexQwen2:  "qwen2",
}

// hfFile is the part of tokenizer.json that LoadHF reads.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type                    string           `json:"type"`
		Vocab                   map[string]int64 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		ByteFallback            bool             `json:"byte_fallback"`
		Dropout                 *float64         `json:"dropout"`
		UnkToken                *string          `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
	} `json:"model"`
}

type hfAddedToken struct {
	ID      int64  `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
	LStrip  bool   `json:"lstrip"`
	RStrip  bool   `json:"rstrip"`
}

// hfConfig is the part of tokenizer_config.json that LoadHF reads.
type hfConfig struct {
	BOS         hfTokenRef `json:"bos_token"`
	EOS         hfTokenRef `json:"eos_token"`
	PAD         hfTokenRef `json:"pad_token"`
	UNK         hfTokenRef `json:"unk_token"`
	AddBOSToken *bool      `json:"add_bos_token"`
	AddEOSToken *bool      `json:"add_eos_token"`
}

// hfTokenRef is a token named in tokenizer_config.json: a string, an
// AddedToken object with "content", or null.
type hfTokenRef struct {
	Text string
	Set  bool
}

// UnmarshalJSON accepts the three forms.
func (r *hfTokenRef) UnmarshalJSON(data []byte) error {
	switch {
	case bytes.Equal(data, []byte("null")):
		*r = hfTokenRef{}
		return nil
	case len(data) > 0 && data[0] == '"':
		r.Set = true
		return json.Unmarshal(data, &r.Text)
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	if obj.Content == nil {
		return fmt.Errorf("token object without \"content\": %s", data)
	}
	r.Text, r.Set = *obj.Content, true
	return nil
}

// LoadHF builds a tokenizer from a Hugging Face tokenizer.json and,
// optionally (nil), its tokenizer_config.json.
//
// The model must be byte-level BPE ("type": "BPE", no byte fallback, no
// subword prefix or suffix) with GPT-2's ByteLevel pre-tokenizer, or a
// Sequence of a Split on Llama 3's or Qwen2's regex and a ByteLevel without
// regex; anything else is an error naming what was found
// (ErrUnknownPreTokenizer for the pre-tokenizer, ErrUnsupported for the
// rest). The NFC normalizer of Qwen files is accepted but not applied,
// as llama.cpp does not apply it either: text that is already NFC, as
// nearly all text is, tokenizes as Hugging Face does.
//
// Added tokens marked special become control tokens, split out of text only
// with EncodeOptions.ParseSpecial; the others become user-defined tokens,
// always split out, as Hugging Face does. Their lstrip/rstrip flags are
// kept; single_word and normalized are ignored.
//
// BOS, EOS, PAD and UNK come from tokenizer_config.json (bos_token, ...).
// BOS is added when add_bos_token says so, else when the post_processor is
// a TemplateProcessing that puts a special token before the text (EOS
// likewise, after it). EOT is found by its text as llama.cpp does
// (<|eot_id|>, <|im_end|>, ...).
func LoadHF(tokenizerJSON, tokenizerConfigJSON []byte) (*BPE, error) {
	var f hfFile
	if err := json.Unmarshal(tokenizerJSON, &f); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %v", tokenizer.ErrFormat, err)
	}
	if err := checkHFModel(&f); err != nil {
		return nil, err
	}
	pre, err := hfPreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}

	cfg := Config{PreTokenizer: pre, IgnoreMerges: f.Model.IgnoreMerges}
	if err := hfVocab(&cfg, &f); err != nil {
		return nil, err
	}
	if cfg.Merges, cfg.MergePairs, err = hfMerges(f.Model.Merges); err != nil {
		return nil, err
	}
	if cfg.Special, err = hfSpecial(&f, tokenizerConfigJSON, cfg.Tokens); err != nil {
		return nil, err
	}
	return New(cfg)
}

// checkHFModel rejects what a byte-level BPE cannot reproduce.
func checkHFModel(f *hfFile) error {
	m := &f.Model
	switch {
	case m.Type != "BPE":
		return fmt.Errorf("%w: model type %q (want \"BPE\")", ErrUnsupported, m.Type)
	case m.ByteFallback:
		return fmt.Errorf("%w: BPE with byte_fallback (a SentencePiece-style vocabulary, not byte-level)", ErrUnsupported)
	case m.Dropout != nil && *m.Dropout != 0:
		return fmt.Errorf("%w: BPE dropout %v", ErrUnsupported, *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return fmt.Errorf("%w: continuing_subword_prefix %q", ErrUnsupported, *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return fmt.Errorf("%w: end_of_word_suffix %q", ErrUnsupported, *m.EndOfWordSuffix)
	case len(m.Vocab) == 0:
		return fmt.Errorf("%w: tokenizer.json has an empty model.vocab", tokenizer.ErrFormat)
	}
	var norm struct {
		Type string `json:"type"`
	}
	if len(f.Normalizer) > 0 && !bytes.Equal(f.Normalizer, []byte("null")) {
		if err := json.Unmarshal(f.Normalizer, &norm); err != nil {
			return fmt.Errorf("%w: normalizer: %v", tokenizer.ErrFormat, err)
		}
		if norm.Type != "NFC" {
			return fmt.Errorf("%w: normalizer %s", ErrUnsupported, f.Normalizer)
		}
	}
	return nil
}

// hfPreTokenizer maps a tokenizer.json pre_tokenizer to a pre-tokenizer name.
func hfPreTokenizer(raw json.RawMessage) (string, error) {
	type byteLevel struct {
		Type           string `json:"type"`
		AddPrefixSpace bool   `json:"add_prefix_space"`
		UseRegex       *bool  `json:"use_regex"`
	}
	var p struct {
		byteLevel
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", fmt.Errorf("%w: pre_tokenizer: %v", tokenizer.ErrFormat, err)
	}
	unknown := func() (string, error) {
		return "", fmt.Errorf("%w: tokenizer.json pre_tokenizer %s (recognised: ByteLevel with GPT-2's regex, or Sequence[Split(Llama 3 or Qwen2 regex, Isolated), ByteLevel(use_regex=false)])",
			ErrUnknownPreTokenizer, abbreviate(raw))
	}
	switch p.Type {
	case "ByteLevel":
		// use_regex defaults to true.
		if p.AddPrefixSpace || (p.UseRegex != nil && !*p.UseRegex) {
			return unknown()
		}
		return "gpt-2", nil
	case "Sequence":
		if len(p.PreTokenizers) != 2 {
			return unknown()
		}
		var split struct {
			Type    string `json:"type"`
			Pattern struct {
				Regex *string `json:"Regex"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		var bl byteLevel
		if json.Unmarshal(p.PreTokenizers[0], &split) != nil || json.Unmarshal(p.PreTokenizers[1], &bl) != nil {
			return unknown()
		}
		if split.Type != "Split" || split.Pattern.Regex == nil || split.Behavior != "Isolated" || split.Invert ||
			bl.Type != "ByteLevel" || bl.AddPrefixSpace || bl.UseRegex == nil || *bl.UseRegex {
			return unknown()
		}
		if name, ok := hfRegexes[*split.Pattern.Regex]; ok {
			return name, nil
		}
	}
	return unknown()
}

// abbreviate shortens JSON for an error message.
func abbreviate(raw []byte) string {
	const limit = 300
	if len(raw) > limit {
		return string(raw[:limit]) + "..."
	}
	return string(raw)
}

// hfVocab fills cfg.Tokens, Types, LStrip and RStrip from model.vocab and
// added_tokens. Ids must be below tokenizer.MaxVocab; ids nobody names stay empty
// unused entries.
func hfVocab(cfg *Config, f *hfFile) error {
	size := int64(0)
	for text, id := range f.Model.Vocab {
		if id < 0 || id >= tokenizer.MaxVocab {
			return fmt.Errorf("%w: vocab entry %q has id %d (want 0..%d)", tokenizer.ErrFormat, text, id, tokenizer.MaxVocab-1)
		}
		size = max(size, id+1)
	}
	for _, t := range f.AddedTokens {
		if t.ID < 0 || t.ID >= tokenizer.MaxVocab {
			return fmt.Errorf("%w: added token %q has id %d (want 0..%d)", tokenizer.ErrFormat, t.Content, t.ID, tokenizer.MaxVocab-1)
		}
		size = max(size, t.ID+1)
	}
	// Ids may leave holes (Qwen's added tokens follow a gap), but a hostile
	// file must not make one entry cost a huge table.
	if count := int64(len(f.Model.Vocab) + len(f.AddedTokens)); size > count+1<<16 {
		return fmt.Errorf("%w: ids go up to %d for %d entries", tokenizer.ErrFormat, size-1, count)
	}
	cfg.Tokens = make([]string, size)
	cfg.Types = make([]tokenizer.TokenType, size)
	for text, id := range f.Model.Vocab {
		if cfg.Tokens[id] != "" {
			return fmt.Errorf("%w: vocab ids %q and %q are both %d", tokenizer.ErrFormat, cfg.Tokens[id], text, id)
		}
		cfg.Tokens[id] = text
		cfg.Types[id] = tokenizer.TokenNormal
	}
	for _, t := range f.AddedTokens {
		if t.Content == "" {
			return fmt.Errorf("%w: added token %d has no content", tokenizer.ErrFormat, t.ID)
		}
		// An added token may repeat a vocab entry (GPT-2's <|endoftext|>):
		// its text is the same, and it now counts as added.
		cfg.Tokens[t.ID] = t.Content
		cfg.Types[t.ID] = tokenizer.TokenUserDefined
		if t.Special {
			cfg.Types[t.ID] = tokenizer.TokenControl
		}
		if t.LStrip {
			cfg.LStrip = append(cfg.LStrip, int(t.ID))
		}
		if t.RStrip {
			cfg.RStrip = append(cfg.RStrip, int(t.ID))
		}
	}
	for id, text := range cfg.Tokens {
		if text == "" {
			cfg.Types[id] = tokenizer.TokenUnused
		}
	}
	return nil
}

// hfMerges decodes model.merges in either of its forms.
func hfMerges(raw json.RawMessage) ([]string, [][2]string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return []string{}, nil, nil
	}
	// The first element tells the form; decoding the wrong one first would
	// cost a pass over a few MB.
	if rest := bytes.TrimLeft(bytes.TrimLeft(raw, " \t\r\n")[1:], " \t\r\n"); len(rest) > 0 && rest[0] == '[' {
		var pairs [][2]string
		if err := json.Unmarshal(raw, &pairs); err != nil {
			return nil, nil, fmt.Errorf("%w: model.merges as pairs: %v", tokenizer.ErrFormat, err)
		}
		return nil, pairs, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return nil, nil, fmt.Errorf("%w: model.merges is neither [\"a b\", ...] nor [[\"a\", \"b\"], ...]: %v", tokenizer.ErrFormat, err)
	}
	return strs, nil, nil
}

// hfSpecial finds the special ids and the BOS/EOS policy.
func hfSpecial(f *hfFile, configJSON []byte, tokens []string) (tokenizer.Special, error) {
	sp := tokenizer.Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1}
	var conf hfConfig
	if configJSON != nil {
		if err := json.Unmarshal(configJSON, &conf); err != nil {
			return sp, fmt.Errorf("%w: tokenizer_config.json: %v", tokenizer.ErrFormat, err)
		}
	}
	if !conf.UNK.Set && f.Model.UnkToken != nil {
		conf.UNK = hfTokenRef{Text: *f.Model.UnkToken, Set: true}
	}
	// Look up only the few texts needed, in one pass (last id wins).
	ids := make(map[string]int)
	for _, text := range append([]string{conf.BOS.Text, conf.EOS.Text, conf.PAD.Text, conf.UNK.Text}, eotTexts...) {
		ids[text] = -1
	}
	for id, text := range tokens {
		if _, ok := ids[text]; ok {
			ids[text] = id
		}
	}
	for _, ref := range []struct {
		name string
		tok  hfTokenRef
		id   *int
	}{{"bos_token", conf.BOS, &sp.BOS}, {"eos_token", conf.EOS, &sp.EOS}, {"pad_token", conf.PAD, &sp.PAD}, {"unk_token", conf.UNK, &sp.UNK}} {
		if !ref.tok.Set {
			continue
		}
		id := ids[ref.tok.Text]
		if id < 0 {
			return sp, fmt.Errorf("%w: tokenizer_config.json %s %q is not in the vocabulary", tokenizer.ErrFormat, ref.name, ref.tok.Text)
		}
		*ref.id = id
	}
	for _, text := range eotTexts {
		if id := ids[text]; id >= 0 {
			sp.EOT = id
			break
		}
	}

	before, after, err := hfTemplate(f.PostProcessor)
	if err != nil {
		return sp, err
	}
	if before >= 0 {
		sp.AddBOS = true
		if sp.BOS < 0 {
			sp.BOS = before
		}
	}
	if after >= 0 {
		sp.AddEOS = true
		if sp.EOS < 0 {
			sp.EOS = after
		}
	}
	if conf.AddBOSToken != nil {
		sp.AddBOS = *conf.AddBOSToken
	}
	if conf.AddEOSToken != nil {
		sp.AddEOS = *conf.AddEOSToken
	}
	return sp, nil
}

// eotTexts are the texts by which llama.cpp recognises an end-of-turn token
// when a file names none, in the order tried here (llama.cpp's own order is
// that of a hash map).
var eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "<｜end▁of▁sentence｜>"}

// hfTemplate reads a post_processor: the id of the special token that a
// TemplateProcessing puts before a single text, and of the one after it
// (-1: none). ByteLevel and null add nothing; a Sequence is searched for a
// TemplateProcessing.
func hfTemplate(raw json.RawMessage) (before, after int, err error) {
	before, after = -1, -1
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return before, after, nil
	}
	var p struct {
		Type       string            `json:"type"`
		Processors []json.RawMessage `json:"processors"`
		Single     []struct {
			SpecialToken *struct {
				ID string `json:"id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID string `json:"id"`
			} `json:"Sequence"`
		} `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int64 `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return before, after, fmt.Errorf("%w: post_processor: %v", tokenizer.ErrFormat, err)
	}
	switch p.Type {
	case "ByteLevel":
		return before, after, nil
	case "Sequence":
		for _, sub := range p.Processors {
			b, a, err := hfTemplate(sub)
			if err != nil {
				return before, after, err
			}
			before, after = max(before, b), max(after, a)
		}
		return before, after, nil
	case "TemplateProcessing":
		seen := false
		for _, piece := range p.Single {
			switch {
			case piece.Sequence != nil:
				seen = true
			case piece.SpecialToken != nil:
				st, ok := p.SpecialTokens[piece.SpecialToken.ID]
				if !ok || len(st.IDs) != 1 || st.IDs[0] < 0 || st.IDs[0] >= tokenizer.MaxVocab {
					return before, after, fmt.Errorf("%w: post_processor special token %q has no single valid id", tokenizer.ErrFormat, piece.SpecialToken.ID)
				}
				if seen {
					after = int(st.IDs[0])
				} else {
					before = int(st.IDs[0])
				}
			}
		}
		return before, after, nil
	}
	return before, after, fmt.Errorf("%w: post_processor of type %q", ErrUnsupported, p.Type)
}

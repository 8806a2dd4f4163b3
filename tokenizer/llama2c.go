package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
)

// llama2.c's fixed special ids (run.c hard-codes them).
const (
	llama2cUNK = 0
	llama2cBOS = 1
	llama2cEOS = 2
)

// LoadLlama2C parses a llama2.c tokenizer.bin: an int32 max_token_length,
// then per token a float32 score, an int32 byte length and the bytes, all
// little-endian, until the data ends. The file does not state its vocabulary
// size; the caller compares VocabSize with the model's.
//
// The vocabulary follows llama2.c's conventions: id 0 is <unk>, 1 BOS and
// 2 EOS, pieces spell spaces as ' ', "<0xXX>" pieces are byte-fallback
// tokens, the dummy-prefix space is added and BOS is added by AddSpecial.
// Token types are assigned as llama.cpp's convert-llama2c-to-ggml assigns
// them, which also renames the stored "\n<s>\n" and "\n</s>\n" to "<s>" and
// "</s>" so that ParseSpecial finds them. Malformed data is an error wrapping
// ErrFormat that names the entry and byte offset.
func LoadLlama2C(data []byte) (*SPM, error) {
	const header = 4
	if len(data) < header {
		return nil, fmt.Errorf("%w: llama2.c tokenizer is %d bytes, shorter than its 4-byte header", ErrFormat, len(data))
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen < 0 {
		return nil, fmt.Errorf("%w: llama2.c tokenizer: max_token_length is %d", ErrFormat, maxLen)
	}
	count, err := checkLlama2CEntries(data[header:], header, maxLen)
	if err != nil {
		return nil, err
	}
	if count <= llama2cEOS {
		return nil, fmt.Errorf("%w: llama2.c tokenizer has %d tokens; it needs at least <unk>, <s> and </s>", ErrFormat, count)
	}
	// The data is valid: read it into slices of the right size. The pieces
	// are substrings of one copy of the data, one allocation in all.
	tokens := make([]string, count)
	scores := make([]float32, count)
	text := string(data)
	for id, off := 0, header; id < count; id++ {
		scores[id] = math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int(binary.LittleEndian.Uint32(data[off+4:]))
		tokens[id] = text[off+8 : off+8+n]
		off += 8 + n
	}

	types := make([]TokenType, len(tokens))
	for id, piece := range tokens {
		_, isByte := parseByteToken(piece)
		switch {
		case id == llama2cUNK:
			types[id] = TokenUnknown
		case id == llama2cBOS, id == llama2cEOS, piece == "":
			types[id] = TokenControl
		case isByte:
			types[id] = TokenByte
		default:
			types[id] = TokenNormal
		}
	}
	tokens[llama2cUNK], tokens[llama2cBOS], tokens[llama2cEOS] = "<unk>", "<s>", "</s>"

	return NewSPM(SPMConfig{
		Tokens: tokens,
		Scores: scores,
		Types:  types,
		Special: Special{
			BOS: llama2cBOS, EOS: llama2cEOS, UNK: llama2cUNK, EOT: -1, PAD: -1, SEP: -1,
			AddBOS: true,
		},
		AddSpacePrefix: true,
		SpaceMarker:    " ",
	})
}

// checkLlama2CEntries walks the entries of a llama2.c tokenizer that start
// at byte offset base of the file, checks each, and counts them.
func checkLlama2CEntries(data []byte, base int, maxLen int32) (count int, err error) {
	for off := 0; off < len(data); count++ {
		at := base + off
		if len(data)-off < 8 {
			return 0, fmt.Errorf("%w: llama2.c tokenizer: entry %d at byte %d is truncated: %d bytes left, its header needs 8",
				ErrFormat, count, at, len(data)-off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int32(binary.LittleEndian.Uint32(data[off+4:]))
		switch {
		case score != score:
			return 0, fmt.Errorf("%w: llama2.c tokenizer: entry %d at byte %d has score NaN", ErrFormat, count, at)
		case n < 0:
			return 0, fmt.Errorf("%w: llama2.c tokenizer: entry %d at byte %d has negative length %d", ErrFormat, count, at, n)
		case n > maxLen:
			return 0, fmt.Errorf("%w: llama2.c tokenizer: entry %d at byte %d has length %d, over max_token_length %d",
				ErrFormat, count, at, n, maxLen)
		case int(n) > len(data)-off-8:
			return 0, fmt.Errorf("%w: llama2.c tokenizer: entry %d at byte %d has length %d but only %d bytes follow",
				ErrFormat, count, at, n, len(data)-off-8)
		}
		off += 8 + int(n)
	}
	return count, nil
}

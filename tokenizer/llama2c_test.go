package tokenizer

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadLlama2C: both reference files load with the vocabulary sizes their
// README states and llama2.c's conventions.
func TestLoadLlama2C(t *testing.T) {
	for _, c := range []struct {
		file string
		size int
	}{{"tok512.bin", 512}, {"tokenizer.bin", 32000}} {
		data := readTestdata(t, c.file)
		entries, _ := parseLlama2CNaive(t, data)
		tok, err := LoadLlama2C(data)
		require.NoError(t, err)
		assert.Equal(t, c.size, tok.VocabSize())
		assert.Equal(t, Special{BOS: 1, EOS: 2, UNK: 0, EOT: -1, PAD: -1, SEP: -1, AddBOS: true}, tok.Special())
		assert.Equal(t, "<unk>", tok.TokenText(0))
		assert.Equal(t, "<s>", tok.TokenText(1))
		assert.Equal(t, "</s>", tok.TokenText(2))
		assert.Equal(t, "", tok.TokenText(-1))
		assert.Equal(t, "", tok.TokenText(c.size))
		assert.Equal(t, TokenUnknown, tok.Type(0))
		assert.Equal(t, TokenControl, tok.Type(1))
		assert.Equal(t, TokenControl, tok.Type(2))
		// Compared in bulk: one testify call per token is slow under wasm.
		var wantTypes, gotTypes []TokenType
		var wantText, gotText []string
		for id := 3; id < c.size; id++ {
			want := TokenNormal
			if id < 259 {
				want = TokenByte
			}
			wantTypes, gotTypes = append(wantTypes, want), append(gotTypes, tok.Type(id))
			wantText, gotText = append(wantText, entries[id].text), append(gotText, tok.TokenText(id))
		}
		assert.Equal(t, wantTypes, gotTypes)
		assert.Equal(t, wantText, gotText)
		assert.Equal(t, TokenUndefined, tok.Type(c.size))
	}
}

// TestLoadLlama2CTruncated: tok512.bin cut at every byte. A cut on an entry
// boundary is a shorter but well-formed vocabulary (the format has no count;
// the engine compares sizes); any other cut is ErrFormat. Never a panic.
func TestLoadLlama2CTruncated(t *testing.T) {
	data := readTestdata(t, "tok512.bin")
	_, ends := parseLlama2CNaive(t, data)
	for cut := range len(data) {
		tok, err := LoadLlama2C(data[:cut])
		if n := slices.Index(ends, cut); n >= 2 {
			require.NoError(t, err, "cut %d", cut)
			require.Equal(t, n+1, tok.VocabSize(), "cut %d", cut)
			continue
		}
		require.ErrorIs(t, err, ErrFormat, "cut %d", cut)
	}
}

// TestLoadLlama2CTruncated32k: the same at a few hundred cut points of the
// 32k vocabulary, including all of its last entry.
func TestLoadLlama2CTruncated32k(t *testing.T) {
	data := readTestdata(t, "tokenizer.bin")
	_, ends := parseLlama2CNaive(t, data)
	cuts := []int{0, 1, 3, 4, 5, 11, 12}
	for cut := 13; cut < len(data); cut += 9973 {
		cuts = append(cuts, cut)
	}
	for cut := ends[len(ends)-2]; cut < len(data); cut++ {
		cuts = append(cuts, cut)
	}
	for _, cut := range cuts {
		tok, err := LoadLlama2C(data[:cut])
		if n := slices.Index(ends, cut); n >= 2 {
			require.NoError(t, err, "cut %d", cut)
			require.Equal(t, n+1, tok.VocabSize(), "cut %d", cut)
			continue
		}
		require.ErrorIs(t, err, ErrFormat, "cut %d", cut)
	}
}

// TestLoadLlama2CBadData: each kind of damage is ErrFormat with a message
// that says where.
func TestLoadLlama2CBadData(t *testing.T) {
	good := []rawEntry{{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {-1, " a"}}
	_, err := LoadLlama2C(writeLlama2C(6, good))
	require.NoError(t, err)

	negLen := writeLlama2C(6, good)
	binary.LittleEndian.PutUint32(negLen[4+8+5+4:], uint32(0xFFFFFFFE)) // entry 1's length: -2
	pastEnd := writeLlama2C(6, good)
	binary.LittleEndian.PutUint32(pastEnd[len(pastEnd)-2-4:], 3) // last entry claims 3 bytes, 2 follow
	tooLong := writeLlama2C(6, append(slices.Clone(good), rawEntry{0, "seven!!"}))
	nanScore := writeLlama2C(6, append(slices.Clone(good), rawEntry{float32(math.NaN()), "x"}))

	for _, c := range []struct {
		name, data, msg string
	}{
		{"empty", "", "shorter than its 4-byte header"},
		{"short header", "\x07\x00\x00", "shorter than its 4-byte header"},
		{"header only", "\x07\x00\x00\x00", "has 0 tokens"},
		{"negative max_token_length", "\xff\xff\xff\xff", "max_token_length is -1"},
		{"two tokens", string(writeLlama2C(6, good[:2])), "has 2 tokens"},
		{"negative length", string(negLen), "entry 1 at byte 17 has negative length -2"},
		{"length past end", string(pastEnd), "entry 3 at byte 44 has length 3 but only 2 bytes follow"},
		{"length over max", string(tooLong), "entry 4 at byte 54 has length 7, over max_token_length 6"},
		{"NaN score", string(nanScore), "entry 4 at byte 54 has score NaN"},
		{"truncated header", string(writeLlama2C(6, good)) + "\x00\x00\x00", "entry 4 at byte 54 is truncated"},
	} {
		_, err := LoadLlama2C([]byte(c.data))
		require.ErrorIs(t, err, ErrFormat, c.name)
		assert.ErrorContains(t, err, c.msg, c.name)
	}
}

// FuzzLoadLlama2C: arbitrary bytes load or fail with ErrFormat, never
// panic; whatever loads can encode and decode text without panicking.
func FuzzLoadLlama2C(f *testing.F) {
	f.Add(writeLlama2C(6, []rawEntry{{0, "<unk>"}, {0, "\n<s>\n"}, {0, "\n</s>\n"}, {-1, " a"}, {0, "<0x41>"}}))
	f.Add(readTestdata(f, "tok512.bin")[:600])
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := LoadLlama2C(data)
		if err != nil {
			require.ErrorIs(t, err, ErrFormat)
			return
		}
		require.GreaterOrEqual(t, tok.VocabSize(), 3)
		for _, opts := range []EncodeOptions{{}, {AddSpecial: true, ParseSpecial: true}} {
			ids, err := tok.Encode("Hi <s> wörld 😀\x00", opts)
			if err != nil {
				require.ErrorIs(t, err, ErrNoToken)
				continue
			}
			_, err = Decode(tok, ids)
			require.NoError(t, err)
		}
	})
}

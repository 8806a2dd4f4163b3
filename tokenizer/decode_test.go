package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/wasmlm/wasmlm/internal/golden"
)

// piecesTok is a Tokenizer over arbitrary byte pieces: ids 0..255 are the
// single bytes, then the extra pieces. It stands in for tokenizers (such as
// byte-level BPE) whose pieces can hold partial or invalid UTF-8.
type piecesTok struct{ extra [][]byte }

var _ Tokenizer = piecesTok{}

func (p piecesTok) Encode(text string, _ EncodeOptions) ([]int, error) {
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids, nil
}

func (p piecesTok) AppendPiece(dst []byte, _, id int) []byte {
	switch {
	case id < 0 || id >= p.VocabSize():
		return dst
	case id < 256:
		return append(dst, byte(id))
	}
	return append(dst, p.extra[id-256]...)
}

func (p piecesTok) VocabSize() int { return 256 + len(p.extra) }

func (p piecesTok) Special() Special {
	return Special{BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, SEP: -1}
}

func (p piecesTok) TokenText(id int) string { return string(p.AppendPiece(nil, -1, id)) }

// bytesToIDs is the piecesTok ids of raw bytes.
func bytesToIDs(b []byte) []int {
	ids := make([]int, len(b))
	for i, c := range b {
		ids[i] = int(c)
	}
	return ids
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

type utf8Case struct {
	In  string `json:"in"`
	Out string `json:"out"`
}

func loadUTF8Golden(t testing.TB) []utf8Case {
	t.Helper()
	var g struct {
		Cases []utf8Case `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(readTestdata(t, "utf8_replacement.json"), &g))
	require.NotEmpty(t, g.Cases)
	return g.Cases
}

// TestDecodeReplacementMatchesTextDecoder: ill-formed bytes become U+FFFD
// exactly as the WHATWG decoder (Node's TextDecoder) replaces them, through
// Decode, through the streaming decoder fed one byte at a time, and through
// the streaming decoder fed the whole sequence at once.
func TestDecodeReplacementMatchesTextDecoder(t *testing.T) {
	tok := piecesTok{}
	for _, c := range loadUTF8Golden(t) {
		in, want := unhex(t, c.In), string(unhex(t, c.Out))
		got, err := Decode(tok, bytesToIDs(in))
		require.NoError(t, err)
		assert.Equal(t, want, got, "in %s", c.In)
		assert.Equal(t, want, streamAll(NewStreamDecoder(tok), bytesToIDs(in)), "stream, in %s", c.In)

		whole := piecesTok{extra: [][]byte{in}}
		d := NewStreamDecoder(whole)
		assert.Equal(t, want, d.Add(256)+d.Flush(), "one piece, in %s", c.In)
	}
}

// TestDecodeGoDiffers documents why Decode does not use Go's conversions: a
// truncated sequence is one U+FFFD for TextDecoder, one per byte for Go's
// range loop, and one per run for strings.ToValidUTF8.
func TestDecodeGoDiffers(t *testing.T) {
	in := "a\xe2\x82b\xff\xfec"
	got, err := Decode(piecesTok{}, bytesToIDs([]byte(in)))
	require.NoError(t, err)
	assert.Equal(t, "a\uFFFDb\uFFFD\uFFFDc", got)
	assert.Equal(t, "a\uFFFD\uFFFDb\uFFFD\uFFFDc", string([]rune(in)))
	assert.Equal(t, "a\uFFFDb\uFFFDc", strings.ToValidUTF8(in, "\uFFFD"))
}

// TestDecodeOutOfRange: a bad id is an error naming the id and its position.
func TestDecodeOutOfRange(t *testing.T) {
	tok := loadLlama2C(t, "tok512.bin")
	for _, c := range []struct {
		ids []int
		msg string
	}{
		{[]int{1, 403, 512}, "id 512 at position 2"},
		{[]int{-1}, "id -1 at position 0"},
		{[]int{403, 407, 1 << 40}, "id 1099511627776 at position 2"},
	} {
		_, err := Decode(tok, c.ids)
		require.ErrorIs(t, err, ErrTokenOutOfRange)
		assert.ErrorContains(t, err, c.msg)
	}
	got, err := Decode(tok, nil)
	require.NoError(t, err)
	assert.Equal(t, "", got)
}

// TestDecodeGolden: Decode of llama2.c's prompt encodings is the prompt
// (the space after BOS dropped, as run.c prints it).
func TestDecodeGolden(t *testing.T) {
	g := golden.RuncTokenizerCases(t)
	for _, file := range []string{"tok512.bin", "tokenizer.bin"} {
		tok := loadLlama2C(t, file)
		cases := g.Tok512
		if file == "tokenizer.bin" {
			cases = g.Tok32k
		}
		for _, c := range cases {
			got, err := Decode(tok, c.BOS)
			require.NoError(t, err)
			assert.Equal(t, c.Text, got, file)
		}
	}
}

// FuzzDecodeUTF8: on any bytes, Decode yields valid UTF-8, keeps valid input
// unchanged, and agrees with the streaming decoder fed in arbitrary pieces.
func FuzzDecodeUTF8(f *testing.F) {
	for _, c := range loadUTF8Golden(f)[:40] {
		f.Add(unhex(f, c.In), uint64(0x5555))
	}
	f.Fuzz(func(t *testing.T, data []byte, cuts uint64) {
		got, err := Decode(piecesTok{}, bytesToIDs(data))
		require.NoError(t, err)
		require.True(t, utf8.ValidString(got))
		if utf8.Valid(data) {
			require.Equal(t, string(data), got)
		}
		// Cut data into pieces where the bits of cuts say so.
		var tok piecesTok
		var ids []int
		start := 0
		for i := 1; i <= len(data); i++ {
			if i == len(data) || cuts>>(i%64)&1 == 1 {
				tok.extra = append(tok.extra, data[start:i])
				ids = append(ids, 255+len(tok.extra))
				start = i
			}
		}
		require.Equal(t, got, streamAll(NewStreamDecoder(tok), ids))
	})
}

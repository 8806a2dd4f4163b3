//go:build ignore

// gen_tables writes tables.go, the Unicode data of the WordPiece normaliser,
// from llama.cpp's own tables (src/unicode-data.cpp): llama.cpp classifies,
// lower-cases and "NFD"-maps code points with them, not with a Unicode
// library, so ours must be the same data. By default it reads the file from
// the llama.cpp source that node-llama-cpp ships (run npm ci first):
//
//	go generate ./tokenizer/wordpiece/
//
// or from a checkout: go run gen_tables.go -src path/to/src/unicode-data.cpp.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Bits of llama.cpp's unicode_cpt_flags (unicode.h) that the normaliser reads.
const (
	flagAccentMark  = 0x0010 // \p{M}
	flagPunctuation = 0x0020 // \p{P}
	flagSymbol      = 0x0040 // \p{S}
	flagControl     = 0x0080 // \p{C}
)

// classBits are the class bits of a code point, written into tables.go
// with the tables that use them.
const classBits = `// The class bits of a code point, from llama.cpp's tables: white space
// (its unicode_set_whitespace), control (\p{C}: Cc, Cf, Co, Cs), accent
// mark (\p{M}), punctuation (\p{P}) and symbol (\p{S}).
const (
	classSpace   = 1
	classControl = 2
	classAccent  = 4
	classPunct   = 8
	classSymbol  = 16
)
`

// flagClasses map llama.cpp's flags to the class bits of classBits.
var flagClasses = []struct {
	flag  uint32
	class byte
}{{flagControl, 2}, {flagAccentMark, 4}, {flagPunctuation, 8}, {flagSymbol, 16}}

// classSpace is the class bit of white space (classBits).
const classSpace = 1

const maxCodePoints = 0x110000

func main() {
	src := flag.String("src", "", "llama.cpp's src/unicode-data.cpp (default: read from -bundle)")
	bundle := flag.String("bundle", "../../node_modules/node-llama-cpp/llama/gitRelease.bundle", "a git bundle of llama.cpp's source")
	out := flag.String("out", "tables.go", "the Go file to write")
	flag.Parse()
	if err := run(*src, *bundle, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen_tables:", err)
		os.Exit(1)
	}
}

func run(src, bundle, out string) error {
	var data []byte
	origin := src
	if src != "" {
		var err error
		if data, err = os.ReadFile(src); err != nil {
			return err
		}
	} else {
		var commit string
		var err error
		if data, commit, err = fromBundle(bundle); err != nil {
			return err
		}
		origin = "node-llama-cpp's llama.cpp (commit " + commit[:12] + ")"
	}
	tables, err := parse(string(data))
	if err != nil {
		return err
	}
	code, err := tables.generate(origin)
	if err != nil {
		return err
	}
	return os.WriteFile(out, code, 0o644)
}

// fromBundle reads src/unicode-data.cpp from a git bundle, by way of a bare
// clone in a temporary directory.
func fromBundle(bundle string) (data []byte, commit string, err error) {
	dir, err := os.MkdirTemp("", "llamacpp-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "repo.git")
	if out, err := exec.Command("git", "clone", "-q", "--bare", bundle, repo).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("git clone %s: %w: %s (run npm ci at the repository root, or pass -src)", bundle, err, out)
	}
	head, err := exec.Command("git", "--git-dir", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		return nil, "", fmt.Errorf("git rev-parse: %w", err)
	}
	data, err = exec.Command("git", "--git-dir", repo, "show", "HEAD:src/unicode-data.cpp").Output()
	if err != nil {
		return nil, "", fmt.Errorf("git show src/unicode-data.cpp: %w", err)
	}
	return data, strings.TrimSpace(string(head)), nil
}

// tables is what tables.go holds.
type tables struct {
	class   []byte      // by code point
	lower   [][4]uint32 // runs of unicode_map_lowercase: start, count, stride, lower(start)
	nfd     [][3]uint32 // unicode_ranges_nfd: first, last, nfd
	asciiLo [128]byte   // unicode_tolower below 0x80
}

var (
	pair   = regexp.MustCompile(`\{0x([0-9A-Fa-f]+), 0x([0-9A-Fa-f]+)\}`)
	triple = regexp.MustCompile(`\{0x([0-9A-Fa-f]+), 0x([0-9A-Fa-f]+), 0x([0-9A-Fa-f]+)\}`)
	single = regexp.MustCompile(`0x([0-9A-Fa-f]+)`)
)

// section is the initializer of the table named name: the text between its
// "name = {" and the "};" that closes it.
func section(src, name string) (string, error) {
	i := strings.Index(src, " "+name+" = {")
	if i < 0 {
		return "", fmt.Errorf("no table %s", name)
	}
	j := strings.Index(src[i:], "\n};")
	if j < 0 {
		return "", fmt.Errorf("table %s does not end", name)
	}
	body := src[i : i+j]
	return body[strings.Index(body, "{")+1:], nil
}

// hexes parses each of ss, hexadecimal digits, as a number no greater
// than maxCodePoints (the tables' end marker is that value); more is an error.
func hexes(ss ...string) ([]uint32, error) {
	out := make([]uint32, len(ss))
	for i, s := range ss {
		v, err := strconv.ParseUint(s, 16, 32)
		if err != nil || v > maxCodePoints {
			return nil, fmt.Errorf("0x%s is not a code point", s)
		}
		out[i] = uint32(v)
	}
	return out, nil
}

func parse(src string) (*tables, error) {
	t := &tables{class: make([]byte, maxCodePoints)}

	// unicode_ranges_flags: {start, flags}, each range up to the next start;
	// the first starts at 0 and the last is {0x110000, 0}.
	body, err := section(src, "unicode_ranges_flags")
	if err != nil {
		return nil, err
	}
	ranges := pair.FindAllStringSubmatch(body, -1)
	if len(ranges) < 2 {
		return nil, fmt.Errorf("unicode_ranges_flags does not cover 0..0x10FFFF")
	}
	if ends, err := hexes(ranges[0][1], ranges[len(ranges)-1][1]); err != nil || ends[0] != 0 || ends[1] != maxCodePoints {
		return nil, fmt.Errorf("unicode_ranges_flags does not cover 0..0x10FFFF")
	}
	for k := 0; k+1 < len(ranges); k++ {
		v, err := hexes(ranges[k][1], ranges[k+1][1], ranges[k][2])
		if err != nil {
			return nil, fmt.Errorf("unicode_ranges_flags: %w", err)
		}
		start, end, flags := v[0], v[1], v[2]
		if end <= start {
			return nil, fmt.Errorf("unicode_ranges_flags is not ascending at 0x%X", start)
		}
		var c byte
		for _, m := range flagClasses {
			if flags&m.flag != 0 {
				c |= m.class
			}
		}
		for cpt := start; cpt < end; cpt++ {
			t.class[cpt] = c
		}
	}

	body, err = section(src, "unicode_set_whitespace")
	if err != nil {
		return nil, err
	}
	for _, m := range single.FindAllStringSubmatch(body, -1) {
		v, err := hexes(m[1])
		if err != nil || v[0] >= maxCodePoints {
			return nil, fmt.Errorf("unicode_set_whitespace: 0x%s is not a code point", m[1])
		}
		t.class[v[0]] |= classSpace
	}

	// unicode_map_lowercase: llama.cpp binary-searches it, so it must be
	// strictly ascending for a lookup to mean what a map would.
	body, err = section(src, "unicode_map_lowercase")
	if err != nil {
		return nil, err
	}
	for i := range t.asciiLo {
		t.asciiLo[i] = byte(i)
	}
	last := int64(-1)
	for _, m := range pair.FindAllStringSubmatch(body, -1) {
		v, err := hexes(m[1], m[2])
		if err != nil {
			return nil, fmt.Errorf("unicode_map_lowercase: %w", err)
		}
		from, to := v[0], v[1]
		if int64(from) <= last {
			return nil, fmt.Errorf("unicode_map_lowercase is not strictly ascending at 0x%X", from)
		}
		last = int64(from)
		if from < 0x80 {
			if to >= 0x80 {
				return nil, fmt.Errorf("unicode_map_lowercase maps ASCII 0x%X outside ASCII", from)
			}
			t.asciiLo[from] = byte(to)
		}
		t.addLower(from, to)
	}

	// unicode_ranges_nfd: {first, last, nfd}, ascending and disjoint, the
	// first {0, 0, 0} (llama.cpp looks one entry back from upper_bound).
	body, err = section(src, "unicode_ranges_nfd")
	if err != nil {
		return nil, err
	}
	for _, m := range triple.FindAllStringSubmatch(body, -1) {
		v, err := hexes(m[1], m[2], m[3])
		if err != nil {
			return nil, fmt.Errorf("unicode_ranges_nfd: %w", err)
		}
		r := [3]uint32{v[0], v[1], v[2]}
		if r[1] < r[0] || (len(t.nfd) > 0 && r[0] <= t.nfd[len(t.nfd)-1][1]) {
			return nil, fmt.Errorf("unicode_ranges_nfd is not ascending and disjoint at 0x%X", r[0])
		}
		t.nfd = append(t.nfd, r)
	}
	if len(t.nfd) == 0 || t.nfd[0] != [3]uint32{} {
		return nil, fmt.Errorf("unicode_ranges_nfd does not start with {0, 0, 0}")
	}
	for _, r := range t.nfd {
		if r[0] < 0xC0 && r != [3]uint32{} {
			return nil, fmt.Errorf("unicode_ranges_nfd maps 0x%X, below the 0xC0 that nfd assumes", r[0])
		}
	}
	return t, nil
}

// addLower adds from -> to to the runs: a run maps start + k*stride to
// lower + k*stride for k < count.
func (t *tables) addLower(from, to uint32) {
	if n := len(t.lower); n > 0 {
		r := &t.lower[n-1]
		next := r[0] + r[1]*r[2]
		if r[1] == 1 && (from == r[0]+1 || from == r[0]+2) && to-from == r[3]-r[0] {
			r[1], r[2] = 2, from-r[0]
			return
		}
		if r[1] > 1 && from == next && to-from == r[3]-r[0] {
			r[1]++
			return
		}
	}
	t.lower = append(t.lower, [4]uint32{from, 1, 1, to})
}

// generate writes the Go source of tables.go.
func (t *tables) generate(origin string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by gen_tables.go from %s, src/unicode-data.cpp; DO NOT EDIT.\n\npackage wordpiece\n\n", origin)
	b.WriteString(classBits + "\n")

	// The class of every code point as ranges: entry k is start<<8 | class,
	// the class of the code points from start to the next entry's start.
	var ranges []uint32
	for cpt := range maxCodePoints {
		if cpt == 0 || t.class[cpt] != t.class[cpt-1] {
			ranges = append(ranges, uint32(cpt)<<8|uint32(t.class[cpt]))
		}
	}
	b.WriteString("// classRanges are the class of every code point (space, control, accent,\n// punctuation, symbol): entry k, start<<8 | class, holds from start up to\n// the next entry's start.\n")
	writeUint32s(&b, "classRanges", ranges, 8)

	b.WriteString("\n// asciiClass is the class of each ASCII code point.\nvar asciiClass = [128]uint8{")
	for i := range 128 {
		if i%16 == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(&b, "%d, ", t.class[i])
	}
	b.WriteString("\n}\n\n// asciiLower is unicode_tolower of each ASCII code point.\nvar asciiLower = [128]uint8{")
	for i := range 128 {
		if i%16 == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(&b, "0x%02X, ", t.asciiLo[i])
	}
	b.WriteString("\n}\n\n// lowerRuns are unicode_map_lowercase as runs: {start, count, stride,\n// lower(start)} maps start+k*stride to lower(start)+k*stride for k < count.\nvar lowerRuns = [...]lowerRun{")
	for i, r := range t.lower {
		if i%4 == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(&b, "{0x%05X, %d, %d, 0x%05X}, ", r[0], r[1], r[2], r[3])
	}
	b.WriteString("\n}\n\n// nfdRanges are unicode_ranges_nfd: {first, last, nfd} maps each code point\n// from first to last to the one code point nfd.\nvar nfdRanges = [...]nfdRange{")
	for i, r := range t.nfd {
		if i%4 == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(&b, "{0x%05X, 0x%05X, 0x%05X}, ", r[0], r[1], r[2])
	}
	b.WriteString("\n}\n")
	return format.Source(b.Bytes())
}

func writeUint32s(b *bytes.Buffer, name string, vals []uint32, perLine int) {
	fmt.Fprintf(b, "var %s = [...]uint32{", name)
	for i, v := range vals {
		if i%perLine == 0 {
			b.WriteString("\n\t")
		}
		fmt.Fprintf(b, "0x%08X, ", v)
	}
	b.WriteString("\n}\n")
}

package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A model can come as several GGUF files, its parts, as llama.cpp's
// llama-gguf-split (and gguf-py's writer, convert_hf_to_gguf.py
// --split-max-tensors) write them: name-00001-of-00003.gguf and so on. The
// first part holds all the metadata and some tensors; each later part holds
// only the split.* keys and more tensors. Every part says which it is with
// these keys (llama.cpp's LLM_KV_SPLIT_*), typed as llama.cpp writes and
// requires them.
const (
	SplitNoKey      = "split.no"            // uint16: the part's index, 0 for the first
	SplitCountKey   = "split.count"         // uint16: how many parts (0 in a file llama-gguf-split --merge wrote)
	SplitTensorsKey = "split.tensors.count" // int32: the tensors of all parts together
)

// MaxSplitCount is the most parts a model can have: split.count is a uint16.
const MaxSplitCount = math.MaxUint16

// DefaultSplitMaxTensors is llama-gguf-split's default --split-max-tensors.
const DefaultSplitMaxTensors = 128

// splitAlignment is the alignment llama-gguf-split lays every part out at,
// whatever general.alignment says (GGUF_DEFAULT_ALIGNMENT).
const splitAlignment = DefaultAlignment

// splitSuffixLen is the length of the end of a part's file name after its
// prefix, "-%05d-of-%05d.gguf" (numbers 1-based): a uint16 count always
// fits the five digits, so the suffix always has this length.
const splitSuffixLen = len("-00001-of-00003.gguf")

// SplitPath returns the file name of part no (1-based) of count parts whose
// names start with prefix, as llama.cpp's llama_split_path writes it:
// SplitPath("dir/model", 1, 3) is "dir/model-00001-of-00003.gguf".
func SplitPath(prefix string, no, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, no, count)
}

// ParseSplitPath reverses SplitPath: it returns the prefix, the part number
// (1-based) and the count of a path whose name ends in -NNNNN-of-NNNNN.gguf,
// with 1 <= no <= count <= MaxSplitCount and a non-empty prefix (llama.cpp's
// llama_split_prefix accepts the same names). ok is false for any other
// path. path may be a file path or the path of a URL, without its query.
func ParseSplitPath(path string) (prefix string, no, count int, ok bool) {
	if len(path) <= splitSuffixLen || !strings.HasSuffix(path, ".gguf") {
		return "", 0, 0, false
	}
	prefix, suffix := path[:len(path)-splitSuffixLen], path[len(path)-splitSuffixLen:]
	// suffix is "-NNNNN-of-NNNNN.gguf".
	if suffix[0] != '-' || suffix[6:10] != "-of-" {
		return "", 0, 0, false
	}
	no, okNo := fiveDigits(suffix[1:6])
	count, okCount := fiveDigits(suffix[10:15])
	if !okNo || !okCount || no < 1 || no > count || count > MaxSplitCount {
		return "", 0, 0, false
	}
	return prefix, no, count, true
}

// fiveDigits parses exactly five decimal digits.
func fiveDigits(s string) (int, bool) {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && len(s) == 5
}

// SplitInfo is what a part's split.* keys say.
type SplitInfo struct {
	// Index is split.no: the part's place, 0 for the first. Its file name
	// carries Index+1.
	Index int
	// Count is split.count, the number of parts: 1..MaxSplitCount.
	Count int
	// Tensors is split.tensors.count, the tensors of all the parts together,
	// or -1 when a later part leaves it out (llama.cpp reads it from the
	// first part only; llama-gguf-split and gguf-py write it in every part).
	Tensors int
}

// Split reads the split.* keys: ok is true when the file is a part of a
// split model (Count 1 included: a model in one part). ok is false, with no
// error, for a file without split.count, and for one whose split.count is 0,
// which is what llama-gguf-split --merge writes into the whole file it
// joins. The keys must have the types llama.cpp writes and reads (uint16,
// uint16, int32) and consistent values, else the error wraps ErrFormat:
// split.no below split.count, split.tensors.count at least the tensors this
// part holds, and present in the first part of several, where llama.cpp
// needs it.
func (f *File) Split() (s SplitInfo, ok bool, err error) {
	count, present, err := f.splitKey(SplitCountKey, TypeUint16)
	if err != nil || !present || count == 0 {
		return SplitInfo{}, false, err
	}
	index, present, err := f.splitKey(SplitNoKey, TypeUint16)
	if err != nil {
		return SplitInfo{}, false, err
	}
	if !present {
		return SplitInfo{}, false, fmt.Errorf("%w: %s %d without %s", ErrFormat, SplitCountKey, count, SplitNoKey)
	}
	if index >= count {
		return SplitInfo{}, false, fmt.Errorf("%w: %s %d is not below %s %d", ErrFormat, SplitNoKey, index, SplitCountKey, count)
	}
	tensors, present, err := f.splitKey(SplitTensorsKey, TypeInt32)
	switch {
	case err != nil:
		return SplitInfo{}, false, err
	case !present && index == 0 && count > 1:
		return SplitInfo{}, false, fmt.Errorf("%w: the first of %d parts has no %s", ErrFormat, count, SplitTensorsKey)
	case !present:
		tensors = -1
	case tensors < int64(len(f.tensors)):
		return SplitInfo{}, false, fmt.Errorf("%w: %s %d is less than the %d tensors of this part", ErrFormat, SplitTensorsKey, tensors, len(f.tensors))
	}
	return SplitInfo{Index: int(index), Count: int(count), Tensors: int(tensors)}, true, nil
}

// splitKey reads a split.* key that must have type want.
func (f *File) splitKey(key string, want ValueType) (x int64, present bool, err error) {
	v, ok := f.Lookup(key)
	if !ok {
		return 0, false, nil
	}
	if v.Type() != want {
		return 0, true, fmt.Errorf("%w: %s is %s, want %s (as llama.cpp writes it)", ErrFormat, key, v.Type(), want)
	}
	x, _ = v.AsInt64()
	if x < 0 {
		return 0, true, fmt.Errorf("%w: %s is %d", ErrFormat, key, x)
	}
	return x, true, nil
}

package jsonschema

import (
	"strconv"
	"strings"
)

// decimal is a JSON number's exact value, ±digits × 10^exp, with digits
// free of leading and trailing zeros (zero is "" with exp 0, never
// negative), so that equal numbers (1, 1.0, 10e-1) are equal decimals.
// The converter needs no arithmetic beyond this: whether a number is an
// integer, its integer part, and its value as an int64. (math/big's
// Rat did this before, at some 30 KB of the edge worker's gzipped size.)
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// maxNumberText bounds the text and the exponent of a number the converter
// reads; a longer one is refused (ErrLimit) as being beyond any bound the
// grammar can express.
const maxNumberText = 400

// parseDecimal reads num, the text of a JSON number (the decoder checked
// its syntax); false for a text longer than maxNumberText or an exponent
// beyond ±maxNumberText.
func parseDecimal(num string) (decimal, bool) {
	if len(num) > maxNumberText {
		return decimal{}, false
	}
	var d decimal
	mantissa, expText, hasExp := strings.Cut(strings.ToLower(num), "e")
	if hasExp {
		e, err := strconv.Atoi(strings.TrimPrefix(expText, "+"))
		if err != nil || e > maxNumberText || e < -maxNumberText {
			return decimal{}, false
		}
		d.exp = e
	}
	mantissa, d.neg = strings.CutPrefix(mantissa, "-")
	whole, frac, _ := strings.Cut(mantissa, ".")
	d.exp -= len(frac)
	digits := strings.TrimLeft(whole+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	d.exp += len(digits) - len(trimmed)
	d.digits = trimmed
	if d.digits == "" {
		return decimal{}, true
	}
	return d, true
}

// isInt reports whether d is an integer.
func (d decimal) isInt() bool { return d.exp >= 0 }

// sign is -1, 0 or 1.
func (d decimal) sign() int {
	switch {
	case d.digits == "":
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// trunc is d's integer part (rounded toward zero).
func (d decimal) trunc() decimal {
	if d.exp >= 0 {
		return d
	}
	keep := len(d.digits) + d.exp
	if keep <= 0 {
		return decimal{}
	}
	t, _ := parseDecimal(d.digitsText(d.digits[:keep])) // a shorter text than d's: within the limits
	return t
}

// digitsText is digits with d's sign, as a JSON integer.
func (d decimal) digitsText(digits string) string {
	if d.neg {
		return "-" + digits
	}
	return digits
}

// int64 is an integer d's value; false when it is not an integer or does
// not fit in an int64.
func (d decimal) int64() (int64, bool) {
	if !d.isInt() || len(d.digits)+d.exp > 19 {
		return 0, false
	}
	if d.digits == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(d.digitsText(d.digits+strings.Repeat("0", d.exp)), 10, 64)
	return v, err == nil
}

// key is d's identity: equal for equal values.
func (d decimal) key() string {
	return d.digitsText(d.digits) + "e" + strconv.Itoa(d.exp)
}

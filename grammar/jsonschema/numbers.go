package jsonschema

import (
	"strconv"
	"strings"
)

// bound is one end of a numeric range.
type bound struct {
	set  bool
	v    int64
	excl bool // the end itself is out
}

// maxBound bounds the magnitude of a numeric bound (llama.cpp's are
// int64s; this leaves room to add one).
const maxBound = 1 << 62

// numberBounds reads minimum, maximum and their exclusive forms (draft 6
// and later: numbers). For an integer the ends are integers, inclusive:
// a fractional or exclusive end moves inward. For a number the ends must be
// integers.
func numberBounds(s *value, ptr string, integer bool) (lo, hi bound, err error) {
	read := func(key string, lower bool) (bound, error) {
		n := s.get(key)
		if n == nil {
			return bound{}, nil
		}
		if n.kind != kindNumber {
			return bound{}, failAt(ptr, key, ErrInvalid, "%q must be a number (the boolean form of draft 4 is not supported)", key)
		}
		d, ok := parseDecimal(n.num.String())
		if !ok {
			return bound{}, failAt(ptr, key, ErrLimit, "%q is %s, not within ±2^62", key, n.num)
		}
		if !d.isInt() && !integer {
			return bound{}, failAt(ptr, key, ErrUnsupported, "%q %s is not supported: the bounds of a number must be integers", key, n.num)
		}
		excl := strings.HasPrefix(key, "exclusive")
		v, ok := d.trunc().int64() // toward zero
		if !ok || v > maxBound || v < -maxBound {
			return bound{}, failAt(ptr, key, ErrLimit, "%q is %s, not within ±2^62", key, n.num)
		}
		if !d.isInt() {
			// An integer above 1.5 is at least 2; below 1.5, at most 1:
			// away from zero, which only grows v's magnitude.
			if lower && d.sign() > 0 || !lower && d.sign() < 0 {
				v += int64(d.sign())
			}
			excl = false
			if v > maxBound || v < -maxBound {
				return bound{}, failAt(ptr, key, ErrLimit, "%q is %s, not within ±2^62", key, n.num)
			}
		}
		b := bound{set: true, v: v, excl: excl}
		if integer && excl {
			b.excl = false
			if lower {
				b.v++
			} else {
				b.v--
			}
		}
		return b, nil
	}
	tighter := func(a, b bound, lower bool) bound {
		switch {
		case !a.set:
			return b
		case !b.set:
			return a
		case a.v != b.v:
			if (a.v > b.v) == lower {
				return a
			}
			return b
		}
		a.excl = a.excl || b.excl
		return a
	}
	var b [4]bound
	for i, k := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		if b[i], err = read(k, i < 2); err != nil {
			return bound{}, bound{}, err
		}
	}
	lo, hi = tighter(b[0], b[1], true), tighter(b[2], b[3], false)
	if lo.set && hi.set && (lo.v > hi.v || lo.v == hi.v && (lo.excl || hi.excl)) {
		key := "minimum"
		if !b[0].set {
			key = "exclusiveMinimum"
		}
		return bound{}, bound{}, failAt(ptr, key, ErrInvalid, "the minimum is above the maximum: no value is valid")
	}
	return lo, hi, nil
}

// intRange is llama.cpp's _generate_min_max_int over inclusive integer
// bounds: decimal integers from lo to hi, no leading zeros, an open end
// reaching 16 digits (its integral-part's). Between two ends it is
// llama.cpp's construction; with one end, a correct one (see minMaxInt).
func intRange(lo, hi bound) string {
	var b strings.Builder
	minMaxInt(lo.v, hi.v, lo.set, hi.set, &b)
	return b.String()
}

func minMaxInt(lo, hi int64, hasLo, hasHi bool, out *strings.Builder) {
	digitRange := func(from, to byte) {
		out.WriteByte('[')
		out.WriteByte(from)
		if from != to {
			out.WriteByte('-')
			out.WriteByte(to)
		}
		out.WriteByte(']')
	}
	moreDigits := func(minDigits, maxDigits int) {
		out.WriteString("[0-9]")
		if minDigits == maxDigits && minDigits == 1 {
			return
		}
		out.WriteString("{" + strconv.Itoa(minDigits))
		if maxDigits != minDigits {
			out.WriteString("," + strconv.Itoa(maxDigits))
		}
		out.WriteByte('}')
	}
	var uniformRange func(from, to string)
	uniformRange = func(from, to string) {
		i := 0
		for i < len(from) && i < len(to) && from[i] == to[i] {
			i++
		}
		if i > 0 {
			out.WriteString(`"` + from[:i] + `"`)
		}
		if i >= len(from) || i >= len(to) {
			return
		}
		if i > 0 {
			out.WriteByte(' ')
		}
		subLen := len(from) - i - 1
		if subLen == 0 {
			digitRange(from[i], to[i])
			return
		}
		fromSub, toSub := from[i+1:], to[i+1:]
		zeros, nines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
		toReached := false
		out.WriteByte('(')
		if fromSub == zeros {
			digitRange(from[i], to[i]-1)
			out.WriteByte(' ')
			moreDigits(subLen, subLen)
		} else {
			out.WriteString("[" + from[i:i+1] + "] (")
			uniformRange(fromSub, nines)
			out.WriteByte(')')
			if from[i] < to[i]-1 {
				out.WriteString(" | ")
				if toSub == nines {
					digitRange(from[i]+1, to[i])
					toReached = true
				} else {
					digitRange(from[i]+1, to[i]-1)
				}
				out.WriteByte(' ')
				moreDigits(subLen, subLen)
			}
		}
		if !toReached {
			out.WriteString(" | ")
			digitRange(to[i], to[i])
			out.WriteByte(' ')
			uniformRange(zeros, toSub)
		}
		out.WriteByte(')')
	}

	if hasLo && hasHi {
		if lo < 0 && hi < 0 {
			out.WriteString(`"-" (`)
			minMaxInt(-hi, -lo, true, true, out)
			out.WriteByte(')')
			return
		}
		if lo < 0 {
			out.WriteString(`"-" (`)
			minMaxInt(0, -lo, true, true, out)
			out.WriteString(") | ")
			lo = 0
		}
		minS, maxS := strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)
		for digits := len(minS); digits < len(maxS); digits++ {
			uniformRange(minS, strings.Repeat("9", digits))
			minS = "1" + strings.Repeat("0", digits)
			out.WriteString(" | ")
		}
		uniformRange(minS, maxS)
		return
	}
	// One end only. llama.cpp recurses on the digits after the first
	// here, which loses their number when they start with zeros: its
	// grammar for "minimum": 1000 accepts 10. These are written anew: the
	// numbers of lo's length from lo up, then every longer one, up to
	// 16 digits (integral-part's).
	switch {
	case hasLo && lo >= 0:
		minS := strconv.FormatInt(lo, 10)
		uniformRange(minS, strings.Repeat("9", len(minS)))
		if len(minS) < 16 {
			out.WriteString(" | [1-9] ")
			moreDigits(len(minS), 15)
		}
	case hasLo:
		out.WriteString(`"-" (`)
		minMaxInt(0, -lo, true, true, out)
		out.WriteString(") | [0] | [1-9] ")
		moreDigits(0, 15)
	case hi >= 0:
		out.WriteString(`"-" [1-9] `)
		moreDigits(0, 15)
		out.WriteString(" | ")
		minMaxInt(0, hi, true, true, out)
	default:
		out.WriteString(`"-" (`)
		minMaxInt(-hi, 0, true, false, out)
		out.WriteByte(')')
	}
}

// numberRange is a number between integer bounds, written without an
// exponent (stricter than JSON, which llama.cpp's converter has no rule for
// at all): the non-negative numbers in range, then "-" and the magnitudes
// of the non-positive ones.
func numberRange(lo, hi bound) string {
	var alts []string
	if !hi.set || hi.v >= 0 {
		l := bound{set: true}
		if lo.set && lo.v >= 0 {
			l = lo
		}
		if p := magnitudes(l, hi); p != "" {
			alts = append(alts, p)
		}
	}
	if !lo.set || lo.v <= 0 {
		l := bound{set: true}
		if hi.set && hi.v <= 0 {
			l = bound{set: true, v: -hi.v, excl: hi.excl}
		}
		h := bound{}
		if lo.set {
			h = bound{set: true, v: -lo.v, excl: lo.excl}
		}
		if n := magnitudes(l, h); n != "" {
			alts = append(alts, `"-" (`+n+`)`)
		}
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

// magnitudes are the unsigned decimals n or n.f between lo (set, >= 0) and
// hi: n strictly inside with any fraction, n = lo with a fraction when
// anything lies above it, n = lo or hi exactly (zero fraction) when the end
// is inclusive.
func magnitudes(lo, hi bound) string {
	const (
		anyFrac  = ` ("." [0-9]{1,16})?`
		zeroFrac = ` ("." "0"{1,16})?`
		posFrac  = ` "." "0"{0,15} [1-9] [0-9]{0,15}`
	)
	var alts []string
	above := !hi.set || lo.v < hi.v // a fraction after lo stays in range
	lit := func(n int64) string { return `"` + strconv.FormatInt(n, 10) + `"` }
	switch zero := !lo.excl && (above || !hi.excl); {
	case zero && above:
		alts = append(alts, lit(lo.v)+anyFrac)
	case zero:
		alts = append(alts, lit(lo.v)+zeroFrac)
	case above:
		alts = append(alts, lit(lo.v)+posFrac)
	}
	if !hi.set || lo.v+1 <= hi.v-1 {
		inner := intRange(bound{set: true, v: lo.v + 1}, bound{set: hi.set, v: hi.v - 1})
		alts = append(alts, "("+inner+")"+anyFrac)
	}
	if hi.set && hi.v > lo.v && !hi.excl {
		alts = append(alts, lit(hi.v)+zeroFrac)
	}
	return strings.Join(alts, " | ")
}

package jsonschema

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecimal(t *testing.T) {
	for _, c := range []struct {
		num   string
		key   string
		isInt bool
		trunc int64
	}{
		{"0", "e0", true, 0},
		{"-0", "e0", true, 0},
		{"0.000", "e0", true, 0},
		{"1", "1e0", true, 1},
		{"1.0", "1e0", true, 1},
		{"10e-1", "1e0", true, 1},
		{"100", "1e2", true, 100},
		{"-1.5", "-15e-1", false, -1},
		{"0.25", "25e-2", false, 0},
		{"1.5E+3", "15e2", true, 1500},
		{"007.70", "77e-1", false, 7},
		{"-123.456e2", "-123456e-1", false, -12345},
	} {
		d, ok := parseDecimal(c.num)
		require.True(t, ok, c.num)
		assert.Equal(t, c.key, d.key(), c.num)
		assert.Equal(t, c.isInt, d.isInt(), c.num)
		v, ok := d.trunc().int64()
		assert.True(t, ok, c.num)
		assert.Equal(t, c.trunc, v, c.num)
	}
	for _, num := range []string{"1e401", "1e-401", string(make([]byte, 401))} {
		_, ok := parseDecimal(num)
		assert.False(t, ok, "%.20q", num)
	}
	for _, num := range []string{"9223372036854775808", "1e19", "-9223372036854775809", "1.5"} {
		d, _ := parseDecimal(num)
		_, ok := d.int64()
		assert.False(t, ok, num)
	}
	for _, num := range []string{"9223372036854775807", "-9223372036854775808", "92233720368547758.07e2"} {
		d, _ := parseDecimal(num)
		_, ok := d.int64()
		assert.True(t, ok, num)
	}
}

// FuzzDecimal checks decimal against math/big's exact rationals, which
// the converter used before: the same sign, integers, integer parts and
// equalities.
func FuzzDecimal(f *testing.F) {
	f.Add("1.0", "10e-1")
	f.Add("-0.5", "-5e-1")
	f.Add("123456789012345678901234567890", "1.2345678901234567890123456789e29")
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, da, ok := decimalAndRat(a)
		if !ok {
			return
		}
		if ra.Sign() != da.sign() || ra.IsInt() != da.isInt() {
			t.Fatalf("%s: sign %d, integer %v; math/big: %d, %v", a, da.sign(), da.isInt(), ra.Sign(), ra.IsInt())
		}
		q := new(big.Int).Quo(ra.Num(), ra.Denom())
		v, ok := da.trunc().int64()
		if ok != q.IsInt64() || ok && v != q.Int64() {
			t.Fatalf("%s: integer part %d (%v); math/big: %s", a, v, ok, q)
		}
		rb, db, ok := decimalAndRat(b)
		if ok && (ra.Cmp(rb) == 0) != (da.key() == db.key()) {
			t.Fatalf("%s, %s: keys %s, %s; math/big compares %d", a, b, da.key(), db.key(), ra.Cmp(rb))
		}
	})
}

// decimalAndRat reads s as a JSON number both ways; false when it is not
// one, or is beyond parseDecimal's limits.
func decimalAndRat(s string) (*big.Rat, decimal, bool) {
	var n json.Number
	if json.Unmarshal([]byte(s), &n) != nil || string(n) != s {
		return nil, decimal{}, false
	}
	d, ok := parseDecimal(s)
	if !ok {
		return nil, decimal{}, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, d, ok
}

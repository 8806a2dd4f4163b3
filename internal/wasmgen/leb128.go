package wasmgen

// AppendUleb128 appends v in unsigned LEB128: seven bits per byte, least
// significant first, the high bit set on every byte but the last.
func AppendUleb128(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendSleb128 appends v in signed LEB128: as AppendUleb128 over the two's
// complement bits, ending at the first byte whose bit 6 (the sign of what
// remains) already says all the remaining bits.
func AppendSleb128(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7 // arithmetic shift: the sign is kept
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

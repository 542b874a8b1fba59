package verify

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"
)

// floatToHalf converts to IEEE 754 binary16 with round-to-nearest-even.
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // overflow
		return sign | 0x7c00
	case exp-127 >= -14: // normal
		e := uint32(exp - 127 + 15)
		m := mant >> 13
		rest := mant & 0x1fff
		h := uint32(sign) | e<<10 | m
		if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
			h++ // may carry into the exponent, which is right
		}
		return uint16(h)
	case exp-127 >= -25: // subnormal
		mant |= 0x800000
		shift := uint32(-14-(exp-127)) + 13
		m := mant >> shift
		rest := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	return sign
}

// halfToFloat converts IEEE 754 binary16 bits to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		frac &= 0x3ff
		return math.Float32frombits(sign | e<<23 | frac<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp-15+127)<<23 | frac<<13)
}

// floatToBFloat16 rounds to nearest even.
func floatToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// decodeFloats decodes a tensor's raw bytes into float64s (integers exactly up to 2^53).
func decodeFloats(dt graph.DType, raw []byte) ([]float64, error) {
	size := dt.Bits() / 8
	if size == 0 || dt.Bits()%8 != 0 {
		return nil, fmt.Errorf("cannot compare %s tensors", dt)
	}
	n := len(raw) / size
	out := make([]float64, n)
	le := binary.LittleEndian
	for i := 0; i < n; i++ {
		b := raw[i*size:]
		switch dt {
		case graph.Float:
			out[i] = float64(math.Float32frombits(le.Uint32(b)))
		case graph.Double:
			out[i] = math.Float64frombits(le.Uint64(b))
		case graph.Float16:
			out[i] = float64(halfToFloat(le.Uint16(b)))
		case graph.BFloat16:
			out[i] = float64(math.Float32frombits(uint32(le.Uint16(b)) << 16))
		case graph.Int64:
			out[i] = float64(int64(le.Uint64(b)))
		case graph.Uint64:
			out[i] = float64(le.Uint64(b))
		case graph.Int32:
			out[i] = float64(int32(le.Uint32(b)))
		case graph.Uint32:
			out[i] = float64(le.Uint32(b))
		case graph.Int16:
			out[i] = float64(int16(le.Uint16(b)))
		case graph.Uint16:
			out[i] = float64(le.Uint16(b))
		case graph.Int8:
			out[i] = float64(int8(b[0]))
		case graph.Uint8, graph.Bool:
			out[i] = float64(b[0])
		default:
			return nil, fmt.Errorf("cannot compare %s tensors", dt)
		}
	}
	return out, nil
}

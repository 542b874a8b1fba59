package ingest

import "math"

func mathFloat32bits(f float32) uint32 { return math.Float32bits(f) }

// floatToHalf converts to IEEE binary16 (round to nearest even, no subnormal care needed for
// test data in [-1, 1)).
func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	frac := b & 0x7fffff
	if exp <= 0 {
		return sign
	}
	h := uint32(exp)<<10 | frac>>13
	if frac&0x1fff > 0x1000 || (frac&0x1fff == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

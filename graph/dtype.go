package graph

import "fmt"

// DType is an ONNX tensor element type; the values are those of TensorProto.DataType.
type DType int32

// The ONNX element types.
const (
	Undefined      DType = 0
	Float          DType = 1
	Uint8          DType = 2
	Int8           DType = 3
	Uint16         DType = 4
	Int16          DType = 5
	Int32          DType = 6
	Int64          DType = 7
	String         DType = 8
	Bool           DType = 9
	Float16        DType = 10
	Double         DType = 11
	Uint32         DType = 12
	Uint64         DType = 13
	Complex64      DType = 14
	Complex128     DType = 15
	BFloat16       DType = 16
	Float8E4M3FN   DType = 17
	Float8E4M3FNUZ DType = 18
	Float8E5M2     DType = 19
	Float8E5M2FNUZ DType = 20
	Uint4          DType = 21
	Int4           DType = 22
	Float4E2M1     DType = 23
	Float8E8M0     DType = 24
	Uint2          DType = 25
	Int2           DType = 26
)

var dtypeInfo = map[DType]struct {
	name string
	bits int
}{
	Undefined: {"undefined", 0}, Float: {"float32", 32}, Uint8: {"uint8", 8}, Int8: {"int8", 8},
	Uint16: {"uint16", 16}, Int16: {"int16", 16}, Int32: {"int32", 32}, Int64: {"int64", 64},
	String: {"string", 0}, Bool: {"bool", 8}, Float16: {"float16", 16}, Double: {"float64", 64},
	Uint32: {"uint32", 32}, Uint64: {"uint64", 64}, Complex64: {"complex64", 64},
	Complex128: {"complex128", 128}, BFloat16: {"bfloat16", 16},
	Float8E4M3FN: {"float8e4m3fn", 8}, Float8E4M3FNUZ: {"float8e4m3fnuz", 8},
	Float8E5M2: {"float8e5m2", 8}, Float8E5M2FNUZ: {"float8e5m2fnuz", 8},
	Uint4: {"uint4", 4}, Int4: {"int4", 4}, Float4E2M1: {"float4e2m1", 4},
	Float8E8M0: {"float8e8m0", 8}, Uint2: {"uint2", 2}, Int2: {"int2", 2},
}

// String returns the type's lower-case name (float32, int64, bfloat16, …).
func (d DType) String() string {
	if i, ok := dtypeInfo[d]; ok {
		return i.name
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

// Valid reports whether d is a known ONNX element type other than Undefined.
func (d DType) Valid() bool {
	_, ok := dtypeInfo[d]
	return ok && d != Undefined
}

// Bits is the storage size of one element in bits; 0 when it has no fixed size
// (strings, undefined or unknown types). Sub-byte types (int4, uint2, …) are packed.
func (d DType) Bits() int { return dtypeInfo[d].bits }

// IsFloat reports whether d is a floating-point type (including fp8/fp4 and complex).
func (d DType) IsFloat() bool {
	switch d {
	case Float, Float16, Double, BFloat16, Complex64, Complex128,
		Float8E4M3FN, Float8E4M3FNUZ, Float8E5M2, Float8E5M2FNUZ, Float4E2M1, Float8E8M0:
		return true
	}
	return false
}

// IsInteger reports whether d is a signed or unsigned integer type (not bool).
func (d DType) IsInteger() bool {
	switch d {
	case Uint8, Int8, Uint16, Int16, Int32, Int64, Uint32, Uint64, Uint4, Int4, Uint2, Int2:
		return true
	}
	return false
}

// ParseDType maps a name as printed by String back to its type.
func ParseDType(s string) (DType, bool) {
	for d, i := range dtypeInfo {
		if i.name == s {
			return d, true
		}
	}
	return Undefined, false
}

package graph

import (
	"errors"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Dim is one dimension of a shape: a known size (Value ≥ 0), or unknown (Value < 0) and
// then possibly named by a symbolic parameter such as "batch".
type Dim struct {
	Value int64
	Param string
}

// Known reports whether the dimension has a concrete size.
func (d Dim) Known() bool { return d.Value >= 0 }

// Static returns a known dimension of size v.
func Static(v int64) Dim { return Dim{Value: v} }

// Symbolic returns an unknown dimension named p ("" for anonymous).
func Symbolic(p string) Dim { return Dim{Value: -1, Param: p} }

// String returns the size, the symbolic name, or "?" for an anonymous unknown dimension.
func (d Dim) String() string {
	if d.Known() {
		return strconv.FormatInt(d.Value, 10)
	}
	if d.Param != "" {
		return d.Param
	}
	return "?"
}

// Shape is a tensor shape. A nil Shape means the rank is unknown; an empty non-nil Shape is
// a scalar.
type Shape []Dim

// Known reports whether the rank and every dimension are known.
func (s Shape) Known() bool {
	if s == nil {
		return false
	}
	for _, d := range s {
		if !d.Known() {
			return false
		}
	}
	return true
}

// Dims returns the concrete sizes; valid only when Known.
func (s Shape) Dims() []int64 {
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = d.Value
	}
	return out
}

// ShapeOf builds a fully known shape.
func ShapeOf(dims ...int64) Shape {
	s := make(Shape, len(dims))
	for i, v := range dims {
		s[i] = Static(v)
	}
	return s
}

// ErrOverflow is returned when a shape's element or byte count does not fit in int64.
var ErrOverflow = errors.New("element count overflows int64")

// NumElements is the product of the dimensions, or an error on overflow. It panics on an
// unknown shape; check Known first.
func (s Shape) NumElements() (int64, error) {
	n := int64(1)
	for _, d := range s {
		if d.Value < 0 {
			panic("graph: NumElements of an unknown shape")
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d.Value))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, ErrOverflow
		}
		n = int64(lo)
	}
	return n, nil
}

// ByteSize is the storage size of a tensor of this shape and type: elements × bits / 8,
// rounded up for packed sub-byte types. It returns -1 when the shape is unknown or the type
// has no fixed size (strings), and ErrOverflow when it does not fit in int64.
func ByteSize(dt DType, s Shape) (int64, error) {
	if !s.Known() || dt.Bits() == 0 {
		return -1, nil
	}
	n, err := s.NumElements()
	if err != nil {
		return 0, err
	}
	b := uint64(dt.Bits())
	hi, lo := bits.Mul64(uint64(n), b)
	if hi != 0 || lo > math.MaxInt64-7 {
		return 0, ErrOverflow
	}
	return int64((lo + 7) / 8), nil
}

// String formats the shape as [1,3,224,224] or [batch,3,?]; "unknown" for an unknown rank.
func (s Shape) String() string {
	if s == nil {
		return "unknown"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Equal reports whether two shapes are the same, symbolic names included.
func (s Shape) Equal(o Shape) bool {
	if (s == nil) != (o == nil) || len(s) != len(o) {
		return false
	}
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy that shares nothing with s.
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	return append(Shape{}, s...)
}

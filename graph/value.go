package graph

// Value is a dense tensor value in raw little-endian form (the ONNX layout): the inputs and
// outputs of a model run, random inputs made for checks and benchmarks, NumPy files.
type Value struct {
	DType DType
	Shape []int64
	Data  []byte
}

// Elements is the number of elements of the value's shape.
func (t *Value) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

package verify

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/graph"

	"github.com/x448/float16"
)

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
			out[i] = float64(float16.Frombits(le.Uint16(b)).Float32())
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

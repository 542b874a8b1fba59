package verify

import (
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/verify/npy"
)

// InputRange says how RandomFeeds fills an input: float inputs are uniform in [Lo, Hi);
// integer inputs uniform in the integers of [Lo, Hi); Why explains the choice ("indexes
// tok.weight", "mask", …).
type InputRange struct {
	Lo, Hi float64
	Why    string
}

// DefaultIntHigh bounds integer inputs that neither index a table nor are masks: [0, 4).
const DefaultIntHigh = feeds.DefaultIntHigh

// InputRanges chooses a value range for every model input: floats in [-1, 1); integers that
// index a table (through Cast/Reshape/Unsqueeze/… into the indices of Gather or
// GatherElements) in [0, rows), the smallest table they index; bool inputs in {0, 1};
// integer inputs whose name contains "mask" all ones (a valid attention mask); other
// integers in [0, 4).
func InputRanges(g *graph.Graph) map[string]InputRange {
	rs := feeds.Ranges(g)
	out := make(map[string]InputRange, len(rs))
	for name, r := range rs {
		out[name] = InputRange(r) // a conversion: the compiler keeps the fields in step
	}
	return out
}

// RandomFeeds makes one deterministic value for every model input from seed, in the
// ranges InputRanges chooses: the inputs Run feeds at that seed. Every input's shape must
// be fully known (bind symbolic dimensions when loading the model), and no input may take
// more than DefaultMaxTensorBytes (a *diag.Error of kind input about the input, before
// anything is allocated).
func RandomFeeds(g *graph.Graph, seed int64) (map[string]*npy.Array, error) {
	f, err := feeds.Random(g, seed, DefaultMaxTensorBytes, nil, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*npy.Array, len(f))
	for name, t := range f {
		out[name] = &npy.Array{DType: t.DType, Shape: t.Shape, Data: t.Data}
	}
	return out, nil
}

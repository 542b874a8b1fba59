package verify

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strings"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ort"

	"github.com/x448/float16"
)

// InputRange says how RandomFeeds fills an input.
type InputRange struct {
	// Float inputs are uniform in [Lo, Hi); integer inputs uniform in the integers of [Lo, Hi).
	Lo, Hi float64
	// Why explains the choice ("indexes tok.weight", "mask", …).
	Why string
}

// DefaultIntHigh bounds integer inputs that neither index a table nor are masks: [0, 4).
const DefaultIntHigh = 4

// InputRanges chooses a value range for every model input: floats in [-1, 1); integers that
// index a table (through Cast/Reshape/Unsqueeze/… into the indices of Gather or
// GatherElements) in [0, rows), the smallest table they index; bool inputs in {0, 1};
// integer inputs whose name contains "mask" all ones (a valid attention mask); other
// integers in [0, 4).
func InputRanges(g *graph.Graph) map[string]InputRange {
	out := map[string]InputRange{}
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		switch {
		case t.DType.IsFloat():
			out[t.Name] = InputRange{Lo: -1, Hi: 1, Why: "uniform"}
		case t.DType == graph.Bool:
			out[t.Name] = InputRange{Lo: 0, Hi: 2, Why: "mask"}
		case t.DType.IsInteger():
			r := InputRange{Lo: 0, Hi: DefaultIntHigh, Why: "small integers"}
			if rows, table := indexRange(g, id); rows > 0 {
				r = InputRange{Lo: 0, Hi: float64(rows), Why: "indexes " + table}
			}
			if strings.Contains(strings.ToLower(t.Name), "mask") {
				// A valid attention mask attends to every position: random 0/1 masks are
				// not inputs a model is served (GroupQueryAttention reads the mask's sum as
				// each sequence's length and rejects one shorter than the new tokens).
				r = InputRange{Lo: math.Min(1, r.Hi-1), Hi: math.Min(2, r.Hi), Why: "attention mask: every position attended"}
			}
			out[t.Name] = r
		}
	}
	return out
}

// indexPassthrough ops carry index values unchanged (or rearranged) from their first input.
var indexPassthrough = map[string]bool{
	"Cast": true, "Reshape": true, "Unsqueeze": true, "Squeeze": true, "Flatten": true,
	"Identity": true, "Expand": true, "Transpose": true, "Slice": true, "Tile": true,
}

// indexRange follows tensor id through index-preserving ops to Gather indices and returns
// the smallest number of rows indexed (0 when it indexes nothing).
func indexRange(g *graph.Graph, id int) (int64, string) {
	var rows int64
	table := ""
	seen := map[int]bool{}
	var walk func(t int)
	walk = func(t int) {
		if seen[t] {
			return
		}
		seen[t] = true
		for _, c := range g.Tensors[t].Consumers {
			n := &g.Nodes[c]
			switch {
			case (n.OpType == "Gather" || n.OpType == "GatherElements") && len(n.Inputs) > 1 && n.Inputs[1] == t && n.Inputs[0] >= 0:
				data := &g.Tensors[n.Inputs[0]]
				axis := n.AttrInt("axis", 0)
				if axis < 0 {
					axis += int64(len(data.Shape))
				}
				if axis >= 0 && int(axis) < len(data.Shape) && data.Shape[axis].Known() {
					if r := data.Shape[axis].Value; rows == 0 || r < rows {
						rows, table = r, data.Name
					}
				}
			case indexPassthrough[n.OpType] && len(n.Inputs) > 0 && n.Inputs[0] == t:
				for _, o := range n.Outputs {
					if o >= 0 {
						walk(o)
					}
				}
			}
		}
	}
	walk(id)
	return rows, table
}

// RandomFeeds makes one deterministic value for every model input from seed, in the
// ranges InputRanges chooses. Every input's shape must be fully known (bind symbolic
// dimensions when loading the model), and no input may take more than
// DefaultMaxTensorBytes (a *diag.Error of kind input about the input, before anything is
// allocated).
func RandomFeeds(g *graph.Graph, seed int64) (map[string]*ort.Tensor, error) {
	return randomFeeds(g, seed, DefaultMaxTensorBytes, nil)
}

// randomFeeds is RandomFeeds with a size limit per input; inputs named in skip are left out.
func randomFeeds(g *graph.Graph, seed, limit int64, skip map[string]bool) (map[string]*ort.Tensor, error) {
	ranges := InputRanges(g)
	feeds := map[string]*ort.Tensor{}
	for k, id := range g.Inputs {
		t := &g.Tensors[id]
		if skip[t.Name] {
			continue
		}
		if !t.Shape.Known() {
			return nil, fmt.Errorf("input %q has shape %s: bind its symbolic dimensions", t.Name, t.Shape)
		}
		// One stream per input, so adding an input does not change the others' values.
		rng := rand.New(rand.NewSource(seed*1000003 + int64(k)))
		n, err := t.Shape.NumElements()
		if err != nil {
			return nil, sizeLimitErr(t.Name, "model input", t.DType, t.Shape, -1, limit)
		}
		if b, err := graph.ByteSize(t.DType, t.Shape); err != nil || b > limit {
			if err != nil {
				b = -1
			}
			return nil, sizeLimitErr(t.Name, "model input", t.DType, t.Shape, b, limit)
		}
		r, ok := ranges[t.Name]
		if !ok {
			return nil, fmt.Errorf("input %q: cannot make random %s values; supply it with --input", t.Name, t.DType)
		}
		data, err := randomData(rng, t.DType, n, r)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", t.Name, err)
		}
		feeds[t.Name] = &ort.Tensor{DType: t.DType, Shape: t.Shape.Dims(), Data: data}
	}
	return feeds, nil
}

func randomData(rng *rand.Rand, dt graph.DType, n int64, r InputRange) ([]byte, error) {
	size := int64(dt.Bits() / 8)
	if size == 0 || dt.Bits()%8 != 0 {
		return nil, fmt.Errorf("cannot make random %s values", dt)
	}
	buf := make([]byte, n*size)
	le := binary.LittleEndian
	uni := func() float64 { return r.Lo + rng.Float64()*(r.Hi-r.Lo) }
	integer := func() int64 {
		lo, hi := int64(math.Ceil(r.Lo)), int64(math.Ceil(r.Hi))
		if hi <= lo {
			return lo
		}
		return lo + rng.Int63n(hi-lo)
	}
	for i := int64(0); i < n; i++ {
		b := buf[i*size:]
		switch dt {
		case graph.Float:
			le.PutUint32(b, math.Float32bits(float32(uni())))
		case graph.Double:
			le.PutUint64(b, math.Float64bits(uni()))
		case graph.Float16:
			le.PutUint16(b, float16.Fromfloat32(float32(uni())).Bits())
		case graph.BFloat16:
			le.PutUint16(b, floatToBFloat16(float32(uni())))
		case graph.Int64, graph.Uint64:
			le.PutUint64(b, uint64(integer()))
		case graph.Int32, graph.Uint32:
			le.PutUint32(b, uint32(integer()))
		case graph.Int16, graph.Uint16:
			le.PutUint16(b, uint16(integer()))
		case graph.Int8, graph.Uint8, graph.Bool:
			b[0] = byte(integer())
		default:
			return nil, fmt.Errorf("cannot make random %s values", dt)
		}
	}
	return buf, nil
}

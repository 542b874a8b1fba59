package feeds

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/ort"

	"github.com/x448/float16"
)

// Range says how Random fills an input.
type Range struct {
	// Float inputs are uniform in [Lo, Hi); integer inputs uniform in the integers of [Lo, Hi).
	Lo, Hi float64
	// Why explains the choice ("indexes tok.weight", "mask", …).
	Why string
}

// DefaultIntHigh bounds integer inputs that neither index a table nor are masks: [0, 4).
const DefaultIntHigh = 4

// Ranges chooses a value range for every model input: floats in [-1, 1); integers that
// index a table (through Cast/Reshape/Unsqueeze/… into the indices of Gather or
// GatherElements) in [0, rows), the smallest table they index; bool inputs in {0, 1};
// integer inputs whose name contains "mask" all ones (a valid attention mask); other
// integers in [0, 4).
func Ranges(g *graph.Graph) map[string]Range {
	out := map[string]Range{}
	for _, id := range g.Inputs {
		t := &g.Tensors[id]
		switch {
		case t.DType.IsFloat():
			out[t.Name] = Range{Lo: -1, Hi: 1, Why: "uniform"}
		case t.DType == graph.Bool:
			out[t.Name] = Range{Lo: 0, Hi: 2, Why: "mask"}
		case t.DType.IsInteger():
			r := Range{Lo: 0, Hi: DefaultIntHigh, Why: "small integers"}
			if rows, table := indexRange(g, id); rows > 0 {
				r = Range{Lo: 0, Hi: float64(rows), Why: "indexes " + table}
			}
			if strings.Contains(strings.ToLower(t.Name), "mask") {
				// A valid attention mask attends to every position: random 0/1 masks are
				// not inputs a model is served (GroupQueryAttention reads the mask's sum as
				// each sequence's length and rejects one shorter than the new tokens).
				r = Range{Lo: math.Min(1, r.Hi-1), Hi: math.Min(2, r.Hi), Why: "attention mask: every position attended"}
			}
			out[t.Name] = r
		}
	}
	return out
}

// indexPassthrough ops carry index values unchanged (or rearranged) from their first input.
var indexPassthrough = map[string]bool{
	optype.Cast: true, optype.Reshape: true, optype.Unsqueeze: true, optype.Squeeze: true, optype.Flatten: true,
	optype.Identity: true, optype.Expand: true, optype.Transpose: true, optype.Slice: true, optype.Tile: true,
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
			case (n.OpType == optype.Gather || n.OpType == optype.GatherElements) && len(n.Inputs) > 1 && n.Inputs[1] == t && n.Inputs[0] >= 0:
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

// Random makes one deterministic value for every input of g from seed, in the ranges Ranges
// chooses; inputs named in skip are left out. Every input's shape must be fully known (bind
// symbolic dimensions when loading the model), and no input may take more than limit bytes
// (a *diag.Error of kind input about the input, before anything is allocated). names are
// the caller's names of its options, for the error of an input no random value fits
// ("Inputs": "--input").
func Random(g *graph.Graph, seed, limit int64, skip map[string]bool, names diag.Names) (map[string]*ort.Tensor, error) {
	ranges := Ranges(g)
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
			return nil, SizeLimitError(t.Name, "model input", t.DType, t.Shape, -1, limit)
		}
		if b, err := graph.ByteSize(t.DType, t.Shape); err != nil || b > limit {
			if err != nil {
				b = -1
			}
			return nil, SizeLimitError(t.Name, "model input", t.DType, t.Shape, b, limit)
		}
		r, ok := ranges[t.Name]
		if !ok {
			return nil, fmt.Errorf("input %q: cannot make random %s values; supply it with %s", t.Name, t.DType, names.SayKey("Inputs", t.Name, "FILE.npy"))
		}
		data, err := Values(rng, t.DType, n, r)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", t.Name, err)
		}
		feeds[t.Name] = &ort.Tensor{DType: t.DType, Shape: t.Shape.Dims(), Data: data}
	}
	return feeds, nil
}

// Tensor makes a value for tensor t from rng: floats uniform in [-1, 1), integers and
// booleans in {0, 1} (valid token ids, masks and indices for any model). The shape must be
// fully known.
func Tensor(rng *rand.Rand, t *graph.Tensor) (*ort.Tensor, error) {
	if !t.Shape.Known() {
		return nil, fmt.Errorf("input %s has shape %s: bind its symbolic dimensions first", t.Name, t.Shape)
	}
	n, err := t.Shape.NumElements()
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", t.Name, err)
	}
	r := Range{Lo: -1, Hi: 1}
	if !t.DType.IsFloat() {
		r = Range{Lo: 0, Hi: 2}
	}
	data, err := Values(rng, t.DType, n, r)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", t.Name, err)
	}
	return &ort.Tensor{DType: t.DType, Shape: t.Shape.Dims(), Data: data}, nil
}

// SizeLimitError is a tensor too large to hold: a *diag.Error of kind input about the tensor.
// what is "model input", "stage boundary tensor" or "model output"; bytes is -1 when the size
// overflows int64.
func SizeLimitError(name, what string, dt graph.DType, shape graph.Shape, bytes, limit int64) *diag.Error {
	size := fmt.Sprintf("%d bytes", bytes)
	if bytes < 0 {
		size = "more bytes than int64 can count"
	}
	return diag.Input("%s %q (%s %s) would take %s in memory, over the %d-byte limit for one tensor when verifying (bind smaller dimensions, or raise the limit)",
		what, name, dt, shape, size, limit).About(diag.Tensor, name)
}

// Values makes n values of type dt from rng: floats uniform in [r.Lo, r.Hi), integers
// uniform in the integers of [r.Lo, r.Hi).
func Values(rng *rand.Rand, dt graph.DType, n int64, r Range) ([]byte, error) {
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

// floatToBFloat16 rounds to nearest even.
func floatToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

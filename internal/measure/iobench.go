package measure

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/feeds"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/profile"
)

// reluModel writes a one-node ONNX model, y = Relu(x) with x float32 [1, c, h, w]; with
// conv, y = Conv(x, 1×1 weights c→c) instead (a kernel ONNX Runtime runs in its blocked NCHWc
// layout, converting x and y).
func reluModel(path string, c, h, w int64, conv bool) error {
	node := &onnxpb.NodeProto{Name: proto.String("relu"), OpType: proto.String(optype.Relu), Input: []string{"x"}, Output: []string{"y"}}
	var inits []*onnxpb.TensorProto
	if conv {
		wt := make([]float32, c*c)
		for i := range wt {
			wt[i] = float32(i%7) * 0.01
		}
		node = &onnxpb.NodeProto{Name: proto.String("conv"), OpType: proto.String(optype.Conv), Input: []string{"x", "w"}, Output: []string{"y"}}
		inits = []*onnxpb.TensorProto{{Name: proto.String("w"), Dims: []int64{c, c, 1, 1}, DataType: proto.Int32(int32(graph.Float)), FloatData: wt}}
	}
	return writeOneNode(path, node, inits, floatVI("x", 1, c, h, w), floatVI("y", 1, c, h, w))
}

// floatVI is the value info of a float32 tensor of the given shape.
func floatVI(name string, shape ...int64) *onnxpb.ValueInfoProto {
	var dims []*onnxpb.TensorShapeProto_Dimension
	for _, d := range shape {
		dims = append(dims, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float)), Shape: &onnxpb.TensorShapeProto{Dim: dims}}}}}
}

// writeOneNode writes an opset-17 model of one node with input x, output y and the given
// initializers.
func writeOneNode(path string, node *onnxpb.NodeProto, inits []*onnxpb.TensorProto, x, y *onnxpb.ValueInfoProto) error {
	m := &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{
			Name:        proto.String(node.GetName()),
			Node:        []*onnxpb.NodeProto{node},
			Initializer: inits,
			Input:       []*onnxpb.ValueInfoProto{x},
			Output:      []*onnxpb.ValueInfoProto{y},
		},
	}
	data, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// ioSides are the spatial sides of MeasureIO's one-Relu calls on float32 [1, 16, side, side]:
// 4 KiB to 2.25 MiB per tensor, the range of a stage's inputs and outputs.
var ioSides = []int64{8, 32, 64, 128, 192}

// ioPasses is how often MeasureIO times every size; the least of the passes' medians counts.
const ioPasses = 5

// MeasureIO times calls of a one-Relu model on tensors of several sizes in ONNX Runtime, each
// made as pipebench makes a stage's call (timeRuns: inputs copied into bound buffers,
// outputs into preallocated ones and out again), in CPU time of the calling thread. The sizes
// are timed in turn, ioPasses times over; per size the least of the passes' medians counts
// (ioFit), the line through them gives the fixed cost and the cost per byte moved, less the
// Relu's own pass over the data at the given memory bandwidth (0: not subtracted). It also
// profiles a 1×1 convolution for the layout conversions around it (about a second).
func MeasureIO(ctx context.Context, threads, runs int, bandwidth float64) (profile.IOCost, error) {
	if err := ort.Init(); err != nil {
		return profile.IOCost{}, err
	}
	dir, err := os.MkdirTemp("", "onnxpart-io-*")
	if err != nil {
		return profile.IOCost{}, err
	}
	defer os.RemoveAll(dir)
	rng := rand.New(rand.NewSource(1))
	type call struct {
		s     *ort.Session
		feeds map[string]*ort.Tensor
		hints map[string]ort.OutputHint
	}
	calls := make([]call, len(ioSides))
	defer func() {
		for _, c := range calls {
			if c.s != nil {
				c.s.Close()
			}
		}
	}()
	bytes := make([]float64, len(ioSides))
	for i, side := range ioSides {
		p := filepath.Join(dir, fmt.Sprintf("relu%d.onnx", side))
		if err := reluModel(p, 16, side, side, false); err != nil {
			return profile.IOCost{}, err
		}
		shape := []int64{1, 16, side, side}
		x, err := feeds.Tensor(rng, &graph.Tensor{Name: "x", DType: graph.Float, Shape: graph.ShapeOf(shape...)})
		if err != nil {
			return profile.IOCost{}, err
		}
		s, err := ort.NewSession(p, []string{"x"}, []string{"y"}, ort.Options{Optimize: true, Threads: threads})
		if err != nil {
			return profile.IOCost{}, err
		}
		calls[i] = call{s, map[string]*ort.Tensor{"x": x}, map[string]ort.OutputHint{"y": {DType: graph.Float, Shape: shape}}}
		bytes[i] = float64(2 * len(x.Data))
	}
	per := max(runs/2, 5)
	times := make([][]float64, len(ioSides))
	for range ioPasses {
		for i, c := range calls {
			cpus, _, err := timeRuns(ctx, c.s, c.feeds, c.hints, 2, per)
			if err != nil {
				return profile.IOCost{}, err
			}
			times[i] = append(times[i], median(cpus))
		}
	}
	fixed, perByte := ioFit(bytes, times, bandwidth)
	layout, err := layoutCost(ctx, threads, runs)
	if err != nil {
		return profile.IOCost{}, err
	}
	block, align, err := probeNCHWc(threads)
	if err != nil {
		return profile.IOCost{}, err
	}
	return profile.IOCost{Fixed: fixed, PerByte: perByte, LayoutPerByte: layout, ChannelBlock: block, ChannelAlign: align}, nil
}

// ioFit fits a call's cost to timed calls of a one-Relu model: bytes[i] are the bytes call i
// moves in and out, times[i] its median times over several passes. Per size the least of the
// passes counts (load from other processes, and the cache they evict, only add time); a
// least-squares line through those gives the cost per byte (its slope), less the Relu's own
// read and write at bandwidth (0: not subtracted), and the fixed cost is the smallest call's
// time less its bytes at that slope. Both are at least 0.
func ioFit(bytes []float64, times [][]float64, bandwidth float64) (fixed, perByte float64) {
	var xs, ys []float64
	for i, ts := range times {
		if len(ts) == 0 || i >= len(bytes) {
			continue
		}
		xs = append(xs, bytes[i])
		ys = append(ys, slices.Min(ts))
	}
	if len(xs) == 0 {
		return 0, 0
	}
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i] / n
		my += ys[i] / n
	}
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	var slope float64
	if sxx > 0 {
		slope = sxy / sxx
	}
	// The fixed cost is the smallest call's time less its bytes: the line's intercept would
	// carry the cache's bend (small tensors copy faster per byte than large ones).
	lo := 0
	for i := range xs {
		if xs[i] < xs[lo] {
			lo = i
		}
	}
	fixed = math.Max(ys[lo]-slope*xs[lo], 0)
	perByte = slope
	if bandwidth > 0 {
		perByte -= 1 / bandwidth // the Relu reads its input and writes its output once
	}
	return fixed, math.Max(perByte, 0)
}

// convModel writes a one-Conv ONNX model: x float32 [1, cin, 8, 8], weights [cout, cin/group,
// k, k], padding k/2.
func convModel(path string, cin, cout, group, k int64) error {
	w := make([]float32, cout*cin/group*k*k)
	for i := range w {
		w[i] = float32(i%5) * 0.01
	}
	p := k / 2
	node := &onnxpb.NodeProto{Name: proto.String("conv"), OpType: proto.String(optype.Conv), Input: []string{"x", "w"}, Output: []string{"y"},
		Attribute: []*onnxpb.AttributeProto{
			{Name: proto.String("group"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(group)},
			{Name: proto.String("pads"), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{p, p, p, p}},
		}}
	inits := []*onnxpb.TensorProto{{Name: proto.String("w"), Dims: []int64{cout, cin / group, k, k}, DataType: proto.Int32(int32(graph.Float)), FloatData: w}}
	return writeOneNode(path, node, inits, floatVI("x", 1, cin, 8, 8), floatVI("y", 1, cout, 8, 8))
}

// nchwcDomain is the domain of ONNX Runtime's blocked-layout kernels.
const nchwcDomain = "com.microsoft.nchwc"

// blockedConv has ONNX Runtime optimize a one-Conv model (see convModel) and reports whether
// the convolution became a blocked-layout kernel, and its padded output channel count.
func blockedConv(dir string, threads int, cin, cout, group, k int64) (ok bool, paddedOut int64, err error) {
	p := filepath.Join(dir, fmt.Sprintf("conv-%d-%d-%d-%d.onnx", cin, cout, group, k))
	if err := convModel(p, cin, cout, group, k); err != nil {
		return false, 0, err
	}
	g := &graph.Graph{Tensors: []graph.Tensor{{Name: "x"}, {Name: "y"}}, Inputs: []int{0}, Outputs: []int{1}}
	out := p + ".opt"
	if err := saveOptimized(p, out, g, MeasureOptions{Threads: threads}); err != nil {
		return false, 0, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return false, 0, err
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		return false, 0, err
	}
	dims := map[string][]int64{}
	for _, t := range m.GetGraph().GetInitializer() {
		dims[t.GetName()] = t.GetDims()
	}
	for _, n := range m.GetGraph().GetNode() {
		if n.GetDomain() == nchwcDomain && n.GetOpType() == optype.Conv && len(n.GetInput()) > 1 {
			if d := dims[n.GetInput()[1]]; len(d) > 0 {
				paddedOut = d[0]
			}
			return true, paddedOut, nil
		}
	}
	return false, 0, nil
}

// probeNCHWc finds how ONNX Runtime lays out convolutions on this CPU: the channel block of
// its NCHWc kernels (the padded output channel count of a 4-channel 1×1 convolution) and the
// channel alignment it accepts, the least a (a power of two) for which a depthwise 3×3
// convolution of block + a channels is still blocked (the block itself when none smaller
// is). Both are 0 when the runtime uses no blocked layout. It optimizes a handful of one-node
// models (milliseconds; nothing is timed).
func probeNCHWc(threads int) (block, align int, err error) {
	dir, err := os.MkdirTemp("", "onnxpart-nchwc-*")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	ok, padded, err := blockedConv(dir, threads, 4, 4, 1, 1)
	if err != nil || !ok || padded < 4 {
		return 0, 0, err
	}
	for a := int64(1); a < padded; a *= 2 {
		c := padded + a
		ok, _, err := blockedConv(dir, threads, c, c, c, 3)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			return int(padded), int(a), nil
		}
	}
	return int(padded), int(padded), nil
}

// layoutCost measures ONNX Runtime's conversion of a call's inputs and outputs to and from its
// blocked NCHWc layout, per byte: the durations of the ReorderInput/ReorderOutput kernels
// around a 1×1 convolution on a 4 MiB tensor, from a profile.
func layoutCost(ctx context.Context, threads, runs int) (float64, error) {
	if err := ort.Init(); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "onnxpart-layout-*")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	const side = 256
	p := filepath.Join(dir, "conv.onnx")
	if err := reluModel(p, 16, side, side, true); err != nil {
		return 0, err
	}
	x, err := feeds.Tensor(rand.New(rand.NewSource(1)), &graph.Tensor{Name: "x", DType: graph.Float, Shape: graph.ShapeOf(1, 16, side, side)})
	if err != nil {
		return 0, err
	}
	prefix := filepath.Join(dir, "trace")
	s, err := ort.NewSession(p, []string{"x"}, []string{"y"}, ort.Options{Optimize: true, Threads: threads, ProfilePrefix: prefix})
	if err != nil {
		return 0, err
	}
	_, _, err = timeRuns(ctx, s, map[string]*ort.Tensor{"x": x}, nil, 3, runs)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	traces, _ := filepath.Glob(prefix + "*.json")
	if len(traces) != 1 {
		return 0, fmt.Errorf("ONNX Runtime wrote %d profile files, want 1", len(traces))
	}
	f, err := os.Open(traces[0])
	if err != nil {
		return 0, err
	}
	prof, err := ParseORTProfile(f)
	f.Close()
	if err != nil {
		return 0, err
	}
	var per []float64
	for _, r := range prof.Runs[3:] {
		var t float64
		for _, k := range r.Kernels {
			if strings.HasPrefix(k.Op, "Reorder") {
				t += k.Dur
			}
		}
		per = append(per, t)
	}
	return median(per) / float64(2*len(x.Data)), nil
}

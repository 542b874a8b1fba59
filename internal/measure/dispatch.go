package measure

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/onnxpb"
)

// KernelBench holds microbenchmarks of ONNX Runtime's CPU kernels on this machine, the
// measurements behind the CPU defaults of a decoder's roofline (defaults.go). Every figure is
// the calling thread's CPU time (TimeCall), graph optimizations on, a median over runs; the
// variants a figure compares are timed in alternation, run by run, so that load changes on a
// shared machine hit them alike.
type KernelBench struct {
	Threads int
	// GEMM64 and GEMM256 are the FLOP rates of a chain of four MatMuls of m×512·512×1408 and
	// m×1408·1408×512 for m = 64 and 256 rows (a prefill's projections), in a steady state.
	GEMM64, GEMM256 float64
	// GEMV is the rate, in bytes of weights per second, at which a chain of 64 such MatMuls
	// with one row (a decoder's token step) streams its 184 MB of weights; Read the rate at
	// which a vectorised scan reads as many bytes, timed in alternation with it (both from
	// memory: each evicts the other's data from the caches).
	GEMV, Read float64
	// View, Shape and Elementwise are the cost of one more kernel in situ: the time of 64
	// blocks of a one-row MatMul by 512×512 weights (1 MiB each, so that 64 MiB of weights
	// stream through the caches as in a decoder), each followed by 10 tiny kernels, less the
	// time of the blocks alone, per tiny kernel: Unsqueeze/Squeeze pairs (views); Shape,
	// Gather, Unsqueeze, Concat building a Reshape's target from another tensor's shape, as
	// exports do, and the Reshape (shape arithmetic a model with symbolic dimensions runs at
	// every call); Muls and Adds of a constant [1, 512], alternately (elementwise). Each model
	// is timed in a steady state, on the fourth of four consecutive calls, as a decoding loop
	// calls its session (right after the other models' calls, a tiny kernel costs 0.4–1 µs on
	// the reference machine instead of 0.2–0.45: the runtime's own state is out of cache).
	View, Shape, Elementwise float64
}

// MeasureKernels runs the microbenchmarks of KernelBench (runs timed calls of each model
// after 5 warm-up calls; about 10 seconds with 50 runs).
func MeasureKernels(ctx context.Context, threads, runs int) (*KernelBench, error) {
	if err := ort.Init(); err != nil {
		return nil, err
	}
	if threads <= 0 {
		threads = 1
	}
	dir, err := os.MkdirTemp("", "onnxpart-kernels-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	kb := &KernelBench{Threads: threads}
	open := func(name string, m *onnxpb.ModelProto, rows, width int64) (*ort.Session, *ort.Bound, error) {
		p := filepath.Join(dir, name+".onnx")
		data, err := proto.Marshal(m)
		if err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, nil, err
		}
		s, err := ort.NewSession(p, []string{"x"}, []string{"y"}, ort.Options{Optimize: true, Threads: threads})
		if err != nil {
			return nil, nil, err
		}
		x := &ort.Tensor{DType: graph.Float, Shape: []int64{rows, width}, Data: make([]byte, 4*rows*width)}
		b, err := s.Prepare(map[string]*ort.Tensor{"x": x}, map[string]ort.OutputHint{"y": {DType: graph.Float, Shape: []int64{rows, width}}})
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		return s, b, nil
	}
	// times calls each function warm+1 times per round, the last call timed, runs rounds
	// after 3 warm-up rounds, and returns each one's CPU times. warm > 0 times a steady state
	// (the function's data settled in the caches, as in a loop calling one session); warm = 0
	// times each call right after the others' calls.
	times := func(warm int, fs ...func() error) ([][]float64, error) {
		out := make([][]float64, len(fs))
		for r := range 3 + runs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for i, f := range fs {
				for range warm {
					if err := f(); err != nil {
						return nil, err
					}
				}
				_, c, err := devices.TimeCall(f)
				if err != nil {
					return nil, err
				}
				if r >= 3 {
					out[i] = append(out[i], c)
				}
			}
		}
		return out, nil
	}

	// GEMM.
	for _, rows := range []int64{64, 256} {
		m, flops := matmulChain(rows, 512, 1408, 4, "", 0)
		s, b, err := open(fmt.Sprintf("gemm%d", rows), m, rows, 512)
		if err != nil {
			return nil, err
		}
		t, err := times(3, b.Run)
		b.Close()
		s.Close()
		if err != nil {
			return nil, err
		}
		r := flops / median(t[0])
		if rows == 64 {
			kb.GEMM64 = r
		} else {
			kb.GEMM256 = r
		}
	}

	// GEMV against a scan of as many bytes.
	{
		m, _ := matmulChain(1, 512, 1408, 64, "", 0)
		s, b, err := open("gemv", m, 1, 512)
		if err != nil {
			return nil, err
		}
		size := 64 * 512 * 1408 * 4
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = 1
		}
		t, err := times(0, b.Run, func() error {
			if bytes.IndexByte(buf, 0) >= 0 {
				return fmt.Errorf("scan buffer holds a zero")
			}
			return nil
		})
		b.Close()
		s.Close()
		if err != nil {
			return nil, err
		}
		kb.GEMV, kb.Read = float64(size)/median(t[0]), float64(size)/median(t[1])
	}

	// Dispatch in situ.
	var fs []func() error
	for _, kind := range []string{"", "view", "shape", "add"} {
		m, _ := matmulChain(1, 512, 512, 64, kind, 10)
		s, b, err := open("dispatch-"+kind, m, 1, 512)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		defer b.Close()
		fs = append(fs, b.Run)
	}
	t, err := times(3, fs...)
	if err != nil {
		return nil, err
	}
	per := func(i int) float64 {
		d := make([]float64, len(t[0]))
		for r := range d {
			d[r] = t[i][r] - t[0][r]
		}
		return median(d) / (64 * 10)
	}
	kb.View, kb.Shape, kb.Elementwise = per(1), per(2), per(3)
	return kb, nil
}

// matmulChain builds x float32 [rows, k] → y: l MatMuls by constant weights, alternately
// k×n and n×k (l even), each followed by extra tiny kernels of kind ("" none; "view":
// Unsqueeze/Squeeze pairs; "shape": blocks of Shape(x), Gather, Unsqueeze, Concat,
// Reshape(h, target), five kernels each; "add": Muls and Adds of a constant alternately).
// The rows dimension is symbolic ("rows"). It returns the model and its FLOPs.
func matmulChain(rows, k, n int64, l int, kind string, extra int) (*onnxpb.ModelProto, float64) {
	ints := func(name string, v ...int64) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: proto.String(name), Dims: []int64{int64(len(v))}, DataType: proto.Int32(int32(graph.Int64)), Int64Data: v}
	}
	vec := make([]float32, k)
	for i := range vec {
		vec[i] = float32(i%7) * 0.01
	}
	inits := []*onnxpb.TensorProto{ints("axis0", 0), ints("cols", k),
		{Name: proto.String("zero"), DataType: proto.Int32(int32(graph.Int64)), Int64Data: []int64{0}},
		{Name: proto.String("c"), Dims: []int64{1, k}, DataType: proto.Int32(int32(graph.Float)), FloatData: vec}}
	var nodes []*onnxpb.NodeProto
	node := func(op string, ins ...string) string {
		out := fmt.Sprintf("t%d", len(nodes))
		nodes = append(nodes, &onnxpb.NodeProto{Name: proto.String(out), OpType: proto.String(op), Input: ins, Output: []string{out}})
		return out
	}
	x := "x"
	var flops float64
	for i := range l {
		in, out := k, n
		if i%2 == 1 {
			in, out = n, k
		}
		w := make([]float32, in*out)
		for j := range w {
			w[j] = float32((j*7+i)%13-6) * 0.001
		}
		wn := fmt.Sprintf("w%d", i)
		inits = append(inits, &onnxpb.TensorProto{Name: proto.String(wn), Dims: []int64{in, out}, DataType: proto.Int32(int32(graph.Float)), FloatData: w})
		h := node(optype.MatMul, x, wn)
		flops += 2 * float64(rows*in*out)
		if i%2 == 1 || n == k {
			for j := 0; j < extra; j++ {
				switch kind {
				case "view":
					if j%2 == 0 {
						h = node(optype.Unsqueeze, h, "axis0")
					} else {
						h = node(optype.Squeeze, h, "axis0")
					}
				case "add":
					if j%2 == 0 { // a Mul first: ONNX Runtime fuses MatMul + Add into Gemm
						h = node(optype.Mul, h, "c")
					} else {
						h = node(optype.Add, h, "c")
					}
				case "shape":
					if j%5 == 0 {
						d := node(optype.Unsqueeze, node(optype.Gather, node(optype.Shape, x), "zero"), "axis0")
						cat := node(optype.Concat, d, "cols")
						nodes[len(nodes)-1].Attribute = []*onnxpb.AttributeProto{{Name: proto.String("axis"), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(0)}}
						h = node(optype.Reshape, h, cat)
					}
				}
			}
		}
		x = h
	}
	nodes = append(nodes, &onnxpb.NodeProto{Name: proto.String("out"), OpType: proto.String(optype.Identity), Input: []string{x}, Output: []string{"y"}})
	vi := func(name string) *onnxpb.ValueInfoProto {
		dims := []*onnxpb.TensorShapeProto_Dimension{
			{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "rows"}},
			{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: k}}}
		return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(graph.Float)), Shape: &onnxpb.TensorShapeProto{Dim: dims}}}}}
	}
	return &onnxpb.ModelProto{
		IrVersion:   proto.Int64(8),
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(17)}},
		Graph: &onnxpb.GraphProto{Name: proto.String("chain"), Node: nodes, Initializer: inits,
			Input: []*onnxpb.ValueInfoProto{vi("x")}, Output: []*onnxpb.ValueInfoProto{vi("y")}},
	}, flops
}

package genaigen

import (
	"encoding/binary"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/internal/seeded"
)

func runOnce(t *testing.T, path string, ins, outs []string, feeds map[string]*ort.Tensor) map[string]*ort.Tensor {
	t.Helper()
	needORT(t)
	s, err := ort.NewSession(path, ins, outs, ort.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := s.Run(feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestQDQCNN: the QDQ model runs in ONNX Runtime, its logits are near the float32 twin's
// (int8 quantization error) but not equal to them (the Q/DQ pairs act), and onnxpart reads
// it with every shape known.
func TestQDQCNN(t *testing.T) {
	dir := t.TempDir()
	q, err := WriteCNN(dir, TinyCNN)
	if err != nil {
		t.Fatal(err)
	}
	fc := TinyCNN
	fc.Float, fc.Name = true, "f32"
	f, err := WriteCNN(dir, fc)
	if err != nil {
		t.Fatal(err)
	}
	n := 2 * 3 * 32 * 32
	in := &ort.Tensor{DType: graph.Float, Shape: []int64{2, 3, 32, 32}, Data: f32raw(seeded.Uniform(7, "input", n, 1))}
	a := floats(runOnce(t, q, []string{"input"}, []string{"logits"}, map[string]*ort.Tensor{"input": in})["logits"])
	b := floats(runOnce(t, f, []string{"input"}, []string{"logits"}, map[string]*ort.Tensor{"input": in})["logits"])
	if len(a) != 20 {
		t.Fatalf("%d logits, want 20", len(a))
	}
	d, s := maxDiff(a, b)
	t.Logf("QDQ vs float32: max |Δ| %.3g (logits up to %.3g)", d, s)
	if d > 0.1*s || d == 0 {
		t.Errorf("QDQ logits differ from the float32 twin's by %g (logits up to %g)", d, s)
	}
	m, err := ingest.Load(q, ingest.Options{Dims: map[string]int64{"batch": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RequireKnownShapes(); err != nil {
		t.Error(err)
	}
	ops := map[string]int{}
	for _, n := range m.Graph.Nodes {
		ops[n.OpType]++
	}
	if ops["QuantizeLinear"] != 5 || ops["DequantizeLinear"] != 9 || ops["Conv"] != 3 {
		t.Errorf("ops %v", ops)
	}
}

func i32(v []int32, shape ...int64) *ort.Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return &ort.Tensor{DType: graph.Int32, Shape: shape, Data: b}
}

// TestEncoder: the optimizer-form encoder runs; padding (input_mask 0 on the last tokens)
// leaves the real tokens' outputs equal to the unpadded sequence's; FastGelu and BiasGelu
// give nearly equal outputs; onnxpart reads it with every shape known.
func TestEncoder(t *testing.T) {
	dir := t.TempDir()
	p, err := WriteEncoder(dir, TinyEncoder)
	if err != nil {
		t.Fatal(err)
	}
	bg := TinyEncoder
	bg.BiasGelu, bg.Name = true, "bert-biasgelu"
	pb, err := WriteEncoder(dir, bg)
	if err != nil {
		t.Fatal(err)
	}
	ins, outs := []string{"input_ids", "segment_ids", "input_mask"}, []string{"last_hidden_state"}
	run := func(path string, ids []int32, valid int) []float32 {
		n := int64(len(ids))
		seg, mask := make([]int32, n), make([]int32, n)
		for i := range mask {
			if i < valid {
				mask[i] = 1
			}
			if i >= 3 {
				seg[i] = 1
			}
		}
		return floats(runOnce(t, path, ins, outs, map[string]*ort.Tensor{"input_ids": i32(ids, 1, n),
			"segment_ids": i32(seg, 1, n), "input_mask": i32(mask, 1, n)})["last_hidden_state"])
	}
	ids := []int32{5, 17, 300, 42, 7, 99, 0, 0}
	padded := run(p, ids, 6)
	short := run(p, ids[:6], 6)
	H := TinyEncoder.Hidden
	d, s := maxDiff(padded[:6*H], short)
	if s < 0.1 || d > 1e-4*max(1, s) {
		t.Errorf("padded and unpadded outputs differ by %g (outputs up to %g)", d, s)
	}
	// the mask matters: unmasking the padding changes the real tokens' outputs
	if d, _ := maxDiff(run(p, ids, 8)[:6*H], short); d < 1e-3 {
		t.Errorf("input_mask has no effect (%g)", d)
	}
	g := run(pb, ids, 6)
	if d, s := maxDiff(g, padded); d > 0.02*s || d == 0 {
		t.Errorf("BiasGelu vs FastGelu: %g (outputs up to %g)", d, s)
	}
	m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 1, "sequence": 8}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.RequireKnownShapes(); err != nil {
		t.Error(err)
	}
}

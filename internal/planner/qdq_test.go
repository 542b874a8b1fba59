package planner

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"
)

// qdqCNN is the QDQ int8 CNN of internal/genaigen at a size whose convolutions dominate
// (64×64 input, 32/64/128 channels), and its float32 twin (the same dequantised weights, no
// Q/DQ pairs), written to dir and loaded at batch 8.
func qdqCNN(t testing.TB, dir string) (qdq, fp32 *ingest.Model, paths [2]string) {
	t.Helper()
	var ms [2]*ingest.Model
	for i, float := range []bool{false, true} {
		c := genaigen.CNNConfig{Name: fmt.Sprintf("cnn%d", i), Size: 64, Channels: []int{32, 64, 128}, Classes: 10, Seed: 3, Float: float}
		p, err := genaigen.WriteCNN(dir, c)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{"batch": 8}})
		if err != nil {
			t.Fatal(err)
		}
		ms[i], paths[i] = m, p
	}
	return ms[0], ms[1], paths
}

// TestQDQCNNInt8: a backend that fuses QDQ-wrapped convolutions into int8 kernels (ONNX
// Runtime's CPU provider, TensorRT) has them priced as int8 groups, with int8 bytes, and the
// planner's time of the QDQ model on one device below its float32 twin's; ONNX Runtime's CUDA
// provider, which runs the Q/DQ nodes apart, prices the convolutions in float32. Whether ONNX
// Runtime runs the QDQ model faster than the twin on this machine's CPU is a benchmark's
// question (BenchmarkQDQCNNInORT), not this test's.
func TestQDQCNNInt8(t *testing.T) {
	qdq, fp32, _ := qdqCNN(t, t.TempDir())
	ctx := context.Background()
	for _, c := range []struct {
		devices, rules string
		int8           bool
	}{{"spr", "ort-cpu", true}, {"t4", "tensorrt", true}, {"a100", "tensorrt", true}, {"t4", "ort-cuda", false}} {
		cl, err := hw.Resolve(ctx, c.devices, hw.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rs, err := fusion.Builtin(c.rules)
		if err != nil {
			t.Fatal(err)
		}
		// Every Conv's group is an int8 kernel exactly where the backend fuses QDQ.
		co, err := fusion.Coarsen(qdq.Graph, rs)
		if err != nil {
			t.Fatal(err)
		}
		d := &cl.Devices[0]
		convs := 0
		for i := range co.Groups {
			members := co.Members(i)
			for _, v := range members {
				if qdq.Graph.Nodes[v].OpType != "Conv" {
					continue
				}
				convs++
				cls, w, ok := profile.GroupKernel(d, qdq.Graph, members, v)
				if ok != c.int8 || ok && cls != profile.ClassConvInt8 {
					t.Errorf("%s/%s: %s's group %v: int8 kernel %v (%s), want %v", c.devices, c.rules, qdq.Graph.Nodes[v].Name, co.Rule[i], ok, cls, c.int8)
				}
				// The int8 kernel streams the int8 weights (1 byte each, plus a scale and
				// zero point per channel).
				if wt := qdq.Graph.Tensors[qdq.Graph.Nodes[qdq.Graph.Tensors[qdq.Graph.Nodes[v].Inputs[1]].Producer].Inputs[0]]; ok && (w < float64(wt.Bytes) || w > 1.2*float64(wt.Bytes)) {
					t.Errorf("%s/%s: %s streams %.0f weight bytes, want the %d int8 bytes and their scales", c.devices, c.rules, qdq.Graph.Nodes[v].Name, w, wt.Bytes)
				}
			}
		}
		if convs != 3 {
			t.Fatalf("%d convolutions in the groups, want 3", convs)
		}
		// The planner's time on one device, with the rule set.
		opt := Options{Fusion: c.rules, Objective: Latency, Seed: 1, TimeLimit: 5 * time.Second}
		var lat [2]float64
		for i, m := range []*ingest.Model{qdq, fp32} {
			r, err := Plan(ctx, m, cl, opt)
			if err != nil {
				t.Fatal(err)
			}
			lat[i] = r.LatencyS
		}
		t.Logf("%s/%s: QDQ %.4g ms, float32 %.4g ms", c.devices, c.rules, lat[0]*1e3, lat[1]*1e3)
		if c.int8 && !(lat[0] < 0.8*lat[1]) {
			t.Errorf("%s/%s: the QDQ model takes %.4g ms, the float32 twin %.4g ms: the int8 kernels should make it faster", c.devices, c.rules, lat[0]*1e3, lat[1]*1e3)
		}
		if !c.int8 && !(lat[0] > lat[1]) {
			t.Errorf("%s/%s: the QDQ model takes %.4g ms, the float32 twin %.4g ms: unfused Q/DQ nodes only add work", c.devices, c.rules, lat[0]*1e3, lat[1]*1e3)
		}
	}
}

// BenchmarkQDQCNNInORT runs the QDQ CNN and its float32 twin in ONNX Runtime (optimizations on,
// one thread) at batch 8, the sizes TestQDQCNNInt8 prices: the int8 pricing of the ort-cpu
// rule set says the QDQ model is faster.
//
//	go test -run '^$' -bench BenchmarkQDQCNNInORT -benchtime 20x ./internal/planner
func BenchmarkQDQCNNInORT(b *testing.B) {
	if _, err := ort.LibraryPath(); err != nil {
		b.Skip(err)
	}
	qdq, _, paths := qdqCNN(b, b.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	in := &qdq.Graph.Tensors[qdq.Graph.Inputs[0]]
	x := &ort.Tensor{DType: graph.Float, Shape: in.Shape.Dims(), Data: make([]byte, in.Bytes)}
	for i := 0; i+4 <= len(x.Data); i += 4 {
		binary.LittleEndian.PutUint32(x.Data[i:], math.Float32bits(rng.Float32()*2-1))
	}
	feeds := map[string]*ort.Tensor{in.Name: x}
	for i, name := range []string{"qdq", "float32"} {
		b.Run(name, func(b *testing.B) {
			s, err := ort.NewSession(paths[i], []string{in.Name}, []string{"logits"}, ort.Options{Optimize: true, Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Run(feeds, nil); err != nil { // warm-up
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Run(feeds, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

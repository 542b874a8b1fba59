package profile_test

import (
	"math"
	"testing"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/genaigen"
	"github.com/onnxpart/onnxpart/internal/ops/optype"
	"github.com/onnxpart/onnxpart/profile"
)

// builder writes a genaigen decoder and loads it bound to one sequence of seq tokens after
// past.
func builder(t *testing.T, c genaigen.Config, seq, past int64) *graph.Graph {
	t.Helper()
	p, err := genaigen.Write(t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ingest.Load(p, ingest.Options{Dims: map[string]int64{genaigen.Batch: 1, genaigen.Seq: seq,
		genaigen.Past: past, genaigen.Total: past + seq}})
	if err != nil {
		t.Fatal(err)
	}
	return m.Graph
}

// opTime sums NodeTime over the nodes of one op type on device d, with their count.
func opTime(cm *profile.CostModel, g *graph.Graph, op string, d int) (float64, int) {
	var s float64
	k := 0
	for v := range g.Nodes {
		if g.Nodes[v].OpType == op {
			s += cm.NodeTime(g, v, d)
			k++
		}
	}
	return s, k
}

func small(name string, int4 bool, acc int) genaigen.Config {
	c := genaigen.Small
	c.Name, c.Int4, c.AccuracyLevel, c.Context = name, int4, acc, 2048
	return c
}

// MatMulNBits on a CPU is priced as ONNX Runtime's kernel runs it: a token step by the
// weights' count (int8 dot products with accuracy_level 4 beat dequantizing to float32 with
// 0), which a roofline of the packed bytes would price as nearly free; a prefill with
// accuracy_level 0 as the float32 GEMM plus dequantizing B once per call. A device with its
// own efficiency for the op type keeps the roofline.
func TestMatMulNBitsOnCPU(t *testing.T) {
	cpu := testCPU()
	cm := model(cpu, testGPU())
	acc4 := builder(t, small("acc4", true, 4), 1, 128)
	acc0 := builder(t, small("acc0", true, 0), 1, 128)
	t4, k := opTime(cm, acc4, optype.MatMulNBits, 0)
	t0, _ := opTime(cm, acc0, optype.MatMulNBits, 0)
	if k != 29 {
		t.Fatalf("%d MatMulNBits, want 29", k)
	}
	var weights, bytes float64
	for _, n := range acc4.Nodes {
		if n.OpType == optype.MatMulNBits {
			weights += float64(n.AttrInt("K", 0) * n.AttrInt("N", 0))
			bytes += float64(n.ParamBytes)
		}
	}
	// At least the weights' count at the int8 row kernel's rate (0.30 of the peak, profile/cpukernels.go, 2
	// operations a weight), well above their bytes at the cache's rate.
	if floor := 2 * weights / (0.30 * 100e9); t4 < floor || t4 < 4*bytes/80e9 {
		t.Errorf("token step MatMulNBits (accuracy_level 4): %.3g s for %.0f weights (%.0f bytes): want at least %.3g s", t4, weights, bytes, floor)
	}
	if t0 < 1.5*t4 {
		t.Errorf("token step: accuracy_level 0 %.3g s, 4 %.3g s: dequantizing to float32 should cost more than int8 dot products", t0, t4)
	}
	// On the GPU the roofline of the class prices it (the packed bytes and the FLOPs), beside
	// the launches.
	if g4, _ := opTime(cm, acc4, optype.MatMulNBits, 1); g4-29*5e-6 >= t4/10 {
		t.Errorf("GPU %.3g s, CPU %.3g s", g4, t4)
	}
	// A prefill at accuracy_level 0 costs the float32 twin's MatMuls plus dequantizing B.
	p0 := builder(t, small("p0", true, 0), 64, 0)
	p32 := builder(t, small("p32", false, 0), 64, 0)
	tp0, _ := opTime(cm, p0, optype.MatMulNBits, 0)
	tp32, _ := opTime(cm, p32, optype.MatMul, 0)
	deq := 2 * 4 * weights / cpu.Bandwidth.Value
	if !relWithin(tp0, tp32+deq, 0.02) {
		t.Errorf("prefill: MatMulNBits (accuracy_level 0) %.4g s, float32 MatMul %.4g s + dequantizing %.4g s", tp0, tp32, deq)
	}
	// A device's own figure for the op type wins over the kernel model.
	own := cpu
	own.Efficiency = map[string]profile.Figure{optype.MatMulNBits: fixed(1)}
	if to, _ := opTime(model(own), acc4, optype.MatMulNBits, 0); to >= t4/2 {
		t.Errorf("with the device's own efficiency: %.3g s, the kernel model %.3g s", to, t4)
	}
}

// GroupQueryAttention on a CPU: each query head copies its KV head's past into the present
// and reads it in its two products, so a decode step's time grows with the past length by
// the bytes per position (per layer: 2 presents zeroed, and per query head K and V copied,
// read and packed) over the cache's rate; the rotary caches are read at the rotated rows only.
func TestGQAOnCPU(t *testing.T) {
	cm := model(testCPU())
	c := small("gqa", true, 4)
	var times []float64
	pasts := []int64{64, 128, 256}
	for _, past := range pasts {
		g := builder(t, c, 1, past)
		tg, k := opTime(cm, g, optype.GroupQueryAttention, 0)
		if k != c.Layers {
			t.Fatalf("%d GroupQueryAttention, want %d", k, c.Layers)
		}
		times = append(times, tg)
		for v := range g.Nodes {
			n := &g.Nodes[v]
			if n.OpType != optype.GroupQueryAttention {
				continue
			}
			kb := cm.KernelExplain(g, []int{v}, n, 0)
			// cos and sin caches of 2048 rows × 16 floats: one row each read.
			if want := float64(2 * 16 * 4); kb.Weights != want {
				t.Errorf("past %d: %s streams %.0f bytes of rotary caches, want %.0f (one row of each)", past, n.Name, kb.Weights, want)
			}
			break
		}
	}
	h, heads, kv := float64(c.HeadSize()), float64(c.Heads), float64(c.KVHeads)
	perPos := float64(c.Layers) * (2*kv*h*4 + 4*2*heads*h*4 + 4*heads*4) // bytes per position
	// Per position per layer: the products' FLOPs and the softmax of one more score per head.
	flopsPos := float64(c.Layers) * (4*heads*h/0.12 + heads*24/0.6) / 100e9
	want := perPos/80e9 + flopsPos // the presents fit in the 1 MiB cache
	for i := 1; i < len(times); i++ {
		slope := (times[i] - times[i-1]) / float64(pasts[i]-pasts[i-1])
		if !relWithin(slope, want, 0.05) {
			t.Errorf("past %d→%d: %.4g s per cached position, want %.4g", pasts[i-1], pasts[i], slope, want)
		}
	}
	if math.IsNaN(times[0]) || times[0] <= 0 {
		t.Fatalf("GQA time %g", times[0])
	}
}

func relWithin(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

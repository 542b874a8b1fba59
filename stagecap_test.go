package onnxpart_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/testmodel"
	"github.com/onnxpart/onnxpart/onnxpb"
	"github.com/onnxpart/onnxpart/schedule/instances"
)

// randWireModel writes a RandWire-like model (Xie et al. 2019): an Erdős–Rényi random DAG of
// n nodes, each summing its predecessors' outputs (the model input for a source), then Relu
// and a 3×3 convolution of ch channels at size×size; the output sums the sinks.
func randWireModel(t *testing.T, n int, p float64, ch, size int64, seed uint64) *ingest.Model {
	t.Helper()
	edges, err := instances.RandomDAG(instances.ER, n, p, 0, 0, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	preds := make([][]int, n)
	succs := make([]int, n)
	for _, e := range edges {
		preds[e[1]] = append(preds[e[1]], e[0])
		succs[e[0]]++
	}
	g := &onnxpb.GraphProto{Name: proto.String("randwire_er"),
		Input:  []*onnxpb.ValueInfoProto{testmodel.VInfo("x", graph.Float, 1, int(ch), int(size), int(size))},
		Output: []*onnxpb.ValueInfoProto{testmodel.VInfo("y", graph.Float, 1, int(ch), int(size), int(size))}}
	ints := func(name string, v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
	}
	var sinks []string
	for v := range n {
		in := []string{"x"}
		if len(preds[v]) > 0 {
			in = nil
			for _, u := range preds[v] {
				in = append(in, fmt.Sprintf("n%d", u))
			}
		}
		sum := in[0]
		if len(in) > 1 {
			sum = fmt.Sprintf("sum%d", v)
			g.Node = append(g.Node, testmodel.Node("Sum", sum, in, []string{sum}))
		}
		relu, w := fmt.Sprintf("relu%d", v), fmt.Sprintf("w%d", v)
		g.Node = append(g.Node, testmodel.Node("Relu", relu, []string{sum}, []string{relu}))
		g.Initializer = append(g.Initializer, testmodel.FloatTensor(w, []int64{ch, ch, 3, 3}, make([]float32, ch*ch*9)...))
		out := fmt.Sprintf("n%d", v)
		g.Node = append(g.Node, testmodel.Node("Conv", "conv"+fmt.Sprint(v), []string{relu, w}, []string{out}, ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1)))
		if succs[v] == 0 {
			sinks = append(sinks, out)
		}
	}
	g.Node = append(g.Node, testmodel.Node("Sum", "out", sinks, []string{"y"}))
	mp := &onnxpb.ModelProto{IrVersion: proto.Int64(8), OpsetImport: testmodel.Opsets(), Graph: g}
	return testmodel.LoadPath(t, testmodel.WriteModel(t, mp))
}

// TestDefaultStageCap (issue 40): a latency plan of a RandWire-like model on a100-80g,t4,cpu
// bounced its ops among the devices in 100+ stages of a few ops each; by default a
// mixed-device placement has at most DefaultStagesPerDevice stages per device, the notes say
// so (and what the uncapped plan would gain, when it is more than a few percent), and
// --stages-per-device 0 (NoStageCap) still gives the uncapped plan.
func TestDefaultStageCap(t *testing.T) {
	m := randWireModel(t, 48, 0.2, 64, 56, 3)
	c, err := hw.Resolve(context.Background(), "a100-80g,t4,cpu", hw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan := func(o onnxpart.Options) *onnxpart.Result {
		t.Helper()
		o.Seed, o.Reproducible, o.TimeLimit = 1, true, time.Minute
		r, err := onnxpart.Plan(context.Background(), m, c, o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	most := func(r *onnxpart.Result) int {
		n := 0
		for _, s := range r.Schedule.Schedule.Stages {
			n = max(n, s)
		}
		return n
	}
	free := plan(onnxpart.Options{StagesPerDevice: onnxpart.NoStageCap})
	capped := plan(onnxpart.Options{})
	t.Logf("uncapped: %d stages, up to %d on a device, %.4g s; default: %d stages, up to %d, %.4g s",
		len(free.Stages), most(free), free.Upper, len(capped.Stages), most(capped), capped.Upper)
	if most(free) <= onnxpart.DefaultStagesPerDevice {
		t.Fatalf("the uncapped plan has at most %d stages per device: the model does not reproduce the fault", most(free))
	}
	if most(capped) > onnxpart.DefaultStagesPerDevice || len(capped.Stages) > 3*onnxpart.DefaultStagesPerDevice {
		t.Errorf("default plan: %d stages, %d on one device; want at most %d per device", len(capped.Stages), most(capped), onnxpart.DefaultStagesPerDevice)
	}
	notes := strings.Join(diag.NoteStrings(capped.Notes), "\n")
	if !strings.Contains(notes, fmt.Sprintf("at most %d stages per device", onnxpart.DefaultStagesPerDevice)) || !strings.Contains(notes, "bound is of the problem without the cap") && !strings.Contains(notes, "is over the plans within the cap") {
		t.Errorf("the notes do not state the cap and what the bound is of:\n%s", notes)
	}
	gain := 1 - free.Upper/capped.Upper
	if said := strings.Contains(notes, "without the cap the plan would take"); said != (gain > onnxpart.MinCapNote*1.01) && gain > onnxpart.MinCapNote*0.99 {
		t.Errorf("uncapped plan %.1f%% faster; note about it: %v\n%s", 100*gain, said, notes)
	}
	if capped.Lower > capped.Upper*(1+1e-9) {
		t.Errorf("bound %g above the capped plan %g", capped.Lower, capped.Upper)
	}
	// -k replaces the default cap; an explicit per-device cap holds.
	if r := plan(onnxpart.Options{StagesPerDevice: 1}); most(r) > 1 {
		t.Errorf("--stages-per-device 1: %d stages on one device", most(r))
	}
}

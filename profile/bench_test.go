package profile_test

import (
	"context"
	"path/filepath"
	"testing"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// benchModel is the bundled ResNet-50 on an A100, a T4 and the host CPU.
func benchModel(b *testing.B) (*graph.Graph, *profile.CostModel) {
	b.Helper()
	m, err := ingest.Load(filepath.Join("..", "testdata", "models", "resnet50_small.onnx"), ingest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := hw.Resolve(context.Background(), "a100-80g,t4,cpu", hw.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return m.Graph, profile.NewCostModel(c, profile.CostOptions{})
}

// BenchmarkNodeTimes prices every node of the model on every device (the roofline with op
// classes and overheads): what Plan's price phase does before any solve.
func BenchmarkNodeTimes(b *testing.B) {
	g, cm := benchModel(b)
	devices := len(cm.Cluster().Devices)
	b.ReportAllocs()
	for b.Loop() {
		for d := range devices {
			for v := range g.Nodes {
				cm.NodeTime(g, v, d)
			}
		}
	}
	b.ReportMetric(float64(len(g.Nodes)*devices), "nodes×devices/op")
}

// BenchmarkCosts builds the whole cost table (node times, transfers, routes, capacities).
func BenchmarkCosts(b *testing.B) {
	g, cm := benchModel(b)
	b.ReportAllocs()
	for b.Loop() {
		cm.Costs(g)
	}
}

// BenchmarkStageTime prices one stage of half the model as a separate runtime call (nodes,
// the call, boundary bytes, layout conversions) on the host CPU.
func BenchmarkStageTime(b *testing.B) {
	g, cm := benchModel(b)
	half := make([]int, len(g.Nodes)/2)
	for i := range half {
		half[i] = i
	}
	host := len(cm.Cluster().Devices) - 1
	b.ReportAllocs()
	for b.Loop() {
		cm.StageTime(g, half, host)
	}
}

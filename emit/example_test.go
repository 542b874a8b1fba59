package emit_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
)

// Write splits a model into stage files and a manifest; EqualFLOPs makes the assignment.
func ExampleWrite() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 3)
	if err != nil {
		log.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "onnxpart-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "stages", RequestedStages: 3}}
	man, err := emit.Write(m, a, filepath.Join(tmp, "out"), emit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(man.Format)
	for _, st := range man.Stages {
		var in []string
		for _, t := range st.Inputs {
			in = append(in, fmt.Sprintf("%s %s %v", t.Name, t.DType, t.Shape))
		}
		fmt.Printf("%s: %d nodes, %d FLOPs, reads %s\n", st.File, len(st.Nodes), st.FLOPs, strings.Join(in, ", "))
	}
	for _, tr := range man.Transfers {
		fmt.Printf("stage %d -> %d: %s (%d bytes)\n", tr.From, tr.To, tr.Tensor, tr.Bytes)
	}
	// Output:
	// onnxpart.manifest/v1
	// stage0.onnx: 25 nodes, 52107776 FLOPs, reads input float32 [1 3 224 224]
	// stage1.onnx: 45 nodes, 53380992 FLOPs, reads /layer1/layer1.2/relu_2/Relu_output_0 float32 [1 32 56 56]
	// stage2.onnx: 52 nodes, 51632509 FLOPs, reads /layer3/layer3.1/relu_2/Relu_output_0 float32 [1 128 14 14], /layer3/layer3.2/conv1/Conv_output_0 float32 [1 32 14 14]
	// stage 0 -> 1: /layer1/layer1.2/relu_2/Relu_output_0 (401408 bytes)
	// stage 1 -> 2: /layer3/layer3.1/relu_2/Relu_output_0 (100352 bytes)
	// stage 1 -> 2: /layer3/layer3.2/conv1/Conv_output_0 (25088 bytes)
}

// CutAfter starts a new stage after each named tensor.
func ExampleCutAfter() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	stage, err := emit.CutAfter(m.Graph, []string{"/layer2/layer2.3/relu_2/Relu_output_0"})
	if err != nil {
		log.Fatal(err)
	}
	count := map[int]int{}
	for _, s := range stage {
		count[s]++
	}
	fmt.Println(count)
	_, err = emit.CutAfter(m.Graph, []string{"/layer2/layer2.3/relu2/Relu_output_0"})
	fmt.Println(err)
	// Output:
	// map[0:54 1:68]
	// cut "/layer2/layer2.3/relu2/Relu_output_0": no tensor of that name in the model (did you mean "/layer2/layer2.3/relu/Relu_output_0"?)
}

// A planner prepares the layout, fills in what it predicted and proved, then writes.
func ExampleNewLayout() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	stage, err := emit.EqualFLOPs(m.Graph, 2)
	if err != nil {
		log.Fatal(err)
	}
	a := &emit.Assignment{Stage: stage, Split: emit.SplitInfo{Method: "my-planner"},
		Devices: []emit.Device{{Name: "gpu0", Provider: "CUDAExecutionProvider"}, {Name: "gpu1", Provider: "CUDAExecutionProvider"}}}
	l, err := emit.NewLayout(m, a, emit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	l.Manifest.Objective = "throughput"
	l.Manifest.Predicted = &emit.Predicted{BottleneckS: 0.002, ThroughputPerS: 500, LatencyS: 0.0035}
	l.Manifest.Bounds = &emit.Bounds{LowerBoundS: 0.0019, Method: "mip", Gap: 0.05}
	l.Manifest.Solver = &emit.Solver{Algorithm: "my-planner", Seed: new(int64(1))}
	tmp, err := os.MkdirTemp("", "onnxpart-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := l.WriteDir(filepath.Join(tmp, "out")); err != nil {
		log.Fatal(err)
	}
	man, err := emit.ReadManifest(filepath.Join(tmp, "out"))
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range man.Stages {
		fmt.Println(st.File, st.Device, st.Provider, st.Pipeline["stage"+fmt.Sprint(st.Index)].SessionOptions.ProviderOptions)
	}
	fmt.Println(man.Objective, man.Bounds.Method, man.Bounds.Gap)
	// Output:
	// stage0.onnx gpu0 CUDAExecutionProvider [map[cuda:map[]]]
	// stage1.onnx gpu1 CUDAExecutionProvider [map[cuda:map[]]]
	// throughput mip 0.05
}

// ReadAssignment reads a JSON object of node names to stage labels; labels need not be in
// pipeline order (NewLayout orders and renumbers the stages).
func ExampleReadAssignment() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("{")
	for v, n := range m.Graph.Nodes {
		label := 7
		if n.Name == "/fc/Gemm" {
			label = 3 // the classifier on its own stage
		}
		if v > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q: %d", n.Label(), label)
	}
	b.WriteString("}")
	stage, err := emit.ReadAssignment(strings.NewReader(b.String()), m.Graph)
	if err != nil {
		log.Fatal(err)
	}
	l, err := emit.NewLayout(m, &emit.Assignment{Stage: stage}, emit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range l.Manifest.Stages {
		fmt.Printf("stage %d (label %d): %d nodes\n", st.Index, st.Label, len(st.Nodes))
	}
	// Output:
	// stage 0 (label 7): 121 nodes
	// stage 1 (label 3): 1 nodes
}

package fusion_test

import (
	"fmt"
	"log"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/ingest"
)

// Coarsen groups a model's nodes into the kernels a backend runs; plans are made on the
// coarse graph and expanded back to the model's nodes for emit.
func ExampleCoarsen() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rs, err := fusion.Builtin("ort-cpu")
	if err != nil {
		log.Fatal(err)
	}
	c, err := fusion.Coarsen(m.Graph, rs)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(c.Orig.Nodes), "nodes ->", len(c.Graph.Nodes), "kernels")

	// Any plan of the coarse graph, here three stages of about equal FLOPs ...
	coarseStage, err := emit.EqualFLOPs(c.Graph, 3)
	if err != nil {
		log.Fatal(err)
	}
	// ... gives a stage to every original node.
	stage, err := c.Expand(coarseStage)
	if err != nil {
		log.Fatal(err)
	}
	perStage := map[int]int{}
	for _, s := range stage {
		perStage[s]++
	}
	fmt.Println("original nodes per stage:", perStage)
	// Output:
	// 122 nodes -> 56 kernels
	// original nodes per stage: map[0:25 1:46 2:51]
}

// Summarize describes a coarsening: groups per rule and the largest groups (WriteText
// prints the same as aligned text).
func ExampleSummarize() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rs, err := fusion.Builtin("ort-cpu")
	if err != nil {
		log.Fatal(err)
	}
	c, err := fusion.Coarsen(m.Graph, rs)
	if err != nil {
		log.Fatal(err)
	}
	s := fusion.Summarize(c, 2)
	for _, r := range s.Rules {
		fmt.Printf("rule %q: %d groups\n", r.Rule, r.Groups)
	}
	for _, g := range s.Largest {
		fmt.Println(g.Name, g.Ops)
	}
	// Output:
	// rule "conv-act": 33 groups
	// rule "conv-add-act": 16 groups
	// rule "": 6 groups
	// rule "views": 1 groups
	// conv-add-act:/layer1/layer1.0/conv3/Conv [Conv Add Relu]
	// conv-add-act:/layer1/layer1.1/conv3/Conv [Conv Add Relu]
}

// BuiltinNames lists the rule sets Builtin knows (the CLI's --fusion choices).
func ExampleBuiltinNames() {
	fmt.Println(fusion.BuiltinNames())
	// Output:
	// [generic none ort-cpu ort-cuda tensorrt]
}

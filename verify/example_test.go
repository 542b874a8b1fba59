package verify_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/verify"
)

// Run runs the model and the chain of stages in ONNX Runtime and compares the outputs.
// ONNX Runtime is loaded from ONNXPART_ORT_LIB, or from the cache `make deps` fills.
func ExampleRun() {
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
	dir := filepath.Join(tmp, "out")
	if _, err := emit.Write(m, &emit.Assignment{Stage: stage}, dir, emit.Options{}); err != nil {
		log.Fatal(err)
	}
	rep, err := verify.Run(context.Background(), dir, verify.Options{Runs: 2, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range rep.Outputs {
		fmt.Println(o.Name, o.DType, o.Shape, "bit-exact:", o.BitExact)
	}
	fmt.Println("pass:", rep.Pass)
	// Output:
	// output float32 [1 125] bit-exact: true
	// pass: true
}

package ingest_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/ingest"
)

// Load reads a model and gives its graph: every tensor with a dtype, shape and size, every
// node with its FLOPs.
func ExampleLoad() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	g := m.Graph
	fmt.Println("nodes:", len(g.Nodes))
	fmt.Println("FLOPs:", g.TotalFLOPs())
	for _, id := range g.Inputs {
		t := g.Tensors[id]
		fmt.Println("input:", t.Name, t.DType, t.Shape, t.Bytes, "bytes")
	}
	for _, id := range g.Outputs {
		t := g.Tensors[id]
		fmt.Println("output:", t.Name, t.DType, t.Shape)
	}
	first := g.Nodes[g.TopoOrder()[0]]
	fmt.Println("first node:", first.Name, first.OpType, first.FLOPs, "FLOPs")
	// Output:
	// nodes: 122
	// FLOPs: 157121277
	// input: input float32 [1,3,224,224] 602112 bytes
	// output: output float32 [1,125]
	// first node: /conv1/Conv Conv 29603840 FLOPs
}

// Summarize gives the object `onnxpart inspect --json` prints.
func ExampleModel_Summarize() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	s := m.Summarize(false)
	fmt.Println("producer:", s.Producer)
	fmt.Println("opsets:", s.Opsets)
	fmt.Println("Conv nodes:", s.Ops["Conv"])
	fmt.Println("params:", s.Params, "elements,", s.ParamsBytes, "bytes")
	fmt.Println("unknown shapes:", s.UnknownShapeTensors)
	// Output:
	// producer: pytorch 1.13.0
	// opsets: map[ai.onnx:14]
	// Conv nodes: 53
	// params: 402957 elements, 1611828 bytes
	// unknown shapes: 0
}

// Binding a dimension the model does not have is a usage error (the CLI exits with 2).
func Example_usageError() {
	_, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{Dims: map[string]int64{"batch": 8}})
	fmt.Println(diag.KindOf(err), diag.ExitCode(err))
	fmt.Println(err)
	// Output:
	// usage 2
	// Options.Dims["batch"] = 8: the model has no symbolic dimensions (unnamed input dimensions are bound with Options.InputShapes["NAME"] = SHAPE)
}

// Problems with the input model come back as a *diag.Error about the file (the CLI exits
// with 1).
func Example_inputError() {
	_, err := ingest.Load("testdata/no-such-model.onnx", ingest.Options{})
	var de *diag.Error
	fmt.Println(errors.As(err, &de), de.Kind, de.Subject.Kind, de.Subject.Name)
	fmt.Println(err)
	// Output:
	// true input file testdata/no-such-model.onnx
	// testdata/no-such-model.onnx: no such file
}

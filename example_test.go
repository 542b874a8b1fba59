package onnxpart_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onnxpart/onnxpart"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/verify"
)

// Plan a bundled ResNet-50 on two catalog GPUs, write the stages and check them in ONNX
// Runtime.
func ExamplePlan() {
	ctx := context.Background()
	m, err := ingest.Load("testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := hw.Resolve(ctx, "2xA100-80G", hw.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := onnxpart.Plan(ctx, m, c, onnxpart.Options{TimeLimit: 20 * time.Second, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("objective:", r.Objective)
	fmt.Println("stages:", len(r.Stages))
	fmt.Println("certified within 1%:", r.Gap <= 0.01)

	dir, _ := os.MkdirTemp("", "onnxpart-example-")
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")
	l, err := onnxpart.Prepare(m, r, emit.Options{}, 1)
	if err == nil {
		err = l.WriteDir(out)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := verify.Run(ctx, out, verify.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stages compute the model:", rep.Pass)
	// Output:
	// objective: throughput
	// stages: 2
	// certified within 1%: true
	// stages compute the model: true
}

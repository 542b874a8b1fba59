package profile_test

import (
	"context"
	"fmt"
	"log"

	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/profile"
)

// Resolve describes devices from a --devices value; every figure carries its source.
func ExampleResolve() {
	cl, err := hw.Resolve(context.Background(), "a100-80g,t4", hw.Options{})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range cl.Devices {
		fmt.Printf("%s: %s (%s), %s memory from the %s, fp16 %s\n", d.Name, d.Model, d.Kind,
			profile.FormatQuantity(d.Memory.Value, profile.Bytes), d.Memory.Source,
			profile.FormatQuantity(d.Peak[profile.FP16].Value, profile.FLOPRate))
	}
	l := cl.Links[0][1]
	fmt.Printf("gpu0 -> gpu1: %s (%s)\n", l.Kind, l.Name)
	// Output:
	// gpu0: NVIDIA A100-SXM4-80GB (gpu), 80 GiB memory from the catalog, fp16 312 TFLOP/s
	// gpu1: NVIDIA T4 (gpu), 16 GiB memory from the catalog, fp16 65 TFLOP/s
	// gpu0 -> gpu1: pcie (pcie p2p)
}

// A cost model prices every node on every device; Costs gives the plain arrays the
// partition and schedule solvers take.
func ExampleNewCostModel() {
	m, err := ingest.Load("../testdata/models/resnet50_small.onnx", ingest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	cl, err := hw.Resolve(context.Background(), "a100-80g,t4", hw.Options{})
	if err != nil {
		log.Fatal(err)
	}
	cm := profile.NewCostModel(cl, profile.CostOptions{})
	tab := cm.Costs(m.Graph)
	fmt.Println("devices:", tab.Devices)
	fmt.Println("node times per device:", len(tab.Node[0]), len(tab.Node[1]))
	var a100, t4 float64
	for v := range m.Graph.Nodes {
		a100 += tab.Node[0][v]
		t4 += tab.Node[1][v]
	}
	fmt.Println("faster on the A100:", a100 < t4)
	// Moving the 602 kB input between the devices takes bytes/bandwidth + latency.
	fmt.Println("transfer costs time:", cm.TransferTime(602112, 0, 1) > 0, "and is free on one device:", cm.TransferTime(602112, 0, 0) == 0)
	// Output:
	// devices: [gpu0 gpu1]
	// node times per device: 122 122
	// faster on the A100: true
	// transfer costs time: true and is free on one device: true
}

// LookupCatalog finds a built-in device by id or alias (Catalog lists them all).
func ExampleLookupCatalog() {
	e, ok := hw.LookupCatalog("h100")
	if !ok {
		log.Fatal("no h100 in the catalog")
	}
	fmt.Println(e.ID, e.Model, e.Kind, profile.FormatQuantity(e.Memory.Value, profile.Bytes))
	// Output:
	// h100-sxm NVIDIA H100 SXM5 80GB gpu 80 GiB
}

package report

import (
	"fmt"
	"math"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
)

// sampleManifest builds a k-stage manifest by hand, with hostile names (tags, quotes,
// ampersands) in the model, devices and tensors. With predicted, it carries per-stage
// predictions, pipeline predictions and bounds as a throughput planner writes them.
func sampleManifest(k int, predicted bool) *emit.Manifest {
	m := &emit.Manifest{
		Format: emit.Format,
		Model: emit.ModelInfo{Path: "models/<evil>.onnx", File: "<evil>.onnx", SHA256: "ab12", FileBytes: 123456,
			IRVersion: 8, Opsets: map[string]int64{"ai.onnx": 17, "com.microsoft": 1}, Nodes: 10 * k,
			ParamsBytes: int64(k) << 20, FLOPs: int64(k) * 3e9, Dims: map[string]int64{"batch": 2},
			Inputs:  []emit.TensorRef{{Name: "in<put>", DType: "float32", Shape: emit.Shape{graph.Static(2), graph.Symbolic("seq")}, Bytes: -1, Stage: -1, ModelInput: true}},
			Outputs: []emit.TensorRef{{Name: "out&\"put\"", DType: "float16", Shape: emit.Shape{graph.Static(2), graph.Static(10)}, Bytes: 40, Stage: k - 1, ModelOutput: true}}},
		Split: emit.SplitInfo{Method: "stages", RequestedStages: k},
		Notes: diag.Infos("a note with <b>markup</b>"),
	}
	for i := 0; i < k; i++ {
		dev := fmt.Sprintf("gpu%d<x>", i)
		m.Devices = append(m.Devices, emit.DeviceInfo{Name: dev, Provider: "CUDAExecutionProvider", Kind: "gpu", MemoryBytes: 8 << 20})
		st := emit.Stage{Index: i, Label: i, Device: dev, Provider: "CUDAExecutionProvider", File: fmt.Sprintf("stage%d.onnx", i),
			Nodes: []string{fmt.Sprintf("<node%d>", i)}, FLOPs: int64(i+1) * 1e9, Weights: 2, ParamsBytes: int64(i+1) << 20}
		if i == 0 {
			st.Inputs = append(st.Inputs, m.Model.Inputs[0])
		} else {
			st.Inputs = append(st.Inputs, emit.TensorRef{Name: fmt.Sprintf("t%d<", i-1), DType: "float32", Shape: emit.Shape{graph.Static(2), graph.Static(256)}, Bytes: 2048, Stage: i - 1})
		}
		if i < k-1 {
			st.Outputs = append(st.Outputs, emit.TensorRef{Name: fmt.Sprintf("t%d<", i), DType: "float32", Shape: emit.Shape{graph.Static(2), graph.Static(256)}, Bytes: 2048, Stage: i, Consumers: []int{i + 1}})
			m.Transfers = append(m.Transfers, emit.Transfer{Tensor: fmt.Sprintf("t%d<", i), From: i, To: i + 1, Bytes: 2048})
		} else {
			st.Outputs = append(st.Outputs, m.Model.Outputs[0])
		}
		m.Stages = append(m.Stages, st)
	}
	if k >= 3 {
		// A tensor that skips a stage.
		m.Transfers = append(m.Transfers, emit.Transfer{Tensor: "skip>", From: 0, To: 2, Bytes: 1 << 20})
	}
	if predicted {
		fillPredictions(m, 1e12, 10e9)
	}
	return m
}

// fillPredictions prices a manifest as a simple throughput planner would: compute at
// flopRate plus 20 µs per stage, outputs sent at bandwidth, and bounds below the plan
// (the best one, "mip", at 97% of the bottleneck).
func fillPredictions(m *emit.Manifest, flopRate, bandwidth float64) {
	m.Objective = "throughput"
	var bott, lat, work float64
	for i := range m.Stages {
		st := &m.Stages[i]
		var out int64
		for _, t := range st.Outputs {
			if !t.ModelOutput {
				out += max(t.Bytes, 0)
			}
		}
		p := &emit.StagePrediction{ComputeS: float64(st.FLOPs)/flopRate + 20e-6, CommS: float64(out) / bandwidth}
		if i == len(m.Stages)-1 && i > 0 {
			p.OverflowS = 15e-6
		}
		p.TotalS = p.ComputeS + p.CommS + p.OverflowS
		st.Predicted = p
		bott = math.Max(bott, p.TotalS)
		lat += p.TotalS
		work += p.ComputeS
	}
	m.Predicted = &emit.Predicted{BottleneckS: bott, ThroughputPerS: 1 / bott, LatencyS: lat}
	lower := 0.97 * bott
	m.Bounds = &emit.Bounds{LowerBoundS: lower, Method: "mip", Gap: 1 - lower/bott, Computed: []emit.BoundValue{
		{Method: "simple", LowerBoundS: work / float64(len(m.Stages)), Seconds: 1e-5},
		{Method: "bottleneck", LowerBoundS: 0.9 * bott, Seconds: 2e-3},
		{Method: "mip", LowerBoundS: lower, Seconds: 1.5},
	}}
	m.Solver = &emit.Solver{Algorithm: "brkga<x>", Seed: new(int64(7)), Seconds: 2.25}
	for _, d := range m.Devices {
		var used int64
		for _, s := range m.Stages {
			if s.Device == d.Name {
				used += s.ParamsBytes + 4096
			}
		}
		m.Memory = append(m.Memory, emit.DeviceMemory{Device: d.Name, UsedBytes: used, CapacityBytes: 3 << 20})
	}
}

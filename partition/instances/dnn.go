// Package instances builds partition.Problem values from sources other than ONNX: the
// dnn-partitioning JSON instances of Tarnawski et al. (NeurIPS 2020), a REGAL-like random
// generator following seed 000 §C.2, and layered synthetic DAGs for scaling runs.
//
// What goes in: a JSON file, or a seed and a size. What comes out: a validated
// *partition.Problem plus whatever the source knows about it (file node ids, reference optima).
package instances

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"onnxpart/partition"
)

// dnnFile is the JSON layout of a dnn-partitioning instance.
type dnnFile struct {
	MaxSizePerFPGA float64   `json:"maxSizePerFPGA"`
	MaxFPGAs       int       `json:"maxFPGAs"`
	MaxCPUs        int       `json:"maxCPUs"`
	Nodes          []dnnNode `json:"nodes"`
	Edges          []dnnEdge `json:"edges"`
}

type dnnNode struct {
	Name            string   `json:"name"`
	ID              int      `json:"id"`
	SupportedOnFpga flexBool `json:"supportedOnFpga"`
	CPULatency      float64  `json:"cpuLatency"`
	FPGALatency     float64  `json:"fpgaLatency"`
	IsBackwardNode  flexBool `json:"isBackwardNode"`
	ColorClass      *int     `json:"colorClass"`
	Size            float64  `json:"size"`
}

type dnnEdge struct {
	SourceID int     `json:"sourceId"`
	DestID   int     `json:"destId"`
	Cost     float64 `json:"cost"`
}

// flexBool accepts true/false and 0/1, as the files use both.
type flexBool bool

// UnmarshalJSON accepts true, false, 0 and 1.
func (b *flexBool) UnmarshalJSON(data []byte) error {
	switch strings.TrimSpace(string(data)) {
	case "true", "1", "1.0":
		*b = true
	case "false", "0", "0.0", "null":
		*b = false
	default:
		return fmt.Errorf("not a boolean: %s", data)
	}
	return nil
}

// DNN is a loaded dnn-partitioning instance.
type DNN struct {
	Name    string
	Problem *partition.Problem
	// IDs are the file's node ids, by node index.
	IDs []int
	// FileK and FileCPUs are the file's maxFPGAs and maxCPUs.
	FileK, FileCPUs int
}

// LoadDNN reads a dnn-partitioning JSON file into an MTPP problem with k accelerator stages
// (k ≤ 0: the file's maxFPGAs) and cpus extra CPU stages (cpus < 0: the file's maxCPUs).
//
// The mapping follows the benchmark README: node work is fpgaLatency; every out-edge of a
// node carries the same cost c(u), which becomes one tensor of size c(u) with bandwidth 1;
// nodes sharing a colorClass must share a stage; node `size` is parameter bytes, capped per
// accelerator stage by maxSizePerFPGA (no overflow term). A CPU stage runs cpuLatency and pays
// no communication (bandwidth +Inf) and has no memory cap; the solver places it anywhere in
// the chain.
func LoadDNN(path string, k, cpus int) (*DNN, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f dnnFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not a dnn-partitioning instance: %v", path, err)
	}
	if len(f.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", path)
	}
	if k <= 0 {
		k = f.MaxFPGAs
	}
	if cpus < 0 {
		cpus = f.MaxCPUs
	}
	idx := map[int]int{}
	n := len(f.Nodes)
	p := &partition.Problem{Name: strings.TrimSuffix(filepath.Base(path), ".json"), Work: make([]float64, n),
		Params: make([]float64, n), NodeNames: make([]string, n), Bandwidth: 1}
	d := &DNN{Problem: p, IDs: make([]int, n), FileK: f.MaxFPGAs, FileCPUs: f.MaxCPUs}
	cpuWork := make([]float64, n)
	classes := map[int][]int{}
	for i, nd := range f.Nodes {
		if _, dup := idx[nd.ID]; dup {
			return nil, fmt.Errorf("%s: node id %d appears twice", path, nd.ID)
		}
		idx[nd.ID] = i
		d.IDs[i] = nd.ID
		p.NodeNames[i] = nd.Name
		if p.NodeNames[i] == "" {
			p.NodeNames[i] = fmt.Sprintf("node%d", nd.ID)
		}
		if !nd.SupportedOnFpga {
			return nil, fmt.Errorf("%s: node %d is not supported on accelerators; not modelled", path, nd.ID)
		}
		p.Work[i] = nd.FPGALatency
		cpuWork[i] = nd.CPULatency
		p.Params[i] = nd.Size
		if nd.ColorClass != nil {
			classes[*nd.ColorClass] = append(classes[*nd.ColorClass], i)
		}
	}
	type out struct {
		cons []int
		cost float64
	}
	outs := map[int]*out{}
	for _, e := range f.Edges {
		s, ok1 := idx[e.SourceID]
		t, ok2 := idx[e.DestID]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: edge %d -> %d names an unknown node", path, e.SourceID, e.DestID)
		}
		o := outs[s]
		if o == nil {
			o = &out{cost: e.Cost}
			outs[s] = o
		}
		if e.Cost != o.cost {
			// The format promises one cost per source; keep the largest if a file breaks it.
			o.cost = math.Max(o.cost, e.Cost)
		}
		o.cons = append(o.cons, t)
	}
	srcs := make([]int, 0, len(outs))
	for s := range outs {
		srcs = append(srcs, s)
	}
	sort.Ints(srcs)
	for _, s := range srcs {
		o := outs[s]
		p.Tensors = append(p.Tensors, partition.Tensor{Name: p.NodeNames[s], Producer: s, Consumers: o.cons, Size: o.cost})
	}
	keys := make([]int, 0, len(classes))
	for c := range classes {
		keys = append(keys, c)
	}
	sort.Ints(keys)
	for _, c := range keys {
		if len(classes[c]) > 1 {
			p.Colocate = append(p.Colocate, classes[c])
		}
	}
	if cpus > 0 {
		p.Devices = []partition.Device{
			{Name: "accelerator", Count: k, MemoryCap: f.MaxSizePerFPGA},
			{Name: "cpu", Count: cpus, Work: cpuWork, Bandwidth: math.Inf(1)},
		}
	} else {
		p.K = k
		p.MemoryCap = f.MaxSizePerFPGA
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	d.Name = p.Name
	return d, nil
}

// DNNReference is one row of the reference table in the benchmark README: the optimum of
// Tarnawski et al.'s DP without and with the file's CPU, and their PipeDream baseline.
type DNNReference struct {
	Instance  string // path relative to the benchmark directory
	K         int
	NoCPU     float64
	WithCPU   float64
	PipeDream float64
}

// DNNReferences is the README table (their DP, compiled from the public source).
var DNNReferences = []DNNReference{
	{"LayerGraphs/bert24_inference.json", 2, 47.4789531, 44.9309531, 47.4789531},
	{"LayerGraphs/bert24_inference.json", 4, 24.9169063, 24.9169063, 24.9169063},
	{"LayerGraphs/bert24_inference.json", 6, 17.7899063, 17.7899063, 17.7899063},
	{"LayerGraphs/bert24_inference.json", 8, 14.2039063, 14.2039063, 14.2039063},
	{"LayerGraphs/resnet50_inference.json", 2, 101.281406, 96.3156289, 101.729703},
	{"LayerGraphs/resnet50_inference.json", 4, 50.9898516, 49.9654063, 52.1471094},
	{"LayerGraphs/resnet50_inference.json", 6, 34.2228516, 33.774666, 39.3981094},
	{"LayerGraphs/resnet50_inference.json", 8, 26.7611836, 26.2985156, 30.0838516},
	{"OperatorGraphs/bert_l-3_inference.json", 2, 33.9891016, 29.3798277, 37.4557298},
	{"OperatorGraphs/bert_l-3_inference.json", 3, 27.9185677, 27.9185677, 37.4557298},
	{"OperatorGraphs/bert_l-3_inference.json", 4, 27.9185677, 27.9185677, 37.4557298},
	{"OperatorGraphs/bert_l-3_inference.json", 8, 27.9185677, 27.9185677, 37.4557298},
	{"OperatorGraphs/bert_l-6_inference.json", 2, 47.0178509, 43.3644703, 65.5646698},
	{"OperatorGraphs/bert_l-6_inference.json", 3, 33.9891016, 29.5795058, 65.5646698},
	{"OperatorGraphs/bert_l-6_inference.json", 4, 27.9185677, 27.9185677, 65.5646698},
	{"OperatorGraphs/bert_l-6_inference.json", 8, 27.9185677, 27.9185677, 65.5646698},
	{"OperatorGraphs/resnet50_inference.json", 2, 194.438966, 188.622454, 200.087337},
	{"OperatorGraphs/resnet50_inference.json", 4, 151.125659, 151.125659, 151.125659},
	{"OperatorGraphs/resnet50_inference.json", 6, 128.073511, 124.34885, 129.155166},
	{"OperatorGraphs/resnet50_inference.json", 8, 124.34885, 124.34885, 129.155166},
}

// MatchesReference reports whether an objective equals a README value, which is printed to 9
// significant digits: |ours − ref| ≤ half a unit in the 9th digit (≤ 5e-9 relative), plus
// 1e-9 relative for our own rounding.
func MatchesReference(ours, ref float64) bool {
	if ref == 0 {
		return math.Abs(ours) <= 1e-12
	}
	half := 0.5 * math.Pow(10, math.Floor(math.Log10(math.Abs(ref)))-8)
	return math.Abs(ours-ref) <= half+1e-9*math.Abs(ref)
}

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

	"github.com/onnxpart/onnxpart/partition"
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
// accelerator stage by maxSizePerFPGA (no overflow term). Training instances (nodes with
// isBackwardNode) follow the authors' model: only forward → forward edges order the stages,
// every other edge costs communication only (partition.Tensor.Unordered), a backward node
// shares its forward node's stage through the colour class, and a class of backward nodes
// only is ordered by its mirrored backward edges; a backward → forward edge is an error. A CPU stage runs cpuLatency and pays
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
	training := false
	for _, nd := range f.Nodes {
		if nd.IsBackwardNode {
			training = true
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
		if s == t {
			return nil, fmt.Errorf("%s: edge %d -> %d is a self-loop", path, e.SourceID, e.DestID)
		}
		if f.Nodes[s].IsBackwardNode && !f.Nodes[t].IsBackwardNode {
			return nil, fmt.Errorf("%s: edge %d -> %d runs from a backward node to a forward node; the training format has none", path, e.SourceID, e.DestID)
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
	if training {
		// The whole file must be a DAG (their dp.cpp checks the same); the stage order then
		// comes from the forward edges alone.
		if cyc := edgeCycle(n, srcs, func(s int) []int { return outs[s].cons }); cyc != nil {
			return nil, fmt.Errorf("%s: the edges have a cycle through node %d", path, d.IDs[cyc[0]])
		}
	}
	for _, s := range srcs {
		o := outs[s]
		name := p.NodeNames[s]
		if !training {
			p.Tensors = append(p.Tensors, partition.Tensor{Name: name, Producer: s, Consumers: o.cons, Size: o.cost})
			continue
		}
		// Training (Tarnawski et al. 2020, §5 and their dp.cpp): a node's output costs c(u)
		// once for every stage that holds some but not all of it and its consumers, whichever
		// way the edges run, and only forward → forward edges order the stages. A source whose
		// edges are all forward → forward keeps one ordered tensor; any other gets a cost-only
		// tensor and a zero-size ordered one for its forward consumers.
		var fwd []int
		for _, t := range o.cons {
			if !f.Nodes[s].IsBackwardNode && !f.Nodes[t].IsBackwardNode {
				fwd = append(fwd, t)
			}
		}
		if len(fwd) == len(o.cons) {
			p.Tensors = append(p.Tensors, partition.Tensor{Name: name, Producer: s, Consumers: o.cons, Size: o.cost})
			continue
		}
		p.Tensors = append(p.Tensors, partition.Tensor{Name: name, Producer: s, Consumers: o.cons, Size: o.cost, Unordered: true})
		if len(fwd) > 0 {
			p.Tensors = append(p.Tensors, partition.Tensor{Name: name + " (order)", Producer: s, Consumers: fwd})
		}
	}
	if training {
		// A colour class with backward nodes only ("orphaned") has no forward node to place
		// it; dp.cpp gives it an artificial one, ordered by mirroring the backward edges that
		// touch it: ub → vb becomes vf → uf. The same order, as zero-size ordered tensors.
		hasForward := map[int]bool{}
		classOf := make([]int, n)
		fresh := -1
		for i, nd := range f.Nodes {
			if nd.ColorClass != nil {
				classOf[i] = *nd.ColorClass
			} else {
				classOf[i] = fresh // a class of its own
				fresh--
			}
			if !nd.IsBackwardNode {
				hasForward[classOf[i]] = true
			}
		}
		for _, s := range srcs {
			if !f.Nodes[s].IsBackwardNode {
				continue
			}
			for _, t := range outs[s].cons {
				if hasForward[classOf[s]] && hasForward[classOf[t]] {
					continue
				}
				p.Tensors = append(p.Tensors, partition.Tensor{Name: p.NodeNames[t] + " (mirrored order)", Producer: t, Consumers: []int{s}})
			}
		}
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
	// The format's cap is hard and 0 means 0 bytes (their dp.cpp refuses any stage above it);
	// a Problem's 0 means "no cap", so 0 becomes the smallest positive cap: nodes of size 0
	// still fit, any other does not.
	memCap := f.MaxSizePerFPGA
	if memCap < 0 || math.IsNaN(memCap) {
		return nil, fmt.Errorf("%s: maxSizePerFPGA is %v; it must be ≥ 0", path, memCap)
	}
	if memCap == 0 {
		memCap = math.SmallestNonzeroFloat64
	}
	if cpus > 0 {
		p.Devices = []partition.Device{
			{Name: "accelerator", Count: k, MemoryCap: memCap},
			{Name: "cpu", Count: cpus, Work: cpuWork, Bandwidth: math.Inf(1)},
		}
	} else {
		p.K = k
		p.MemoryCap = memCap
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	d.Name = p.Name
	return d, nil
}

// edgeCycle returns the nodes of a cycle of the edges s → succ(s), or nil.
func edgeCycle(n int, srcs []int, succ func(int) []int) []int {
	adj := make([][]int, n)
	for _, s := range srcs {
		adj[s] = succ(s)
	}
	state := make([]uint8, n)
	var cyc []int
	var visit func(v int) bool
	visit = func(v int) bool {
		state[v] = 1
		for _, w := range adj[v] {
			if state[w] == 1 {
				cyc = []int{w}
				return true
			}
			if state[w] == 0 && visit(w) {
				return true
			}
		}
		state[v] = 2
		return false
	}
	for v := 0; v < n; v++ {
		if state[v] == 0 && visit(v) {
			return cyc
		}
	}
	return nil
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

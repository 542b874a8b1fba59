package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	"github.com/onnxpart/onnxpart/internal/units"
)

// inspectNode is one node of `inspect --nodes` (JSON: the inspect schema's node_list): what
// Polygraphy's `inspect model --show layers` shows, with onnxpart's cost figures.
type inspectNode struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	// Op is the op type, domain-qualified outside ONNX (com.microsoft.FusedConv).
	Op      string              `json:"op"`
	Inputs  []ingest.TensorInfo `json:"inputs"`
	Outputs []ingest.TensorInfo `json:"outputs"`
	FLOPs   int64               `json:"flops"`
	// ParamBytes are the bytes of the initializers the node reads; ActivationBytes the
	// bytes of its outputs (-1 when some output's size is unknown).
	ParamBytes      int64 `json:"param_bytes"`
	ActivationBytes int64 `json:"activation_bytes"`
	// Stages are the stages that compute the node, for an output directory (several when
	// the node is duplicated).
	Stages []int `json:"stages,omitempty"`
}

// inspectStage is one stage of an output directory in `inspect DIR` (JSON: stage_list).
type inspectStage struct {
	Index      int    `json:"index"`
	Device     string `json:"device"`
	File       string `json:"file"`
	Nodes      []int  `json:"node_indices"`
	FLOPs      int64  `json:"flops"`
	ParamBytes int64  `json:"params_bytes"`
}

// nodeRows lists the nodes of g in graph order.
func nodeRows(g *graph.Graph) []inspectNode {
	rows := make([]inspectNode, len(g.Nodes))
	for i := range g.Nodes {
		n := &g.Nodes[i]
		r := inspectNode{Index: i, Name: n.Label(), Op: n.OpType, FLOPs: n.FLOPs, ParamBytes: n.ParamBytes,
			Inputs: []ingest.TensorInfo{}, Outputs: []ingest.TensorInfo{}}
		if n.Domain != "" {
			r.Op = n.Domain + "." + n.OpType
		}
		for _, id := range n.Inputs {
			if id >= 0 {
				r.Inputs = append(r.Inputs, ingest.Info(g, id, false))
			}
		}
		for _, id := range n.Outputs {
			if id < 0 {
				continue
			}
			ti := ingest.Info(g, id, false)
			r.Outputs = append(r.Outputs, ti)
			switch {
			case r.ActivationBytes < 0:
			case ti.Bytes < 0:
				r.ActivationBytes = -1
			default:
				r.ActivationBytes += ti.Bytes
			}
		}
		rows[i] = r
	}
	return rows
}

// outputDir reports whether path is an onnxpart output directory (it holds a manifest).
func outputDir(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	_, err = os.Stat(filepath.Join(path, emit.ManifestFile))
	return err == nil
}

// loadOutputDir reads an output directory's manifest and loads its model with the sizes it
// was planned with (--dim given here overrides them).
func loadOutputDir(dir string, dims map[string]int64) (*ingest.Model, *emit.Manifest, error) {
	man, err := emit.ReadManifest(dir)
	if err != nil {
		return nil, nil, diag.Input("%s: %v", dir, err)
	}
	all := map[string]int64{}
	for k, v := range man.Model.Dims {
		all[k] = v
	}
	for k, v := range dims {
		all[k] = v
	}
	m, err := ingest.Load(man.ModelFile(dir), ingest.Options{Dims: all})
	if err != nil {
		return nil, nil, err
	}
	return m, man, nil
}

// stageList assigns the nodes to the manifest's stages (rows[i].Stages) and lists the stages.
func stageList(g *graph.Graph, man *emit.Manifest, rows []inspectNode) []inspectStage {
	index := map[string]int{}
	for i := range g.Nodes {
		if _, dup := index[g.Nodes[i].Label()]; !dup {
			index[g.Nodes[i].Label()] = i
		}
	}
	var out []inspectStage
	for _, st := range man.Stages {
		si := inspectStage{Index: st.Index, Device: st.Device, File: st.File, Nodes: []int{}, FLOPs: st.FLOPs, ParamBytes: st.ParamsBytes}
		for _, name := range st.Nodes {
			if i, ok := index[name]; ok {
				si.Nodes = append(si.Nodes, i)
				rows[i].Stages = append(rows[i].Stages, st.Index)
			}
		}
		// Graph order within the stage.
		sortInts(si.Nodes)
		out = append(out, si)
	}
	return out
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// printNodes writes the per-node table: with stages, one table per stage under a heading.
func printNodes(w io.Writer, rows []inspectNode, stages []inspectStage, man *emit.Manifest) {
	if stages == nil {
		fmt.Fprintf(w, "\nnodes (%d, in graph order):\n", len(rows))
		nodeTable(w, rows, nil)
		return
	}
	for _, st := range stages {
		dev := st.Device
		for _, d := range man.Devices {
			if d.Name == st.Device && d.Model != "" && d.Model != d.Name {
				dev += " (" + strings.TrimPrefix(d.Model, "NVIDIA ") + ")"
			}
		}
		fmt.Fprintf(w, "\nstage %d on %s, %s: %s, %s, params %s\n", st.Index, dev, st.File, plural(len(st.Nodes), "node"), flopsStr(st.FLOPs), units.Bytes(st.ParamBytes))
		nodeTable(w, rows, st.Nodes)
	}
	var none []int
	for i := range rows {
		if len(rows[i].Stages) == 0 {
			none = append(none, i)
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(w, "\nin no stage (%s):\n", plural(len(none), "node"))
		nodeTable(w, rows, none)
	}
}

// nodeTable writes rows (those listed in which, or all) as a table; the last column holds
// the inputs and outputs with dtypes and shapes.
func nodeTable(w io.Writer, rows []inspectNode, which []int) {
	tw := newTable(w, 0)
	fmt.Fprintln(tw, "  #\top\tname\tflops\tparams\tactivations\tinputs → outputs")
	emitRow := func(r inspectNode) {
		act := "?"
		if r.ActivationBytes >= 0 {
			act = units.Bytes(r.ActivationBytes)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s → %s\n", r.Index, r.Op, r.Name, flopsStr(r.FLOPs), units.Bytes(r.ParamBytes), act,
			tensorList(r.Inputs), tensorList(r.Outputs))
	}
	if which == nil {
		for _, r := range rows {
			emitRow(r)
		}
	} else {
		for _, i := range which {
			emitRow(rows[i])
		}
	}
	tw.Flush()
}

// tensorList writes tensors as "x float32[1,3,224,224], w float32[64,3,7,7]".
func tensorList(ts []ingest.TensorInfo) string {
	if len(ts) == 0 {
		return "-"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Name + " " + t.DType + shapeStr(t.Shape)
	}
	return strings.Join(parts, ", ")
}

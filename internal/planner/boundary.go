// Stage boundaries of host CPU pipelines with measured call costs (measured costs): what a
// stage pays as one ONNX Runtime call beyond its nodes, priced as profile.CostModel.StageTime
// prices it.

package planner

import (
	"fmt"
	"slices"

	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/profile"
)

// boundaryScale is the partition bandwidth of priced boundaries: tensor sizes are then
// nanoseconds of boundary cost.
const boundaryScale = 1e9

// stageBoundary is StageTime's boundary pricing for a pipeline's (identical) devices: cut[t]
// is what a stage pays at either end of a cut through tensor t of the model graph
// (CostModel.CutTimes: its bytes through the binding and, where both ends convert it, between
// layouts), io(b) what a stage pays for b bytes of graph inputs or outputs.
type stageBoundary struct {
	cut []float64
	io  func(bytes int64) float64
}

// newStageBoundary returns the boundary pricing of a throughput pipeline on devs, or nil
// when the plan keeps the link model: StageTime's terms are priced when every device is a CPU
// whose call costs were measured on this machine (profile.Device.CallCalibrated, which
// measure.CalibrateHost makes so) and the devices are identical, with the same call figures.
// Catalog and default devices have no such figures, so their plans do not change.
func newStageBoundary(c *profile.Cluster, cm *profile.CostModel, g *graph.Graph, devs []int) *stageBoundary {
	if len(devs) == 0 || !identicalDevices(c, devs) {
		return nil
	}
	a := &c.Devices[devs[0]]
	for _, d := range devs {
		b := &c.Devices[d]
		if !b.CallCalibrated() || b.RunOverhead.Value != a.RunOverhead.Value || b.IOBandwidth.Value != a.IOBandwidth.Value ||
			b.LayoutBandwidth.Value != a.LayoutBandwidth.Value || b.VectorWidth != a.VectorWidth || b.ChannelAlign != a.ChannelAlign {
			return nil
		}
	}
	d0 := devs[0]
	return &stageBoundary{cut: cm.CutTimes(g, d0), io: func(b int64) float64 { return cm.IOTime(b, d0) }}
}

// note describes the pricing for the plan's notes.
func (b *stageBoundary) note(d *profile.Device) string {
	layout := "no layout conversions (no blocked layout measured)"
	if v := d.LayoutBandwidth.Value; v > 0 {
		layout = fmt.Sprintf("blocked-layout conversions at %s", profile.FormatQuantity(v, profile.Rate))
	}
	io := "free"
	if v := d.IOBandwidth.Value; v > 0 {
		io = profile.FormatQuantity(v, profile.Rate)
	}
	return fmt.Sprintf("stages priced as one ONNX Runtime call each, as measured on this CPU: %s per call, boundary tensors through the binding at %s, %s",
		profile.FormatQuantity(d.RunOverhead.Value, profile.Seconds), io, layout)
}

// foldedBoundary is a stageBoundary laid onto the work graph the partition solves:
// sizes of the work graph's tensors, and the graph inputs and outputs folded into the work
// of the nodes that read or write them.
type foldedBoundary struct {
	cutNS  []float64 // per work tensor: cut cost in nanoseconds
	folded []float64 // per work node: graph I/O added to its work, seconds
}

// work returns times with the folded graph I/O added.
func (f *foldedBoundary) work(times []float64) []float64 {
	out := make([]float64, len(times))
	for v, t := range times {
		out[v] = t + f.folded[v]
	}
	return out
}

// size is the partition size of work tensor t.
func (f *foldedBoundary) size(t int) float64 { return f.cutNS[t] }

// foldBoundary lays b onto work, the graph the partition solves (fine itself, or the
// coarse graph of fine's fused groups). A graph output costs its producer's stage its bytes
// through the binding (folded into the producer's work; when the output is also read by a
// later stage, the producer's stage pays the cut as well, once more than StageTime charges).
// A graph input costs the stage of its first reader (its bytes through the binding, folded
// into that work node): StageTime charges every stage that reads it, so an input read in
// several stages is priced once, not in each (a cost-only tensor among the readers would
// price it there but is not ordered, and the partition's directional bounds refuse such
// tensors). The models' inputs are read by one node, or by nodes of one stage, as a rule.
func foldBoundary(work, fine *graph.Graph, coarse *fusion.Grouping, b *stageBoundary) *foldedBoundary {
	if fine == nil {
		fine = work
	}
	toWork := func(v int) int {
		if coarse == nil {
			return v
		}
		return coarse.GroupOf[v]
	}
	f := &foldedBoundary{cutNS: make([]float64, len(work.Tensors)), folded: make([]float64, len(work.Nodes))}
	for t := range work.Tensors {
		o, ok := fine.TensorByName(work.Tensors[t].Name)
		if !ok {
			continue
		}
		f.cutNS[t] = boundaryScale * b.cut[o]
	}
	for t := range fine.Tensors {
		tn := &fine.Tensors[t]
		if !tn.IsOutput || tn.Producer < 0 || fine.Nodes[tn.Producer].Static {
			continue
		}
		f.folded[toWork(tn.Producer)] += b.io(tn.Bytes)
	}
	for _, t := range fine.Inputs {
		tn := &fine.Tensors[t]
		if tn.Kind == graph.Initializer {
			continue
		}
		var readers []int
		for _, k := range tn.Consumers {
			if !fine.Nodes[k].Static {
				readers = append(readers, toWork(k))
			}
		}
		slices.Sort(readers)
		readers = slices.Compact(readers)
		if len(readers) == 0 {
			continue
		}
		f.folded[readers[0]] += b.io(tn.Bytes)
	}
	return f
}

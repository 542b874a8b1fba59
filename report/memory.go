package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/units"
)

// ---- memory and bounds ----

func buildMemory(m *emit.Manifest, color map[string]string) memoryView {
	est := map[string]emit.DeviceMemory{}
	for _, d := range m.Memory {
		est[d.Device] = d
	}
	capOf := map[string]int64{}
	if m.Batch != nil { // devices of the other routes of a batched plan
		for _, d := range m.Batch.Devices {
			capOf[d.Device] = d.MemoryBytes
		}
	}
	for _, d := range m.Devices {
		capOf[d.Name] = d.MemoryBytes
	}
	weights := map[string]int64{}
	whole := map[string]*emit.StageMemory{} // the device's stages' whole memory, part by part
	for _, s := range m.Stages {
		weights[s.Device] += max(s.ParamsBytes, 0)
		if sm := s.Memory; sm != nil {
			w := whole[s.Device]
			if w == nil {
				w = &emit.StageMemory{}
				whole[s.Device] = w
			}
			// The device's stages hold their tensors side by side; its reserve once.
			w.WeightsBytes += sm.WeightsBytes
			w.ActivationsBytes += sm.ActivationsBytes
			w.BuffersBytes += sm.BuffersBytes
			w.StateBytes += sm.StateBytes
			w.ReserveBytes = max(w.ReserveBytes, sm.ReserveBytes)
			w.TotalBytes = w.WeightsBytes + w.ActivationsBytes + w.BuffersBytes + w.StateBytes + w.ReserveBytes
		}
	}
	type row struct {
		name      string
		used, cap int64
		estimated bool
		parts     *emit.StageMemory
	}
	var rows []row
	var scale int64
	for _, n := range deviceNames(m) {
		r := row{name: n, used: weights[n], cap: capOf[n]}
		if w := whole[n]; w != nil {
			r.used, r.estimated, r.parts = w.TotalBytes, true, w
		} else if e, ok := est[n]; ok {
			r.used, r.estimated = e.UsedBytes, true
			if e.CapacityBytes > 0 {
				r.cap = e.CapacityBytes
			}
		}
		rows = append(rows, r)
		scale = max(scale, r.used, r.cap)
	}
	if scale <= 0 {
		scale = 1
	}
	ch := &barChart{Width: reportWidth}
	plotW := reportWidth - ganttLabelW - 300
	y := 6.0
	anyWeightsOnly := false
	for _, r := range rows {
		br := barRow{Label: truncate(deviceLabel(m, r.name), 28), LabelY: y + 17}
		trackW := plotW
		if r.cap > 0 {
			trackW = plotW * float64(r.cap) / float64(scale)
		}
		br.Track = svgRect{X: ganttLabelW, Y: y + 4, W: trackW, H: 18, Class: "track"}
		uw := plotW * float64(r.used) / float64(scale)
		br.Bar = svgRect{X: ganttLabelW, Y: y + 4, W: math.Max(uw, 1), H: 18, Fill: color[r.name], Class: "used"}
		what, parts := "weights", ""
		if r.parts != nil {
			what = "in all"
			parts = fmt.Sprintf("weights %s + activations %s + buffers %s + inputs/outputs %s + reserve %s",
				units.Bytes(r.parts.WeightsBytes), units.Bytes(r.parts.ActivationsBytes), units.Bytes(r.parts.BuffersBytes),
				units.Bytes(r.parts.StateBytes), units.Bytes(r.parts.ReserveBytes))
			x := float64(ganttLabelW)
			for _, p := range []struct {
				name, label string
				bytes       int64
			}{{"weights", "weights", r.parts.WeightsBytes}, {"activations", "activations", r.parts.ActivationsBytes}, {"buffers", "buffers", r.parts.BuffersBytes},
				{"state", "inputs/outputs", r.parts.StateBytes}, {"reserve", "reserve", r.parts.ReserveBytes}} {
				if p.bytes <= 0 {
					continue
				}
				w := plotW * float64(p.bytes) / float64(scale)
				br.Parts = append(br.Parts, svgRect{X: x, Y: y + 4, W: w, H: 18, Fill: color[r.name], Class: "used mem-" + p.name,
					Title: fmt.Sprintf("%s: %s %s", r.name, p.label, units.Bytes(p.bytes))})
				x += w
			}
			br.Bar.Fill = "#fff" // under the parts, which draw the device's colour by part
		} else if r.estimated {
			what = "estimated"
		} else {
			anyWeightsOnly = true
		}
		text := fmt.Sprintf("%s %s", units.Bytes(r.used), what)
		if r.cap > 0 {
			text += fmt.Sprintf(" of %s (%s)", units.Bytes(r.cap), fmtPercent(float64(r.used)/float64(r.cap)))
			if r.used > r.cap {
				br.Over = true
				br.Bar.Class = "used over"
				text += ": over capacity"
			}
		} else {
			text += ", capacity unknown"
		}
		br.Bar.Title = fmt.Sprintf("%s: %s", r.name, text)
		if parts != "" {
			br.Bar.Title += " (" + parts + ")"
		}
		br.Text = svgText{X: ganttLabelW + math.Max(uw, trackW) + 8, Y: y + 17, Text: text, Anchor: "start", Class: "bar-label"}
		if parts != "" {
			// The parts go under the bar, where the page's whole width holds them.
			br.Sub = &svgText{X: ganttLabelW, Y: y + 38, Text: parts, Anchor: "start", Class: "bar-parts"}
			y += memPartsLineH
		}
		ch.Rows = append(ch.Rows, br)
		y += barChartRowH
	}
	ch.Height = y + 4
	mv := memoryView{Chart: ch}
	if anyWeightsOnly {
		mv.Note = "Devices without a planner's memory estimate show their stages' weights only (activations and workspace are not counted)."
	}
	return mv
}

func buildBounds(m *emit.Manifest) *boundsView {
	b := m.Bounds
	if b == nil {
		return nil
	}
	vals := append([]emit.BoundValue(nil), b.Computed...)
	if len(vals) == 0 {
		vals = []emit.BoundValue{{Method: b.Method, LowerBoundS: b.LowerBoundS}}
	}
	sort.SliceStable(vals, func(i, j int) bool {
		if vals[i].LowerBoundS != vals[j].LowerBoundS {
			return vals[i].LowerBoundS < vals[j].LowerBoundS
		}
		return vals[i].Method < vals[j].Method
	})
	upperName := "plan (predicted)"
	upper := PlanFigures(m).Upper
	if m.Predicted == nil && m.Batch == nil && upper > 0 {
		upperName = "plan (from the gap)"
	}
	scale := upper
	for _, v := range vals {
		scale = math.Max(scale, v.LowerBoundS)
	}
	if scale <= 0 {
		scale = 1
	}
	bv := &boundsView{Word: planWord(m)}
	ch := &barChart{Width: reportWidth}
	plotW := reportWidth - ganttLabelW - 240
	y := 6.0
	addBar := func(label string, val float64, class string, best, emph bool, title string) {
		w := plotW * val / scale
		text := fmtSeconds(val)
		if upper > 0 {
			text += " · " + fmtPercent(val/upper) + " of the plan"
		}
		if best {
			text += " · best"
		}
		ch.Rows = append(ch.Rows, barRow{Label: truncate(label, 28), LabelY: y + 17, Best: best, Emphasis: emph,
			Track: svgRect{X: ganttLabelW, Y: y + 4, W: plotW, H: 18, Class: "track"},
			Bar:   svgRect{X: ganttLabelW, Y: y + 4, W: math.Max(w, 1), H: 18, Class: class, Title: title},
			Text:  svgText{X: ganttLabelW + plotW + 8, Y: y + 17, Text: text, Anchor: "start", Class: "bar-label"}})
		y += barChartRowH
	}
	// The best bound is the one the certificate names (the last entry of that method in
	// value order), else the largest.
	best := len(vals) - 1
	for i, v := range vals {
		if v.Method == b.Method {
			best = i
		}
	}
	for i, v := range vals {
		addBar(v.Method, v.LowerBoundS, "bound", i == best, false, fmt.Sprintf("lower bound %s: %s", v.Method, fmtSeconds(v.LowerBoundS)))
		row := boundRow{Method: v.Method, Value: fmtSeconds(v.LowerBoundS), Seconds: "—", Best: i == best, Share: "—"}
		if v.Seconds > 0 {
			row.Seconds = fmtSeconds(v.Seconds)
			bv.Timed = true
		}
		if upper > 0 {
			row.Share = fmtPercent(v.LowerBoundS / upper)
		}
		bv.Rows = append(bv.Rows, row)
	}
	if upper > 0 {
		addBar(upperName, upper, "upper", false, true, "the plan's predicted time: an upper bound on the best possible")
	}
	ch.Height = y + 4
	bv.Chart = ch
	return bv
}

func stageRows(m *emit.Manifest, color map[string]string, bott int, crit map[int]bool) []stageRow {
	var rows []stageRow
	var sum float64
	for _, s := range m.Stages {
		if s.Predicted != nil {
			sum += s.Predicted.TotalS
		}
	}
	for i, s := range m.Stages {
		file := s.File
		if s.DataFile != "" {
			file += " + " + s.DataFile
		}
		r := stageRow{Index: s.Index, Device: deviceLabel(m, s.Device), Provider: s.Provider, ProviderShort: orDash(strings.TrimSuffix(s.Provider, "ExecutionProvider")),
			Fill: color[s.Device], Nodes: len(s.Nodes),
			FLOPs: fmtFLOPs(s.FLOPs), Params: units.Bytes(s.ParamsBytes), Weights: s.Weights,
			Inputs: ioText(s.Inputs), Outputs: ioText(s.Outputs), File: file, Bottleneck: i == bott, Critical: crit[i],
			NodeList: strings.Join(s.Nodes, ", "), Duplicated: len(s.DuplicatedNodes),
			Call: "—", Compute: "—", Comm: "—", Overflow: "—", Total: "—", Share: "—"}
		if p := s.Predicted; p != nil {
			r.Call, r.Compute, r.Comm, r.Overflow, r.Total = fmtSeconds(p.CallS), fmtSeconds(p.ComputeS), fmtSeconds(p.CommS), fmtSeconds(p.OverflowS), fmtSeconds(p.TotalS)
			if sum > 0 {
				r.Share = fmtPercent(p.TotalS / sum)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func ioText(ts []emit.TensorRef) string {
	var b int64
	unknown := false
	for _, t := range ts {
		if t.Bytes < 0 {
			unknown = true
		} else {
			b += t.Bytes
		}
	}
	s := fmt.Sprintf("%d · %s", len(ts), units.Bytes(b))
	if unknown {
		s += "+?"
	}
	return s
}

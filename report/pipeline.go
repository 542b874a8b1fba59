package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/internal/units"
)

// ---- pipeline diagram ----

// boxWidths sizes boxes proportionally to weights, with a floor of boxMinW: boxes whose
// share would fall below the floor get the floor, and the rest share what is left.
func boxWidths(w []float64, avail float64) []float64 {
	n := len(w)
	out := make([]float64, n)
	fixed := make([]bool, n)
	for {
		rest, sum, nf := avail, 0.0, 0
		for i := range w {
			if fixed[i] {
				rest -= boxMinW
				nf++
			} else {
				sum += w[i]
			}
		}
		if nf == n || sum <= 0 || rest <= 0 {
			for i := range out {
				if !fixed[i] && sum <= 0 && rest > 0 && n > nf {
					out[i] = math.Max(boxMinW, rest/float64(n-nf))
				} else {
					out[i] = boxMinW
				}
			}
			return out
		}
		scale := rest / sum
		changed := false
		for i := range w {
			if !fixed[i] && w[i]*scale < boxMinW {
				fixed[i], changed = true, true
			}
		}
		if !changed {
			for i := range w {
				if fixed[i] {
					out[i] = boxMinW
				} else {
					out[i] = w[i] * scale
				}
			}
			return out
		}
	}
}

// pipeRowMax is the most stages in one row of the pipeline diagram; longer pipelines wrap
// into rows of about equal length, read left to right, top to bottom.
func pipeRowMax() int {
	avail := reportWidth - 2*pipeMarginX
	return max(1, int((avail+boxGap)/(boxMinW+boxGap)))
}

func buildPipeline(m *emit.Manifest, color map[string]string, stagePred bool, bott int, crit map[int]bool) pipelineView {
	k := len(m.Stages)
	weights := make([]float64, k)
	sizedBy := "equal widths (no predicted times and no FLOP counts)"
	var total float64
	for i, s := range m.Stages {
		if stagePred {
			weights[i] = s.Predicted.TotalS
		} else {
			weights[i] = float64(max(s.FLOPs, 0))
		}
		total += weights[i]
	}
	switch {
	case stagePred && total > 0:
		sizedBy = "predicted time per stage"
	case !stagePred && total > 0:
		sizedBy = "FLOPs (the manifest has no predicted times)"
	}
	// Rows of at most perRow stages, about equal in count; box widths share one scale.
	rows := (k + pipeRowMax() - 1) / pipeRowMax()
	perRow := (k + rows - 1) / rows
	rowAvail := reportWidth - 2*pipeMarginX - float64(perRow-1)*boxGap
	widths := boxWidths(weights, rowAvail*float64(rows))
	if rows == 1 {
		widths = boxWidths(weights, rowAvail)
	}
	rowOf := make([]int, k)
	for i := range rowOf {
		rowOf[i] = i / perRow
	}
	for i := range widths {
		widths[i] = math.Min(widths[i], rowAvail)
	}
	// A row whose boxes would overflow shrinks its wide boxes to fit.
	for r := 0; r < rows; r++ {
		var sum, fixed float64
		for i := r * perRow; i < min(k, (r+1)*perRow); i++ {
			sum += widths[i]
			if widths[i] <= boxMinW {
				fixed += widths[i]
			}
		}
		if sum > rowAvail && sum > fixed {
			f := (rowAvail - fixed) / (sum - fixed)
			for i := r * perRow; i < min(k, (r+1)*perRow); i++ {
				if widths[i] > boxMinW {
					widths[i] = math.Max(boxMinW, widths[i]*f)
				}
			}
		}
	}

	// Transfers between the same two stages are drawn as one arrow.
	type pair struct{ from, to int }
	type flow struct {
		bytes   int64
		unknown bool
		names   []string
	}
	agg := map[pair]*flow{}
	var pairs []pair
	for _, t := range m.Transfers {
		p := pair{t.From, t.To}
		if p.from < 0 || p.to >= k || p.from >= p.to {
			continue
		}
		a := agg[p]
		if a == nil {
			a = &flow{}
			agg[p] = a
			pairs = append(pairs, p)
		}
		if t.Bytes < 0 {
			a.unknown = true
		} else {
			a.bytes += t.Bytes
		}
		a.names = append(a.names, t.Tensor)
	}
	sort.SliceStable(pairs, func(i, j int) bool {
		if pairs[i].from != pairs[j].from {
			return pairs[i].from < pairs[j].from
		}
		return pairs[i].to < pairs[j].to
	})
	// Arcs for transfers that skip stages within a row go above the boxes; transfers to a
	// later row run through lanes in the band below their row.
	arcH := func(span int) float64 { return math.Min(34+18*float64(span-2), 120) }
	arcSpace := make([]float64, rows)
	lanes := make([]int, rows)
	for r := range arcSpace {
		arcSpace[r] = 34
	}
	laneOf := map[pair]int{}
	for _, p := range pairs {
		rf, rt := rowOf[p.from], rowOf[p.to]
		switch {
		case rf == rt && p.to-p.from >= 2:
			arcSpace[rf] = math.Max(arcSpace[rf], arcH(p.to-p.from)+34)
		case rf != rt:
			laneOf[p] = lanes[rf]
			lanes[rf]++
		}
	}
	const laneH = 16.0
	maxLanes := 6
	bandH := func(r int) float64 { return 18 + laneH*float64(min(lanes[r], maxLanes)) }
	rowY := make([]float64, rows)
	y := 0.0
	for r := 0; r < rows; r++ {
		y += arcSpace[r]
		rowY[r] = y
		y += boxH
		if r < rows-1 {
			y += bandH(r)
		}
	}
	pv := pipelineView{SizedBy: sizedBy}
	x := pipeMarginX
	var width float64
	for i, s := range m.Stages {
		if i > 0 && rowOf[i] != rowOf[i-1] {
			x = pipeMarginX
		}
		w := widths[i]
		y := rowY[rowOf[i]]
		b := stageBox{Index: s.Index, X: x, Y: y, W: w, H: boxH, Fill: color[s.Device], Bottleneck: i == bott, Critical: crit[i]}
		cx := x + w/2
		chars := int((w - 10) / 6.4)
		line2 := fmt.Sprintf("%d op%s · %s", len(s.Nodes), plural(len(s.Nodes)), units.Bytes(s.ParamsBytes))
		if utf8.RuneCountInString(line2) > chars {
			line2 = fmt.Sprintf("%d op%s·%s", len(s.Nodes), plural(len(s.Nodes)), units.Bytes(s.ParamsBytes))
		}
		var line3 string
		if stagePred {
			line3 = fmtSeconds(s.Predicted.TotalS)
		} else {
			line3 = fmtFLOPs(s.FLOPs)
		}
		b.Lines = []svgText{
			{X: cx, Y: y + 20, Text: fmt.Sprintf("stage %d", s.Index), Anchor: "middle", Class: "box-title"},
			{X: cx, Y: y + 38, Text: truncate(s.Device, chars), Anchor: "middle", Class: "box-text"},
		}
		line := 55.0
		if model := deviceModel(m, s.Device); model != "" {
			b.Lines = append(b.Lines, svgText{X: cx, Y: y + 53, Text: truncate(model, int((w-8)/5.9)), Anchor: "middle", Class: "box-model"})
			line = 70
		}
		b.Lines = append(b.Lines,
			svgText{X: cx, Y: y + line, Text: truncate(line2, chars), Anchor: "middle", Class: "box-text"},
			svgText{X: cx, Y: y + line + 19, Text: truncate(line3, chars), Anchor: "middle", Class: "box-value"})
		b.Title = fmt.Sprintf("stage %d on %s (%s): %d ops, %s, params %s, %s", s.Index, deviceLabel(m, s.Device), s.Provider, len(s.Nodes),
			fmtFLOPs(s.FLOPs), units.Bytes(s.ParamsBytes), s.File)
		if stagePred {
			p := s.Predicted
			b.Title += fmt.Sprintf("; predicted compute %s, communication %s, weight streaming %s", fmtSeconds(p.ComputeS), fmtSeconds(p.CommS), fmtSeconds(p.OverflowS))
			if p.CallS > 0 {
				b.Title += ", call " + fmtSeconds(p.CallS)
			}
			b.Title += ", total " + fmtSeconds(p.TotalS)
		}
		if b.Critical {
			b.Title += "; on the critical path"
		}
		if i == bott {
			pv.Texts = append(pv.Texts, svgText{X: cx, Y: y - 8, Text: "bottleneck", Anchor: "middle", Class: "bottleneck-label"})
		}
		pv.Boxes = append(pv.Boxes, b)
		x += w + boxGap
		width = math.Max(width, x-boxGap+pipeMarginX)
	}
	// Model input and output arrows.
	first, last := pv.Boxes[0], pv.Boxes[k-1]
	inY, outY := first.Y+boxH/2, last.Y+boxH/2
	pv.Arrows = append(pv.Arrows,
		arrow{D: fmt.Sprintf("M %s %s H %s", f1(8), f1(inY), f1(first.X-4)), Class: "edge",
			Labels: []svgText{{X: 10, Y: inY - 8, Text: "input", Anchor: "start", Class: "edge-label"}}, Title: "model inputs"},
		arrow{D: fmt.Sprintf("M %s %s H %s", f1(last.X+last.W), f1(outY), f1(last.X+last.W+pipeMarginX-6)), Class: "edge",
			Labels: []svgText{{X: last.X + last.W + pipeMarginX - 8, Y: outY - 8, Text: "output", Anchor: "end", Class: "edge-label"}}, Title: "model outputs"})
	for _, p := range pairs {
		a := agg[p]
		label := units.Bytes(a.bytes)
		if a.unknown {
			label = units.Bytes(a.bytes) + "+?"
			if a.bytes == 0 {
				label = "? B"
			}
		}
		title := fmt.Sprintf("stage %d → stage %d: %d tensor%s, %s: %s", m.Stages[p.from].Index, m.Stages[p.to].Index, len(a.names), plural(len(a.names)), label, strings.Join(a.names, ", "))
		fb, tb := pv.Boxes[p.from], pv.Boxes[p.to]
		rf, rt := rowOf[p.from], rowOf[p.to]
		switch {
		case rf != rt:
			// Down from the sender into its row's band, across, and down into the receiver.
			lane := laneOf[p] % maxLanes
			ly := fb.Y + boxH + 12 + laneH*float64(lane)
			x1 := fb.X + fb.W*(0.5+0.08*float64(lane%5))
			x2 := tb.X + tb.W*(0.35+0.06*float64(lane%5))
			cls := "edge wrap"
			if p.to != p.from+1 {
				cls = "edge wrap skip"
			}
			pv.Arrows = append(pv.Arrows, arrow{
				D:      fmt.Sprintf("M %s %s V %s H %s V %s", f1(x1), f1(fb.Y+boxH), f1(ly), f1(x2), f1(tb.Y-3)),
				Class:  cls,
				Labels: []svgText{{X: (x1 + x2) / 2, Y: ly - 3, Text: label, Anchor: "middle", Class: "edge-label"}}, Title: title})
		case p.to == p.from+1:
			midY := fb.Y + boxH/2
			x1, x2 := fb.X+fb.W, tb.X-4
			ar := arrow{D: fmt.Sprintf("M %s %s H %s", f1(x1), f1(midY), f1(x2)), Class: "edge", Title: title,
				Labels: []svgText{{X: (x1 + x2) / 2, Y: midY - 8, Text: label, Anchor: "middle", Class: "edge-label"}}}
			if len(a.names) > 1 {
				ar.Labels = append(ar.Labels, svgText{X: (x1 + x2) / 2, Y: midY + 16, Text: fmt.Sprintf("%d tensors", len(a.names)), Anchor: "middle", Class: "edge-label"})
			}
			pv.Arrows = append(pv.Arrows, ar)
		default:
			h := arcH(p.to - p.from)
			y := fb.Y
			// Arcs of different spans leave a box at different points.
			x1, x2 := fb.X+fb.W*math.Min(0.5+0.1*float64(p.to-p.from-1), 0.9), tb.X+tb.W*0.3
			pv.Arrows = append(pv.Arrows, arrow{
				D:      fmt.Sprintf("M %s %s C %s %s, %s %s, %s %s", f1(x1), f1(y), f1(x1), f1(y-h), f1(x2), f1(y-h), f1(x2), f1(y-3)),
				Class:  "edge skip",
				Labels: []svgText{{X: (x1 + x2) / 2, Y: y - h*0.75 - 6, Text: label, Anchor: "middle", Class: "edge-label"}}, Title: title})
		}
	}
	if crit != nil {
		var on []string
		for i, s := range m.Stages {
			if crit[i] {
				on = append(on, strconv.Itoa(s.Index))
			}
		}
		if len(on) > 0 {
			pv.Critical = fmt.Sprintf("Critical path (dashed red outline, ◆ in the table): stage%s %s, the chain of work and transfers that sets the %s; shortening another stage does not shorten it.",
				plural(len(on)), strings.Join(on, ", "), PlanFigures(m).What)
		}
	}
	if b := m.Batch; b != nil && len(b.Routes) > 0 {
		pv.Note = fmt.Sprintf("Route 0 of %d (%d of the batch's %d inputs); the other routes' stages are in their directories (see Batch). A stage's time is its work and transfers for the route's share of the batch; they overlap in the schedule, so the batch takes %s.",
			len(b.Routes), b.Routes[0].Inputs, b.Inputs, fmtSeconds(b.MakespanS))
	}
	pv.Width = width
	pv.Height = rowY[rows-1] + boxH + 14
	return pv
}

// deviceModel is the product name of a device the manifest knows, without the vendor
// prefix, or "".
func deviceModel(m *emit.Manifest, name string) string {
	for _, d := range m.Devices {
		if d.Name == name && d.Model != "" && d.Model != name {
			return strings.TrimPrefix(d.Model, "NVIDIA ")
		}
	}
	return ""
}

// truncate shortens s to at most n runes, ending in "…".
func truncate(s string, n int) string {
	if n < 2 {
		n = 2
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

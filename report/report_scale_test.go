package report

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
)

// TestCriticalPath: the chain that ends last, walked back through what each event waited
// for (same device, or the transfer into it); events off the chain are not on it.
func TestCriticalPath(t *testing.T) {
	ev := []emit.TimelineEvent{
		{Device: "a", Kind: emit.EventCompute, Label: "n0", Stage: 0, StartS: 0, EndS: 1},      // 0
		{Device: "a", Kind: emit.EventCompute, Label: "n1", Stage: 0, StartS: 1, EndS: 2},      // 1
		{Device: "a", Kind: emit.EventTransfer, ToDevice: "b", Stage: 0, StartS: 2, EndS: 2.5}, // 2
		{Device: "b", Kind: emit.EventCompute, Label: "side", Stage: 1, StartS: 0, EndS: 0.5},  // 3: off the path
		{Device: "b", Kind: emit.EventCompute, Label: "n2", Stage: 1, StartS: 2.5, EndS: 4},    // 4
		{Device: "a", Kind: emit.EventCompute, Label: "n3", Stage: 2, StartS: 2, EndS: 3},      // 5: ends early
	}
	got := fmt.Sprint(CriticalPath(ev))
	if got != "[0 1 2 4]" {
		t.Errorf("critical path %s, want [0 1 2 4]", got)
	}
	m := &emit.Manifest{Stages: []emit.Stage{{Index: 0, Label: 0}, {Index: 1, Label: 2}, {Index: 2, Label: 1}}, Timeline: ev}
	if got := fmt.Sprint(CriticalStages(m)); got != "[0 2]" { // labels 0 and 1 are stages 0 and 2
		t.Errorf("critical stages %s, want [0 2]", got)
	}
	if CriticalPath(nil) != nil {
		t.Error("a path without events")
	}
}

// longManifest is a 19-stage latency plan over three named devices with a timeline of
// 270 events, as BERT on a100-80g,t4,cpu gives.
func longManifest() *emit.Manifest {
	m := sampleManifest(19, true)
	m.Objective = "latency"
	models := []string{"NVIDIA A100-SXM4-80GB", "NVIDIA Tesla T4", "AMD EPYC 7763"}
	names := []string{"gpu0", "gpu1", "cpu0"}
	m.Devices = nil
	for i, n := range names {
		m.Devices = append(m.Devices, emit.DeviceInfo{Name: n, Provider: "CUDAExecutionProvider", Kind: "gpu", Model: models[i], MemoryBytes: 8 << 30})
	}
	m.Memory = nil
	t := 0.0
	for i := range m.Stages {
		st := &m.Stages[i]
		st.Device = names[i%3]
		st.Nodes = make([]string, 20+i)
		st.ParamsBytes = 21094 + int64(i)*1000 // "20.6 KiB"
		for j := 0; j < 14; j++ {
			d := 1e-6 * float64(1+(i*j)%5)
			m.Timeline = append(m.Timeline, emit.TimelineEvent{Device: st.Device, Kind: emit.EventCompute, Label: fmt.Sprintf("op%d_%d", i, j), Stage: i, StartS: t, EndS: t + d})
			t += d
		}
		if i < len(m.Stages)-1 {
			next := names[(i+1)%3]
			m.Timeline = append(m.Timeline, emit.TimelineEvent{Device: st.Device, ToDevice: next, Kind: emit.EventTransfer, Label: fmt.Sprintf("t%d", i), Stage: i, StartS: t, EndS: t + 2e-6})
			t += 2e-6
		}
	}
	m.Predicted.LatencyS = t
	return m
}

// TestReportLongPlan: a 19-stage pipeline wraps into rows that fit the page, boxes keep
// their text whole and name the device's product; a 270-event timeline is drawn one bar
// per stage with its events on hover; the critical path is marked, and no bottleneck.
func TestReportLongPlan(t *testing.T) {
	m := longManifest()
	if n := len(m.Timeline); n < 250 {
		t.Fatalf("%d events", n)
	}
	page := string(mustReport(t, m))
	els := parseReport(t, []byte(page))
	var boxes []*element
	for _, e := range els {
		if e.name == "rect" && strings.HasPrefix(e.attr["class"], "box") {
			boxes = append(boxes, e)
		}
	}
	if len(boxes) != 19 {
		t.Fatalf("%d boxes", len(boxes))
	}
	rows := map[string]bool{}
	for _, b := range boxes {
		x, _ := strconv.ParseFloat(b.attr["x"], 64)
		w, _ := strconv.ParseFloat(b.attr["width"], 64)
		if x+w > reportWidth {
			t.Errorf("box at x=%v w=%v overflows the %v px page", x, w, reportWidth)
		}
		rows[b.attr["y"]] = true
	}
	if len(rows) < 3 {
		t.Errorf("19 stages in %d rows, want them wrapped", len(rows))
	}
	for _, e := range els {
		if e.name == "text" && (e.attr["class"] == "box-text" || e.attr["class"] == "box-value") && strings.Contains(e.text, "…") {
			t.Errorf("box text cut: %q", e.text)
		}
	}
	for _, want := range []string{">A100-SXM4-80GB<", ">Tesla T4<", "gpu1 (Tesla T4)", "Events are grouped", "on the critical path"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	bars := find(els, "rect", "bar compute group")
	bars = append(bars, find(els, "rect", "bar compute group on-critical")...)
	if len(bars) != 19 {
		t.Errorf("%d grouped compute bars, want one per stage (19)", len(bars))
	}
	if strings.Contains(page, `data-bottleneck="true"`) || strings.Contains(page, "predicted bottleneck") {
		t.Error("a latency plan marks a bottleneck")
	}
	if n := strings.Count(page, `data-critical="true"`); n != 19 { // a chain through every stage
		t.Errorf("%d stages on the critical path, want 19", n)
	}
}

package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/emit"
)

// TestReportStageMemoryParts: a device whose stages carry their whole memory shows it part by
// part (one segment per non-zero part, the reserve once per device) against its capacity,
// instead of the planner's estimate or the weights alone.
func TestReportStageMemoryParts(t *testing.T) {
	m := sampleManifest(3, true)
	m.Stages[0].Memory = &emit.StageMemory{WeightsBytes: 1 << 20, ActivationsBytes: 2 << 20, BuffersBytes: 0,
		StateBytes: 3 << 20, ReserveBytes: 1 << 20, TotalBytes: 7 << 20}
	els := parseReport(t, mustReport(t, m))
	for part, want := range map[string]int{"weights": 1, "activations": 1, "buffers": 0, "state": 1, "reserve": 1} {
		got := find(els, "rect", "used mem-"+part)
		if len(got) != want {
			t.Errorf("%d %s segments, want %d", len(got), part, want)
		}
	}
	var label, parts string
	for _, e := range find(els, "text", "bar-parts") {
		if strings.Contains(e.text, "weights 1.00 MiB + activations 2.00 MiB + buffers 0 B + inputs/outputs 3.00 MiB + reserve 1.00 MiB") {
			parts = e.text
		}
	}
	for _, e := range find(els, "text", "bar-label") {
		if strings.Contains(e.text, "7.00 MiB in all of 8.00 MiB") {
			label = e.text
		}
	}
	if parts == "" || label == "" {
		t.Errorf("no parts line (%q) or no bar label with the total and the capacity (%q)", parts, label)
	}
	// Every label stands inside the page (about 6.5 px a character at 12 px, as the page's font sets them).
	for _, class := range []string{"bar-label", "bar-parts"} {
		for _, e := range find(els, "text", class) {
			var x float64
			fmt.Sscan(e.attr["x"], &x)
			if end := x + 6.5*float64(len([]rune(e.text))); end > reportWidth {
				t.Errorf("label %q ends near x=%.0f, past the page's %v px", e.text, end, reportWidth)
			}
		}
	}
	// Over capacity, the device's bar says so (the fixture's gpu2 estimate is over already).
	m.Stages[0].Memory.StateBytes, m.Stages[0].Memory.TotalBytes = 6<<20, 10<<20
	over := 0
	for _, e := range find(parseReport(t, mustReport(t, m)), "rect", "used over") {
		if strings.Contains(e.text, m.Stages[0].Device+": 10.00 MiB in all") && strings.Contains(e.text, "(weights") && strings.Contains(e.text, "over capacity") {
			over++
		}
	}
	if over != 1 {
		t.Errorf("%d bars of %s over capacity, want 1", over, m.Stages[0].Device)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/pipebench"
)

// The bench table goes through newTable: no row ends in spaces, although every row's last
// cell is empty (the trailing tab) and columns are right-aligned.
func TestBenchTableNoTrailingSpaces(t *testing.T) {
	p := 1e-3
	r := &pipebench.Report{Dir: "out", Stages: 2, Routes: 1, Requests: 10, Seconds: 0.1, ORTVersion: "1.30.0",
		Devices: []pipebench.DeviceReport{{Name: "cpu0", Threads: 1}},
		StageTimes: []pipebench.StageReport{
			{Stage: 0, Device: "cpu0", Runs: 10, Busy: pipebench.Compared{Measured: 1e-3, Planned: &p}},
			{Stage: 1, Device: "a-longer-device-name", Runs: 10, Busy: pipebench.Compared{Measured: 2e-3}},
		}}
	var buf bytes.Buffer
	printBench(&buf, r)
	rows := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("trailing space: %q", line)
		}
		if f := strings.Fields(line); len(f) > 2 && (f[1] == "cpu0" || f[1] == "a-longer-device-name") {
			rows++
		}
	}
	if rows != 2 {
		t.Errorf("%d stage rows, want 2:\n%s", rows, buf.String())
	}
}

package devices

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

// cpu:MxT makes M host devices of T threads on disjoint CPUs, joined by host memory.
func TestHostSplit(t *testing.T) {
	cpus := AllowedCPUs()
	if len(cpus) < 2 {
		t.Skipf("one CPU: nothing to split")
	}
	for _, spec := range []string{"cpu:2x1", "2xcpu", "host:2x1"} {
		c, err := Resolve(context.Background(), spec, noBench())
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if len(c.Devices) != 2 || c.Devices[0].Name != "cpu0" || c.Devices[1].Name != "cpu1" {
			t.Fatalf("%s: devices %v", spec, c.Devices)
		}
		want := 1
		if spec == "2xcpu" {
			want = len(cpus) / 2
		}
		seen := map[int]bool{}
		for i := range c.Devices {
			d := &c.Devices[i]
			if !d.Host || d.Threads != want || len(d.CPUs) != want {
				t.Errorf("%s: %s host %v threads %d CPUs %v, want %d", spec, d.Name, d.Host, d.Threads, d.CPUs, want)
			}
			for _, x := range d.CPUs {
				if seen[x] {
					t.Errorf("%s: CPU %d given to two devices", spec, x)
				}
				seen[x] = true
			}
		}
		if l := c.Links[0][1]; l.Kind != profile.LinkMemory || l.Bandwidth.Value != c.Devices[0].Bandwidth.Value {
			t.Errorf("%s: link %+v, want host memory at the copy bandwidth", spec, l)
		}
	}
	// The cost model prices each device with its threads: one thread is slower than all.
	one, err := Resolve(context.Background(), "cpu:2x1", noBench())
	if err != nil {
		t.Fatal(err)
	}
	all, err := Resolve(context.Background(), "cpu", noBench())
	if err != nil {
		t.Fatal(err)
	}
	if all.Devices[0].CPUs != nil {
		t.Errorf("a lone host device is pinned to %v", all.Devices[0].CPUs)
	}
	if p1, pa := one.Devices[0].Peak[profile.FP32].Value, all.Devices[0].Peak[profile.FP32].Value; !(p1*float64(len(cpus)) <= pa*1.0001) {
		t.Errorf("1-thread peak %g, all-core peak %g", p1, pa)
	}
	// More threads than CPUs: refused, with the count.
	n := len(cpus) + 1
	_, err = Resolve(context.Background(), fmt.Sprintf("cpu:%dx1", n), noBench())
	if diag.KindOf(err) != diag.KindUsage || !strings.Contains(err.Error(), fmt.Sprintf("need %d cores", n)) {
		t.Errorf("cpu:%dx1: %v", n, err)
	}
	_, err = Resolve(context.Background(), fmt.Sprintf("%dxcpu", n), noBench())
	if diag.KindOf(err) != diag.KindUsage || !strings.Contains(err.Error(), "this machine has") {
		t.Errorf("%dxcpu: %v", n, err)
	}
}

// A spec file says the same with count and threads.
func TestHostSplitSpec(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "split.yaml")
	if err := os.WriteFile(p, []byte("devices:\n  - {name: cpu, type: host, count: 2, threads: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(context.Background(), p, noBench())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 2 || c.Devices[0].Name != "cpu0" || c.Devices[1].Threads != 1 ||
		len(c.Devices[0].CPUs) != 1 || len(c.Devices[1].CPUs) != 1 || c.Devices[0].CPUs[0] == c.Devices[1].CPUs[0] {
		t.Fatalf("devices %+v", c.Devices)
	}
	if l := c.Links[1][0]; l.Kind != profile.LinkMemory {
		t.Errorf("link %+v, want host memory", l)
	}
	big := filepath.Join(dir, "big.yaml")
	os.WriteFile(big, []byte(fmt.Sprintf("devices:\n  - {name: cpu, type: host, count: %d, threads: 1}\n", runtime.NumCPU()+1)), 0o644)
	_, err = Resolve(context.Background(), big, noBench())
	if !isSpecError(err) || !strings.Contains(err.Error(), "cores on their own") {
		t.Errorf("oversubscribed spec: %v", err)
	}
}

func TestFormatCPUs(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "0 1 2 3": "0-3", "0 1 2 3 8": "0-3,8", "5 1 2": "1-2,5"} {
		var c []int
		for _, f := range strings.Fields(in) {
			var x int
			fmt.Sscan(f, &x)
			c = append(c, x)
		}
		if got := FormatCPUs(c); got != want {
			t.Errorf("FormatCPUs(%v) = %q, want %q", c, got, want)
		}
	}
}

// PinThread confines the calling thread to the CPUs asked for.
func TestPinThread(t *testing.T) {
	cpus := AllowedCPUs()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked: it exits with the goroutine, and its mask with it.
		if err := PinThread(cpus[len(cpus)-1:]); err != nil {
			done <- err
			return
		}
		got := AllowedCPUs()
		if len(got) != 1 || got[0] != cpus[len(cpus)-1] {
			done <- fmt.Errorf("thread runs on %v, want [%d]", got, cpus[len(cpus)-1])
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

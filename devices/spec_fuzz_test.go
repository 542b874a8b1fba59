package devices

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/profile"
)

// FuzzSpec feeds arbitrary bytes to the device spec parser, read as YAML or as JSON: it must
// return a cluster or an input *diag.Error about the file, never panic or hang, and a cluster it returns passes
// Validate and has finite, usable figures (a cost model over it gives finite, non-negative
// transfer times). The example spec files and a few small specs seed it.
func FuzzSpec(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "devices", "*"))
	if len(files) == 0 {
		f.Fatal("no seed spec files in testdata/devices")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, strings.HasSuffix(p, ".json"))
	}
	for _, s := range []string{
		"devices:\n  - {name: a, type: t4, count: 3}\nlinks: {default: pcie4}\n",
		"devices:\n  - {name: a, kind: gpu, peak: {fp32: 10TFLOPS}, bandwidth: 1TB/s, memory: 16GiB}\n  - {name: b, type: a100-80g}\nlinks:\n  unit: Gbps\n  matrix: [[-, 100], [0, -]]\n  pairs: [{from: b, to: a, bandwidth: 5GB/s, both: true}]\n",
		`{"devices": [{"name": "x", "type": "cpu-generic", "efficiency": {"Conv": {"compute": 0.5, "memory": "50%"}}}]}`,
	} {
		f.Add([]byte(s), strings.HasPrefix(s, "{"))
	}
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		file := "fuzz.yaml"
		if asJSON {
			file = "fuzz.json"
		}
		if int64(len(data)) > DefaultMaxSpecBytes {
			return // readSpecFile refuses these before parsing
		}
		c, err := parseSpec(context.Background(), file, data, noBench())
		if err != nil {
			if !isSpecError(err) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed cluster does not validate: %v", err)
		}
		for i := range c.Devices {
			d := &c.Devices[i]
			for p, x := range d.Peak {
				if d.Peak[p].Known() && !(x.Value > 0 && !math.IsInf(x.Value, 0)) {
					t.Fatalf("device %s: peak %s = %v", d.Name, profile.Precision(p), x.Value)
				}
			}
			for what, x := range map[string]profile.Figure{"bandwidth": d.Bandwidth, "memory": d.Memory, "memory_cap": d.MemoryCap,
				"launch": d.Launch, "nvlink": d.NVLink, "io_bandwidth": d.IOBandwidth} {
				if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) || x.Value < 0 {
					t.Fatalf("device %s: %s = %v", d.Name, what, x.Value)
				}
			}
		}
		m := profile.NewCostModel(c, profile.CostOptions{})
		for i := range c.Devices {
			for j := range c.Devices {
				if x := m.TransferTime(1<<20, i, j); math.IsNaN(x) || x < 0 || math.IsInf(x, 0) {
					t.Fatalf("transfer %s → %s of 1 MiB takes %v", c.Devices[i].Name, c.Devices[j].Name, x)
				}
			}
		}
	})
}

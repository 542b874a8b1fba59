package devices

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

func devicesDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "testdata", "devices"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Every example spec file resolves to a valid cluster.
func TestExampleSpecFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(devicesDir(t), "*"))
	if len(files) < 4 {
		t.Fatalf("only %d example spec files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := Resolve(context.Background(), f, noBench())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMoiraiInterServer(t *testing.T) {
	c, err := Resolve(context.Background(), filepath.Join(devicesDir(t), "moirai-inter-server.yaml"), noBench())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"A", "B", "C", "D"}
	models := []string{"rtx-2080-ti", "t4", "p4", "rtx-3060-ti"}
	for i, d := range c.Devices {
		if d.Name != names[i] || d.Catalog != models[i] {
			t.Errorf("device %d: %s %s", i, d.Name, d.Catalog)
		}
	}
	// Table III, Gbit/s, rows send: asymmetric.
	for _, e := range []struct {
		i, j int
		gbps float64
	}{{0, 1, 44.26}, {1, 0, 42.39}, {2, 3, 32.95}, {3, 2, 33.28}} {
		l := c.Links[e.i][e.j]
		if l.Kind != profile.LinkCustom || l.Bandwidth.Source != profile.SourceSpec || !near(l.Bandwidth.Value, e.gbps*1e9/8, 1e-12) || !near(l.Latency.Value, 5e-6, 1e-9) {
			t.Errorf("links[%d][%d] = %+v, want %g Gbps", e.i, e.j, l, e.gbps)
		}
	}
	m := profile.NewCostModel(c, profile.CostOptions{})
	if a, b := m.TransferTime(1e9, 0, 1), m.TransferTime(1e9, 1, 0); a >= b {
		t.Errorf("A→B (44.26 Gbps) %g s should beat B→A (42.39) %g s", a, b)
	}
}

func TestSpecDevicesAndOverrides(t *testing.T) {
	c, err := Resolve(context.Background(), filepath.Join(devicesDir(t), "dgx-a100-capped.yaml"), noBench())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 8 || c.Devices[7].Name != "gpu7" {
		t.Fatalf("devices %d, last %s", len(c.Devices), c.Devices[len(c.Devices)-1].Name)
	}
	d := &c.Devices[2]
	if d.Capacity() != 60<<30 || d.Memory.Value != 80<<30 || d.MemoryCap.Source != profile.SourceSpec {
		t.Errorf("capacity %g memory %g", d.Capacity(), d.Memory.Value)
	}
	if e, m := profile.EfficiencyOf(d, "Conv", profile.ClassConv); e.Value != 0.55 || m.Value != 0.55 || e.Source != profile.SourceSpec {
		t.Errorf("Conv efficiency %+v %+v", e, m)
	}
	if e, m := profile.EfficiencyOf(d, "LayerNormalization", profile.ClassNorm); e.Value != 0.3 || m.Value != 0.7 {
		t.Errorf("LayerNormalization efficiency %g/%g", e.Value, m.Value)
	}
	if e, _ := profile.EfficiencyOf(d, "Softmax", profile.ClassNorm); e.Source != profile.SourceDefault {
		t.Errorf("Softmax efficiency %+v", e)
	}
	if l := c.Links[0][7]; l.Kind != profile.LinkNVLink || l.Bandwidth.Value != 300e9 {
		t.Errorf("link %+v", l)
	}
	// Replicated devices do not share maps.
	c.Devices[0].Efficiency["Conv"] = fig(0.1, profile.SourceSpec, "")
	if c.Devices[1].Efficiency["Conv"].Value != 0.55 {
		t.Error("count: devices share their efficiency map")
	}
}

func TestSpecJSON(t *testing.T) {
	c, err := Resolve(context.Background(), filepath.Join(devicesDir(t), "edge-accelerator.json"), noBench())
	if err != nil {
		t.Fatal(err)
	}
	npu := c.Devices[0]
	if npu.Kind != profile.Accelerator || npu.Peak[profile.INT8].Value != 4e12 || npu.Peak[profile.TF32].Source != profile.SourceDefault ||
		!near(npu.Launch.Value, 20e-6, 1e-9) || npu.HostLink.Bandwidth.Value != 4e9 || npu.Memory.Value != 2<<30 {
		t.Errorf("npu %+v", npu)
	}
	if l := c.Links[1][0]; l.Bandwidth.Value != 4e9 || !near(l.Latency.Value, 30e-6, 1e-9) {
		t.Errorf("cpu→npu %+v", l)
	}
	if c.Devices[1].Capacity() != 6<<30 {
		t.Errorf("cpu capacity %g", c.Devices[1].Capacity())
	}
}

// A JSON file and its YAML twin give the same cluster.
func TestSpecJSONEqualsYAML(t *testing.T) {
	dir := t.TempDir()
	y := "devices:\n  - {name: a, type: t4, memory_cap: 10GiB}\n  - {name: b, type: l4}\nlinks:\n  pairs:\n    - {from: a, to: b, bandwidth: 10GB/s, latency: 3us, both: true}\n"
	j := `{"devices": [{"name": "a", "type": "t4", "memory_cap": "10GiB"}, {"name": "b", "type": "l4"}],
"links": {"pairs": [{"from": "a", "to": "b", "bandwidth": "10GB/s", "latency": "3us", "both": true}]}}`
	os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(y), 0o644)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(j), 0o644)
	a, err := Resolve(context.Background(), filepath.Join(dir, "c.yaml"), noBench())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resolve(context.Background(), filepath.Join(dir, "c.json"), noBench())
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Devices {
		if a.Devices[i].Capacity() != b.Devices[i].Capacity() || a.Devices[i].Peak != b.Devices[i].Peak {
			t.Errorf("device %d differs", i)
		}
		for k := range a.Links[i] {
			if a.Links[i][k].Bandwidth.Value != b.Links[i][k].Bandwidth.Value || a.Links[i][k].Latency.Value != b.Links[i][k].Latency.Value {
				t.Errorf("link %d→%d differs", i, k)
			}
		}
	}
}

func TestSpecErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, file, body, want string
	}{
		{"unknown field", "c.yaml", "devices:\n  - name: a\n    type: t4\n    memroy: 8GB\n",
			"c.yaml:4: devices[0].memroy: unknown field (known: bandwidth, count, efficiency,"},
		{"unknown top field", "c.yaml", "device:\n  - {name: a, type: t4}\n", "c.yaml:1: device: unknown field (known: devices, links, name)"},
		{"bad unit", "c.yaml", "devices:\n  - name: a\n    type: t4\n    memory: 8 parsecs\n",
			`c.yaml:4: devices[0].memory: "8 parsecs": unknown unit "parsecs" (want e.g. 80GB, 40GiB, 512MiB)`},
		{"rate where bytes", "c.yaml", "devices:\n  - {name: a, type: t4, memory: 8GB/s}\n", `c.yaml:2: devices[0].memory: "8GB/s": unknown unit`},
		{"missing devices", "c.yaml", "name: x\n", "c.yaml:1: devices: missing"},
		{"empty devices", "c.yaml", "devices: []\n", "c.yaml:1: devices: empty"},
		{"no type or kind", "c.yaml", "devices:\n  - {name: a, memory: 8GB}\n", "c.yaml:2: devices[0].type: missing: give a catalog type, or kind, peak.fp32 and bandwidth"},
		{"kind needs peak", "c.yaml", "devices:\n  - {name: a, kind: gpu, bandwidth: 1TB/s}\n", "devices[0].peak: missing (required without a catalog type)"},
		{"unknown type", "c.yaml", "devices:\n  - {name: a, type: a200}\n", `c.yaml:2: devices[0].type: unknown device type "a200"; did you mean a100?`},
		{"bad kind", "c.yaml", "devices:\n  - {name: a, kind: tpu, peak: {fp32: 1T}, bandwidth: 1TB/s}\n", "devices[0].kind: want gpu, cpu or accelerator"},
		{"kind contradicts type", "c.yaml", "devices:\n  - {name: a, type: t4, kind: cpu}\n", "devices[0].kind: contradicts the type's kind gpu"},
		{"duplicate name", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: a, type: l4}\n", `c.yaml:3: devices[1].name: another device is already called "a"`},
		{"name missing", "c.yaml", "devices:\n  - {type: t4}\n", "devices[0].name: missing"},
		{"zero memory", "c.yaml", "devices:\n  - {name: a, type: t4, memory: 0}\n", "devices[0].memory: must be greater than zero"},
		{"bad efficiency", "c.yaml", "devices:\n  - {name: a, type: t4, efficiency: {conv: 20}}\n", "devices[0].efficiency.conv: want a fraction of the roofline in (0, 10]"},
		{"efficiency key", "c.yaml", "devices:\n  - {name: a, type: t4, efficiency: {convolution: 0.5}}\n", "devices[0].efficiency.convolution: not an op class"},
		{"efficiency half", "c.yaml", "devices:\n  - {name: a, type: t4, efficiency: {Conv: {compute: 0.5}}}\n", "give both compute and memory"},
		{"matrix rows", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  matrix:\n    - [-, 1GB/s]\n",
			"c.yaml:6: links.matrix: has 1 rows for 2 devices"},
		{"matrix cols", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  matrix:\n    - [-, 1GB/s, 2GB/s]\n    - [1GB/s, -]\n",
			"c.yaml:6: links.matrix[0]: has 3 entries for 2 devices"},
		{"matrix diagonal", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  matrix:\n    - [5, 1GB/s]\n    - [1GB/s, -]\n",
			"c.yaml:6: links.matrix[0][0]: the diagonal"},
		{"matrix value", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  matrix:\n    - [-, fast]\n    - [1GB/s, -]\n",
			`c.yaml:6: links.matrix[0][1]: "fast" is not a number`},
		{"no route", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  matrix:\n    - [-, 0]\n    - [1GB/s, -]\n",
			"links: no route from a to b"},
		{"pair device", "c.yaml", "devices:\n  - {name: a, type: t4}\nlinks:\n  pairs:\n    - {from: a, to: z, bandwidth: 1GB/s}\n",
			`c.yaml:5: links.pairs[0].to: no device called "z"`},
		{"pair bandwidth", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  pairs:\n    - {from: a, to: b}\n",
			"links.pairs[0].bandwidth: missing"},
		{"bad default", "c.yaml", "devices:\n  - {name: a, type: t4}\nlinks:\n  default: warp\n", "c.yaml:4: links.default: want one of auto, nvlink"},
		{"nvlink default", "c.yaml", "devices:\n  - {name: a, type: t4}\n  - {name: b, type: t4}\nlinks:\n  default: nvlink\n", "link nvlink: a (NVIDIA T4) has no NVLink"},
		{"bad unit field", "c.yaml", "devices:\n  - {name: a, type: t4}\nlinks:\n  unit: furlongs\n", "links.unit: want a bandwidth unit"},
		{"not a list", "c.yaml", "devices: {name: a}\n", "c.yaml:1: devices: want a list, got a mapping"},
		{"yaml syntax", "c.yaml", "devices:\n  - {name: a, type: t4\n", "c.yaml:1: invalid YAML: did not find expected ',' or '}'"},
		{"json syntax", "c.json", "{\"devices\": [\n {\"name\": \"a\",, \"type\": \"t4\"}]}\n", "c.json:2: invalid JSON"},
		{"json unknown field", "c.json", "{\"devices\": [\n {\"name\": \"a\", \"type\": \"t4\",\n  \"bandwith\": \"1TB/s\"}]}\n", `c.json:3: devices[0].bandwith: unknown field`},
		{"empty file", "c.yaml", "\n", "c.yaml: empty file"},
		{"threads on gpu", "c.yaml", "devices:\n  - {name: a, type: t4, threads: 2}\n", "devices[0].threads: only CPU devices have threads"},
		{"count", "c.yaml", "devices:\n  - {name: a, type: t4, count: 0}\n", "devices[0].count: want a whole number from 1 to 256"},
		{"anchors", "c.yaml", "devices:\n  - &x {name: a, type: t4}\n  - *x\n", "aliases are not supported"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.file)
			if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Resolve(context.Background(), p, noBench())
			if err == nil {
				t.Fatalf("accepted; want %q", c.want)
			}
			if !isSpecError(err) {
				t.Errorf("error %T is not a spec file error", err)
			}
			if msg := strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)); !strings.Contains(msg, c.want) {
				t.Errorf("error %q, want %q", msg, c.want)
			}
		})
	}
}

func TestSpecSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(p, []byte("devices:\n"+strings.Repeat("  - {name: a, type: t4}\n", 100)), 0o644)
	opts := noBench()
	opts.MaxSpecBytes = 512
	_, err := Resolve(context.Background(), p, opts)
	if err == nil || !strings.Contains(err.Error(), "larger than 512 bytes") {
		t.Errorf("error %v", err)
	}
	_, err = Resolve(context.Background(), filepath.Join(t.TempDir(), "none.yaml"), opts)
	if err == nil || !strings.HasSuffix(err.Error(), "none.yaml: no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// isSpecError reports whether err is a problem with a spec file: a *diag.Error of kind input
// about a file.
func isSpecError(err error) bool {
	var de *diag.Error
	return errors.As(err, &de) && de.Kind == diag.KindInput && de.Subject.Kind == diag.File
}

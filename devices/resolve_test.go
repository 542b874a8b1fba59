package devices

import (
	"context"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

func TestResolveCatalogList(t *testing.T) {
	c, err := Resolve(context.Background(), "4xH100-SXM", noBench())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 4 || c.Devices[3].Name != "gpu3" || c.Devices[0].Catalog != "h100-sxm" {
		t.Fatalf("devices %+v", c.Devices)
	}
	for i := range 4 {
		for j := range 4 {
			l := c.Links[i][j]
			if i != j && (l.Kind != profile.LinkNVLink || l.Bandwidth.Value != 450e9 || l.Bandwidth.Source != profile.SourceCatalog) {
				t.Errorf("links[%d][%d] = %+v, want NVLink 450 GB/s from the catalog", i, j, l)
			}
		}
	}
	if c.Devices[0].Peak[profile.FP16].Value != 989.5e12 || c.Devices[0].Memory.Value != 80<<30 {
		t.Errorf("H100 figures %+v", c.Devices[0])
	}
}

func TestResolveMixedList(t *testing.T) {
	c, err := Resolve(context.Background(), "a100-80g, t4, cpu", noBench())
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{c.Devices[0].Name, c.Devices[1].Name, c.Devices[2].Name}; strings.Join(got, ",") != "gpu0,gpu1,cpu" {
		t.Fatalf("names %v", got)
	}
	if !c.Devices[2].Host || c.Host == nil {
		t.Error("cpu is not the host")
	}
	// A100 (PCIe 4) ↔ T4 (PCIe 3): P2P at the slower link; GPU ↔ CPU over the GPU's own link.
	if l := c.Links[0][1]; l.Kind != profile.LinkPCIe || l.Bandwidth.Value != 15.75e9 {
		t.Errorf("a100→t4 %+v", l)
	}
	if l := c.Links[0][2]; l.Kind != profile.LinkPCIe || l.Bandwidth.Value != 31.5e9 {
		t.Errorf("a100→cpu %+v", l)
	}
	if l := c.Links[2][1]; l.Bandwidth.Value != 15.75e9 {
		t.Errorf("cpu→t4 %+v", l)
	}
}

func TestResolveLinkChoices(t *testing.T) {
	for _, c := range []struct {
		spec, link string
		kind       profile.LinkKind
		bw         float64
	}{
		{"2xa100", "", profile.LinkNVLink, 300e9},
		{"2xa100-pcie", "", profile.LinkPCIe, 31.5e9}, // PCIe cards: no NVLink unless asked
		{"2xa100-pcie", "nvlink", profile.LinkNVLink, 300e9},
		{"2xh100", "pcie5", profile.LinkPCIe, 63e9},
		{"2xa100", "pcie5", profile.LinkPCIe, 31.5e9}, // capped by the A100's PCIe 4
		{"2xa100", "staged", profile.LinkStaged, 31.5e9},
		{"2xa100", "ib100", profile.LinkNetwork, 12.5e9},
		{"2xa100", "eth10", profile.LinkNetwork, 1.25e9},
		{"2xcpu-generic", "", profile.LinkNetwork, 12.5e9},
		{"v100,p100", "", profile.LinkNVLink, 80e9},
	} {
		opts := noBench()
		opts.Link = c.link
		cl, err := Resolve(context.Background(), c.spec, opts)
		if err != nil {
			t.Errorf("%s --link %q: %v", c.spec, c.link, err)
			continue
		}
		if l := cl.Links[0][1]; l.Kind != c.kind || l.Bandwidth.Value != c.bw {
			t.Errorf("%s --link %q: %s %g, want %s %g", c.spec, c.link, l.Kind, l.Bandwidth.Value, c.kind, c.bw)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	for _, c := range []struct{ spec, link, want string }{
		{"a200", "", `unknown device "a200"; did you mean a100? (catalog: a100-40g-sxm,`},
		{"a100-8g", "", `unknown device "a100-8g"; did you mean a100-80g? (catalog:`},
		{"rtx4900", "", `unknown device "rtx4900"; did you mean rtx-4090?`},
		{"quantum9", "", `unknown device "quantum9" (catalog: a100-40g-sxm,`},
		{"4xH100,", "", "empty item"},
		{"0xt4", "", "count must be 1 to 256"},
		{"cpu,cpu", "", "the host CPU is named twice"},
		{"cpu:1x1,cpu", "", "the host CPU is named twice"},
		{"2xcpu:1x1", "", "give the number of devices after the colon"},
		{"cpu:0x1", "", "the number of devices must be 1 to 256"},
		{"cpu:2x0", "", "the threads per device must be at least 1"},
		{"cpu:300x1", "", "the number of devices must be 1 to 256"},
		{"2xauto", "", "auto takes no count"},
		{"cpu,t4,host", "", "the host CPU is named twice"},
		{"2xt4", "nvlink", "link nvlink: gpu0 (NVIDIA T4) has no NVLink"},
		{"t4", "warp", `Options.Link = "warp": want one of auto, nvlink, pcie3`},
	} {
		opts := noBench()
		opts.Link = c.link
		_, err := Resolve(context.Background(), c.spec, opts)
		if err == nil || diag.KindOf(err) != diag.KindUsage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q --link %q: error %v, want a usage error with %q", c.spec, c.link, err, c.want)
		}
	}
}

func TestIsSpecFile(t *testing.T) {
	for s, want := range map[string]bool{"c.yaml": true, "C.YML": true, "x.json": true, "4xH100": false, "auto": false, "a100,t4": false} {
		if IsSpecFile(s) != want {
			t.Errorf("IsSpecFile(%q) = %v", s, !want)
		}
	}
}

// Devices keep the order of the list; the host CPU goes where it is named.
func TestResolveOrder(t *testing.T) {
	c, err := Resolve(context.Background(), "cpu,t4,2xl4", noBench())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range c.Devices {
		got = append(got, d.Name+"="+d.Catalog)
	}
	if strings.Join(got, " ") != "cpu= gpu0=t4 gpu1=l4 gpu2=l4" || !c.Devices[0].Host {
		t.Errorf("order %v", got)
	}
}

// GPUs without a launch figure of their own take the per-class overheads measured on an
// H100 (defaultOverhead); a spec file's launch replaces them all, and the host CPU has none.
func TestGPUClassOverheads(t *testing.T) {
	c, err := Resolve(context.Background(), "h100-sxm,cpu", noBench())
	if err != nil {
		t.Fatal(err)
	}
	g := &c.Devices[0]
	for cl, want := range map[profile.OpClass]float64{profile.ClassEpilogue: 1.6e-6, profile.ClassConv: 6e-6, profile.ClassView: 0.5e-6} {
		if f := profile.OverheadOf(g, cl); f.Value != want || f.Source != profile.SourceDefault {
			t.Errorf("h100 overhead %s = %+v, want %g s (default)", cl, f, want)
		}
	}
	if f := profile.OverheadOf(g, profile.ClassControl); f.Value != g.Launch.Value {
		t.Errorf("h100 overhead control = %+v, want the launch figure %g", f, g.Launch.Value)
	}
	if cpu := &c.Devices[1]; len(cpu.Overhead) != 0 || cpu.Launch.Value != 0.4e-6 {
		t.Errorf("host CPU overheads %v, launch %+v: want none but the launch figure before calibration", cpu.Overhead, cpu.Launch)
	}
	spec := []byte("devices:\n  - name: g\n    type: h100-sxm\n    launch: 8us\n")
	s, err := parseSpec(context.Background(), "g.yaml", spec, noBench())
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []profile.OpClass{profile.ClassEpilogue, profile.ClassConv} {
		if f := profile.OverheadOf(&s.Devices[0], cl); f.Value != 8e-6 {
			t.Errorf("spec launch 8us: overhead %s = %+v, want 8 µs", cl, f)
		}
	}
}

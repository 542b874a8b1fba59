package devices

import (
	"math"
	"strings"
	"testing"

	"github.com/onnxpart/onnxpart/profile"
)

// The devices the catalog must cover (issue 4), by the names users type.
var wantCatalog = []string{
	"a100-40g-sxm", "a100-80g-sxm", "a100-40g-pcie", "a100-80g-pcie", "A100", "a100-80g",
	"H100-SXM", "h100-pcie", "H200", "L4", "L40S", "A10", "T4", "V100", "p100", "P4",
	"rtx-2080-ti", "2080ti", "rtx-3060-ti", "3090", "RTX 4090", "cpu-generic", "xeon-8480", "epyc-7763",
}

func TestCatalogCoverage(t *testing.T) {
	for _, name := range wantCatalog {
		e, ok := LookupCatalog(name)
		if !ok {
			t.Errorf("%s: not in the catalog", name)
			continue
		}
		if !strings.Contains(e.Source, "http") && e.ID != "cpu-generic" {
			t.Errorf("%s: source %q cites no document address", e.ID, e.Source)
		}
	}
}

func TestCatalogFigures(t *testing.T) {
	for _, e := range Catalog() {
		d := e.Device("x")
		for p := profile.FP32; p < profile.NumPrecisions; p++ {
			f := d.Peak[p]
			if !(f.Value > 0) || (f.Source != profile.SourceCatalog && f.Source != profile.SourceDefault) {
				t.Errorf("%s: peak %s = %+v", e.ID, p, f)
			}
			if f.Source == profile.SourceDefault && !strings.HasPrefix(f.Note, "derived: ") {
				t.Errorf("%s: peak %s has source default without saying how it was derived", e.ID, p)
			}
		}
		// Tensor rates are never below the fp32 rate; a published int8 rate never below fp16.
		if d.Peak[profile.FP16].Value < d.Peak[profile.FP32].Value || d.Peak[profile.INT8].Source == profile.SourceCatalog && d.Peak[profile.INT8].Value < d.Peak[profile.FP16].Value {
			t.Errorf("%s: implausible peaks fp32 %g fp16 %g int8 %g", e.ID, d.Peak[profile.FP32].Value, d.Peak[profile.FP16].Value, d.Peak[profile.INT8].Value)
		}
		if !(d.Memory.Value > 1<<30) || !(d.Bandwidth.Value > 1e10) {
			t.Errorf("%s: memory %g bandwidth %g", e.ID, d.Memory.Value, d.Bandwidth.Value)
		}
		if e.Kind == profile.GPU && (d.HostLink.Kind != profile.LinkPCIe || d.HostLink.Bandwidth.Source != profile.SourceCatalog) {
			t.Errorf("%s: host link %+v", e.ID, d.HostLink)
		}
		if !d.Launch.Known() || d.Launch.Source != profile.SourceDefault {
			t.Errorf("%s: launch %+v", e.ID, d.Launch)
		}
	}
}

// The catalog's published A100 and T4 figures agree with what the architecture table
// derives from their SM counts and boost clocks (a100: 108 SMs at 1410 MHz; t4: 40 at 1590).
func TestCatalogAgreesWithArchTable(t *testing.T) {
	for _, c := range []struct {
		id           string
		major, minor int
		sms, mhz     float64
		precs        []profile.Precision
	}{
		{"a100-40g-sxm", 8, 0, 108, 1410, []profile.Precision{profile.FP32, profile.TF32, profile.FP16, profile.INT8}},
		{"t4", 7, 5, 40, 1590, []profile.Precision{profile.FP16, profile.INT8}},
		{"a10", 8, 6, 72, 1695, []profile.Precision{profile.FP32, profile.FP16, profile.INT8}},
		{"l4", 8, 9, 58, 2040, []profile.Precision{profile.FP32, profile.FP16, profile.INT8}},
	} {
		e, _ := LookupCatalog(c.id)
		a, ok := archFor(c.major, c.minor)
		if !ok {
			t.Fatalf("no arch for %d.%d", c.major, c.minor)
		}
		for _, p := range c.precs {
			derived := c.sms * c.mhz * 1e6 * a.rate[p]
			if rel := math.Abs(derived-e.Peak[p].Value) / e.Peak[p].Value; rel > 0.02 {
				t.Errorf("%s %s: catalog %g, arch table %g (%.1f%% apart)", c.id, p, e.Peak[p].Value, derived, rel*100)
			}
		}
	}
}

func TestMatchNVML(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA A100-SXM4-40GB":      "a100-40g-sxm",
		"Mock NVIDIA A100-SXM4-40GB": "a100-40g-sxm",
		"NVIDIA A100-SXM4-80GB":      "a100-80g-sxm",
		"NVIDIA A100 80GB PCIe":      "a100-80g-pcie",
		"NVIDIA H100 80GB HBM3":      "h100-sxm",
		"NVIDIA H100 PCIe":           "h100-pcie",
		"Tesla T4":                   "t4",
		"Tesla V100-SXM2-16GB":       "v100-sxm2",
		"Tesla V100-PCIE-32GB":       "v100-pcie",
		"NVIDIA GeForce RTX 3090":    "rtx-3090",
		"NVIDIA L40S":                "l40s",
		"NVIDIA L4":                  "l4",
	} {
		e, ok := MatchNVML(name)
		if !ok || e.ID != want {
			got := "nothing"
			if ok {
				got = e.ID
			}
			t.Errorf("MatchNVML(%q) = %s, want %s", name, got, want)
		}
	}
	if e, ok := MatchNVML("NVIDIA B200"); ok {
		t.Errorf("B200 matched %s", e.ID)
	}
}

func TestCatalogParseErrors(t *testing.T) {
	good := `links:
  - {id: pcie4, kind: pcie, bandwidth: 31.5GB/s, source: x}
devices:
  - id: x1
    model: X
    kind: gpu
    memory: 1GiB
    bandwidth: 100GB/s
    peak: {fp32: 1T, tf32: 1T, fp16: 2T, int8: 4T}
    pcie: pcie4
    source: somewhere
`
	if _, err := parseCatalog("c.yaml", []byte(good)); err != nil {
		t.Fatalf("good catalog: %v", err)
	}
	for _, c := range []struct{ edit, old, want string }{
		{"    memroy: 1GiB\n", "    memory: 1GiB\n", `c.yaml:7: devices[0].memroy: unknown field`},
		{"    peak: {fp32: 1T, tf32: 1T, fp16: 2T}\n", "    peak: {fp32: 1T, tf32: 1T, fp16: 2T, int8: 4T}\n", `devices[0].peak.int8: missing`},
		{"    bandwidth: fast\n", "    bandwidth: 100GB/s\n", `c.yaml:8: devices[0].bandwidth: "fast" is not a number`},
		{"    pcie: pcie9\n", "    pcie: pcie4\n", `unknown host link "pcie9"`},
		{"    peak: {fp32: {value: 1T}, tf32: 1T, fp16: 2T, int8: 4T}\n", "    peak: {fp32: 1T, tf32: 1T, fp16: 2T, int8: 4T}\n", `devices[0].peak.fp32.derived: missing`},
	} {
		_, err := parseCatalog("c.yaml", []byte(strings.Replace(good, c.old, c.edit, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("edit %q: error %v, want %q", strings.TrimSpace(c.edit), err, c.want)
		}
	}
}

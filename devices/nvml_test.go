package devices

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

// wiring describes what a mock GPU answers beyond go-nvml's own mock servers, which only
// know names, memory, architecture and compute capability.
type wiring struct {
	sms                   uint32
	smMHz, memMHz, bus    uint32
	pcieGen, pcieWidth    int
	links                 int            // enabled NVLink links
	peers                 map[int]string // link → remote GPU bus id (the rest go to a switch)
	switchBus             string
	p2p                   nvml.GpuP2PStatus
	p2pUnsupported        bool
	brand                 nvml.BrandType
	attributesUnsupported bool
}

func busID(i int) string { return fmt.Sprintf("00000000:%02x:00.0", 0x10+i) }

func pci(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := 0; i < len(bus) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(bus[i])
	}
	return p
}

func wire(d *mock.Device, i int, w wiring) {
	d.GetAttributesFunc = func() (nvml.DeviceAttributes, nvml.Return) {
		if w.attributesUnsupported {
			return nvml.DeviceAttributes{}, nvml.ERROR_NOT_SUPPORTED
		}
		return nvml.DeviceAttributes{MultiprocessorCount: w.sms}, nvml.SUCCESS
	}
	d.GetMaxClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		switch c {
		case nvml.CLOCK_SM:
			return w.smMHz, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return w.memMHz, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetMemoryBusWidthFunc = func() (uint32, nvml.Return) { return w.bus, nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return w.pcieGen, nvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return w.pcieWidth, nvml.SUCCESS }
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pci(busID(i)), nvml.SUCCESS }
	d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
		if w.links == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		if l >= w.links {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		if _, ok := w.peers[l]; ok {
			return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
		}
		return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
		if b, ok := w.peers[l]; ok {
			return pci(b), nvml.SUCCESS
		}
		return pci(w.switchBus), nvml.SUCCESS
	}
	d.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		if w.p2pUnsupported {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return w.p2p, nvml.SUCCESS
	}
	if w.brand != 0 {
		d.GetBrandFunc = func() (nvml.BrandType, nvml.Return) { return w.brand, nvml.SUCCESS }
	}
}

// dgxA100 is go-nvml's DGX A100 mock with the SM count, clocks, memory bus, PCIe and NVLink
// of the real machine: 108 SMs at 1410 MHz, HBM2 5120-bit at 1215 MHz, PCIe 4.0 x16, and 12
// NVLink 3 links per GPU to the six NVSwitches.
func dgxA100() *dgxa100.Server {
	s := dgxa100.New()
	for i, d := range s.Devices {
		wire(&d.(*dgxa100.Device).Device, i, wiring{sms: 108, smMHz: 1410, memMHz: 1215, bus: 5120,
			pcieGen: 4, pcieWidth: 16, links: 12, switchBus: "00000000:c0:00.0", p2p: nvml.P2P_STATUS_OK})
	}
	return s
}

// server builds an NVML mock of n GPUs from go-nvml's mock types (the DGX H100 mock exists
// only on go-nvml's unreleased HEAD).
func server(n int, name string, arch nvml.DeviceArchitecture, major, minor int, mem uint64, w func(i int) wiring) *mock.Interface {
	devs := make([]*mock.Device, n)
	for i := range devs {
		d := &mock.Device{}
		d.GetNameFunc = func() (string, nvml.Return) { return name, nvml.SUCCESS }
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: mem}, nvml.SUCCESS }
		d.GetArchitectureFunc = func() (nvml.DeviceArchitecture, nvml.Return) { return arch, nvml.SUCCESS }
		d.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return major, minor, nvml.SUCCESS }
		d.GetBrandFunc = func() (nvml.BrandType, nvml.Return) { return nvml.BRAND_NVIDIA, nvml.SUCCESS }
		wire(d, i, w(i))
		devs[i] = d
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return n, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= n {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

// dgxH100: 8 × H100 SXM5 (132 SMs at 1980 MHz, HBM3 5120-bit at 2619 MHz, PCIe 5.0 x16),
// 18 NVLink 4 links each to the NVSwitches.
func dgxH100() *mock.Interface {
	return server(8, "NVIDIA H100 80GB HBM3", nvml.DEVICE_ARCH_HOPPER, 9, 0, 81920<<20, func(int) wiring {
		return wiring{sms: 132, smMHz: 1980, memMHz: 2619, bus: 5120, pcieGen: 5, pcieWidth: 16,
			links: 18, switchBus: "00000000:e0:00.0", p2p: nvml.P2P_STATUS_OK}
	})
}

func noBench() Options { return Options{Host: HostOptions{NoBench: true}} }

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

func TestNVMLDGXA100(t *testing.T) {
	opts := noBench()
	opts.NVML = dgxA100()
	c, err := Resolve(context.Background(), "auto", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 8 || len(c.Notes) != 0 {
		t.Fatalf("%d devices, notes %q", len(c.Devices), c.Notes)
	}
	cat, _ := LookupCatalog("a100-40g-sxm")
	for i, d := range c.Devices {
		if d.Name != fmt.Sprintf("gpu%d", i) || d.Kind != profile.GPU || d.Catalog != "a100-40g-sxm" {
			t.Errorf("device %d: %s %s %s", i, d.Name, d.Kind, d.Catalog)
		}
		check := func(what string, f profile.Figure, want float64) {
			t.Helper()
			if f.Source != profile.SourceNVML || !near(f.Value, want, 1e-9) {
				t.Errorf("%s %s = %g (%s), want %g from nvml", d.Name, what, f.Value, f.Source, want)
			}
		}
		check("memory", d.Memory, 40<<30)
		check("fp32", d.Peak[profile.FP32], 108*1410e6*128)
		check("tf32", d.Peak[profile.TF32], 108*1410e6*1024)
		check("fp16", d.Peak[profile.FP16], 108*1410e6*2048)
		check("int8", d.Peak[profile.INT8], 108*1410e6*4096)
		check("bandwidth", d.Bandwidth, 5120.0/8*1215e6*2)
		check("host link", d.HostLink.Bandwidth, 16*1.969e9)
		check("nvlink", d.NVLink, 12*25e9)
		// NVML's figures agree with the data sheet to 1%.
		for p := profile.FP32; p < profile.NumPrecisions; p++ {
			if !near(d.Peak[p].Value, cat.Peak[p].Value, 0.01) {
				t.Errorf("%s %s: nvml %g vs data sheet %g", d.Name, p, d.Peak[p].Value, cat.Peak[p].Value)
			}
		}
		if !near(d.Bandwidth.Value, cat.Bandwidth.Value, 0.01) || !near(d.NVLink.Value, cat.NVLink.Value, 0.01) {
			t.Errorf("%s: bandwidth %g nvlink %g vs data sheet %g %g", d.Name, d.Bandwidth.Value, d.NVLink.Value, cat.Bandwidth.Value, cat.NVLink.Value)
		}
		for j := range c.Devices {
			l := c.Links[i][j]
			if i == j {
				if l.Kind != profile.LinkSelf {
					t.Errorf("links[%d][%d] = %s", i, j, l.Kind)
				}
				continue
			}
			if l.Kind != profile.LinkNVLink || l.Bandwidth.Source != profile.SourceNVML || !near(l.Bandwidth.Value, 300e9, 1e-9) || !strings.Contains(l.Name, "NVSwitch") {
				t.Errorf("links[%d][%d] = %+v, want NVLink 300 GB/s via NVSwitch", i, j, l)
			}
		}
	}
	m := profile.NewCostModel(c, profile.CostOptions{})
	if got := m.TransferTime(300e6, 0, 5); !near(got, 1e-3+profile.DefaultLatency[profile.LinkNVLink], 1e-9) {
		t.Errorf("300 MB over NVLink: %g s", got)
	}
}

func TestNVMLDGXH100(t *testing.T) {
	opts := noBench()
	opts.NVML = dgxH100()
	c, err := Resolve(context.Background(), "auto", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 8 {
		t.Fatalf("%d devices", len(c.Devices))
	}
	d := c.Devices[3]
	if d.Catalog != "h100-sxm" || !near(d.Memory.Value, 80<<30, 1e-9) || !near(d.Peak[profile.FP32].Value, 132*1980e6*256, 1e-9) ||
		!near(d.Bandwidth.Value, 5120.0/8*2619e6*2, 1e-9) || !near(d.NVLink.Value, 18*25e9, 1e-9) ||
		!near(d.HostLink.Bandwidth.Value, 16*3.938e9, 1e-9) {
		t.Errorf("H100 described as %+v", d)
	}
	if l := c.Links[2][6]; l.Kind != profile.LinkNVLink || !near(l.Bandwidth.Value, 450e9, 1e-9) {
		t.Errorf("H100 link %+v", l)
	}
}

// Two pairs of GPUs, each pair joined by 4 direct NVLink links, the pairs on PCIe 3.0 with P2P.
func TestNVMLDirectLinksAndP2P(t *testing.T) {
	peerOf := map[int]int{0: 1, 1: 0, 2: 3, 3: 2}
	lib := server(4, "Tesla V100-SXM2-16GB", nvml.DEVICE_ARCH_VOLTA, 7, 0, 16<<30, func(i int) wiring {
		peers := map[int]string{}
		for l := range 4 {
			peers[l] = busID(peerOf[i])
		}
		return wiring{sms: 80, smMHz: 1530, memMHz: 877, bus: 4096, pcieGen: 3, pcieWidth: 16, links: 4, peers: peers, p2p: nvml.P2P_STATUS_OK}
	})
	opts := noBench()
	opts.NVML = lib
	c, err := Resolve(context.Background(), "auto", opts)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Links[0][1]; l.Kind != profile.LinkNVLink || !near(l.Bandwidth.Value, 100e9, 1e-9) {
		t.Errorf("paired link %+v", l)
	}
	if l := c.Links[1][2]; l.Kind != profile.LinkPCIe || !near(l.Bandwidth.Value, 16*0.985e9, 1e-9) {
		t.Errorf("cross-pair link %+v, want PCIe P2P", l)
	}
	if d := c.Devices[0]; !near(d.Peak[profile.FP16].Value, 80*1530e6*1024, 1e-9) || d.Catalog != "v100-sxm2" {
		t.Errorf("V100 %+v", d.Peak)
	}
}

func TestNVMLNoP2PIsStaged(t *testing.T) {
	lib := server(2, "NVIDIA GeForce RTX 3090", nvml.DEVICE_ARCH_AMPERE, 8, 6, 24<<30, func(int) wiring {
		return wiring{sms: 82, smMHz: 1695, memMHz: 9751, bus: 384, pcieGen: 4, pcieWidth: 16,
			p2p: nvml.P2P_STATUS_CHIPSET_NOT_SUPPORTED, brand: nvml.BRAND_GEFORCE}
	})
	opts := noBench()
	opts.NVML = lib
	c, err := Resolve(context.Background(), "auto", opts)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Links[0][1]
	if l.Kind != profile.LinkStaged || !near(l.Bandwidth.Value, 16*1.969e9, 1e-9) || l.Latency.Value != profile.DefaultLatency[profile.LinkStaged] {
		t.Errorf("link %+v, want host-staged at the PCIe 4 rate", l)
	}
	d := c.Devices[0]
	// GeForce: tf32 and fp16 (fp32 accumulate) at half rate: 71 TFLOP/s fp16 as the sheet says.
	if !near(d.Peak[profile.FP16].Value, 82*1695e6*512, 1e-9) || !near(d.Peak[profile.FP16].Value, 71e12, 0.01) {
		t.Errorf("3090 fp16 %g", d.Peak[profile.FP16].Value)
	}
	if !near(d.Bandwidth.Value, 936e9, 0.01) {
		t.Errorf("3090 bandwidth %g", d.Bandwidth.Value)
	}
}

// go-nvml's DGX A100 mock as shipped answers only name, memory, architecture and compute
// capability: discovery must not crash, take the rest from the catalog entry NVML's name
// matches, and stage transfers through the host when P2P is unknown.
func TestNVMLBareMock(t *testing.T) {
	opts := noBench()
	opts.NVML = dgxa100.New()
	c, err := Resolve(context.Background(), "auto", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 8 {
		t.Fatalf("%d devices", len(c.Devices))
	}
	d := c.Devices[0]
	if d.Memory.Source != profile.SourceNVML || d.Peak[profile.FP16].Source != profile.SourceCatalog || d.Peak[profile.FP16].Value != 312e12 ||
		d.Bandwidth.Source != profile.SourceCatalog {
		t.Errorf("bare mock device %+v", d)
	}
	if l := c.Links[0][1]; l.Kind != profile.LinkStaged {
		t.Errorf("bare mock link %+v", l)
	}
}

func TestNVMLFallback(t *testing.T) {
	for _, c := range []struct {
		name string
		lib  nvml.Interface
		want string
	}{
		{"library missing", &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }},
			"NVML not available: libnvidia-ml.so.1 not found (no NVIDIA driver); using the host CPU"},
		{"driver not loaded", &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }},
			"NVML not available: the NVIDIA driver is not loaded; using the host CPU"},
		{"no GPU", &mock.Interface{
			InitFunc:           func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
			DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS }},
			"NVML found no GPU; using the host CPU"},
		{"init panics", &mock.Interface{}, "NVML not available: ERROR_NOT_SUPPORTED; using the host CPU"},
		{"handle fails", &mock.Interface{
			InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
			ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
			DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
			DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }},
			"NVML found 1 GPU(s) but none could be described; using the host CPU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := noBench()
			opts.NVML = c.lib
			cl, err := Resolve(context.Background(), "auto", opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(cl.Devices) != 1 || cl.Devices[0].Kind != profile.CPU || !cl.Devices[0].Host || cl.Host == nil {
				t.Fatalf("fallback cluster %+v", cl.Devices)
			}
			if n := len(cl.Notes); n == 0 || cl.Notes[n-1].Msg != c.want || strings.Contains(cl.Notes[n-1].Msg, "\n") || cl.Notes[n-1].Kind != diag.NoteFault {
				t.Errorf("notes %q, want last %q", cl.Notes, c.want)
			}
		})
	}
}

// The system library: on a machine without an NVIDIA driver (this one), auto falls back to
// the CPU with a reason; with GPUs it finds them. Either way it does not crash.
func TestNVMLSystemLibrary(t *testing.T) {
	c, err := Resolve(context.Background(), "auto", noBench())
	if err != nil {
		t.Fatal(err)
	}
	if c.Devices[0].Kind == profile.CPU && (len(c.Notes) == 0 || !strings.Contains(c.Notes[len(c.Notes)-1].Msg, "using the host CPU")) {
		t.Errorf("CPU fallback without a reason: %q", c.Notes)
	}
}

package devices

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

// errNoGPU is returned when NVML works but reports no device.
var errNoGPU = errors.New("NVML found no GPU")

// nvmlCall runs one NVML query. Unimplemented methods of go-nvml's mock devices panic; a
// real library reports ERROR_FUNCTION_NOT_FOUND for symbols an old driver lacks. Both are
// treated as "not supported", so discovery degrades instead of crashing.
func nvmlCall[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, ret = zero, nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

func nvmlDo(f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if r := recover(); r != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

// nvmlReason turns an Init failure into a one-line reason.
func nvmlReason(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "NVML not available: libnvidia-ml.so.1 not found (no NVIDIA driver)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "NVML not available: the NVIDIA driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "NVML not available: no permission to talk to the NVIDIA driver"
	}
	return "NVML not available: " + ret.Error()
}

type nvmlGPU struct {
	dev      profile.Device
	handle   nvml.Device
	busID    string
	arch     archRates
	hasArch  bool
	nvlinks  int            // enabled NVLink links
	toSwitch int            // links that end at an NVSwitch
	toPeer   map[string]int // links to another GPU, by its PCI bus id
}

// discoverNVML lists the GPUs NVML sees and the links between them. A failure to initialise
// NVML, or finding no GPU, is an error whose text is the one-line reason.
func discoverNVML(lib nvml.Interface) (devs []profile.Device, links [][]profile.Link, notes []diag.Note, err error) {
	defer func() {
		if r := recover(); r != nil {
			devs, links, err = nil, nil, fmt.Errorf("NVML query failed: %v", r)
		}
	}()
	if ret := nvmlDo(lib.Init); ret != nvml.SUCCESS {
		return nil, nil, nil, errors.New(nvmlReason(ret))
	}
	defer nvmlDo(lib.Shutdown)
	n, ret := nvmlCall(lib.DeviceGetCount)
	if ret != nvml.SUCCESS {
		return nil, nil, nil, fmt.Errorf("NVML cannot count devices: %v", ret)
	}
	if n == 0 {
		return nil, nil, nil, errNoGPU
	}
	driver, _ := nvmlCall(lib.SystemGetDriverVersion)
	var gpus []*nvmlGPU
	for i := range n {
		h, ret := nvmlCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if ret != nvml.SUCCESS {
			notes = append(notes, diag.Notef(diag.NoteSkipped, "gpu%d skipped: NVML cannot open it (%v)", i, ret))
			continue
		}
		g, err := probeGPU(h, fmt.Sprintf("gpu%d", i), driver)
		if err != nil {
			notes = append(notes, diag.Notef(diag.NoteSkipped, "gpu%d skipped: %v", i, err))
			continue
		}
		g.dev.NVML = &profile.NVMLIdentity{Index: i, BusID: g.busID}
		if uuid, ret := nvmlCall(h.GetUUID); ret == nvml.SUCCESS {
			g.dev.NVML.UUID = uuid
		}
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, nil, notes, fmt.Errorf("NVML found %d GPU(s) but none could be described", n)
	}
	links = gpuLinks(gpus)
	for _, g := range gpus {
		devs = append(devs, g.dev)
	}
	return devs, links, notes, nil
}

func busIDOf(p nvml.PciInfo) string {
	var b strings.Builder
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	if s := strings.ToLower(b.String()); s != "" {
		return s
	}
	if p.Bus == 0 && p.Device == 0 && p.Domain == 0 {
		return ""
	}
	return fmt.Sprintf("%08x:%02x:%02x.0", p.Domain, p.Bus, p.Device)
}

// normBusID folds the 4- and 8-digit domain forms of a PCI bus id together.
func normBusID(s string) string {
	s = strings.ToLower(s)
	if dom, rest, ok := strings.Cut(s, ":"); ok && len(dom) > 4 {
		s = strings.TrimLeft(dom[:len(dom)-4], "0") + dom[len(dom)-4:] + ":" + rest
	}
	return s
}

// probeGPU describes one GPU. Every figure is NVML's own or derived from NVML counts with
// the architecture table; what NVML cannot tell comes from the catalog entry matching the
// product name, then from defaults.
func probeGPU(h nvml.Device, name, driver string) (*nvmlGPU, error) {
	g := &nvmlGPU{handle: h, toPeer: map[string]int{}}
	d := &g.dev
	d.Name, d.Kind = name, profile.GPU
	model, ret := nvmlCall(h.GetName)
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("no product name (%v)", ret)
	}
	d.Model = model
	d.Fact("product", model, profile.SourceNVML)
	if driver != "" {
		d.Fact("driver", driver, profile.SourceNVML)
	}
	cat, haveCat := MatchNVML(model)
	if haveCat {
		d.Catalog = cat.ID
		d.Fact("catalog match", cat.ID, profile.SourceCatalog)
	}
	if p, ret := nvmlCall(h.GetPciInfo); ret == nvml.SUCCESS {
		g.busID = normBusID(busIDOf(p))
		if g.busID != "" {
			d.Fact("pci bus", g.busID, profile.SourceNVML)
		}
	}
	if m, ret := nvmlCall(h.GetMemoryInfo); ret == nvml.SUCCESS && m.Total > 0 {
		d.Memory = fig(float64(m.Total), profile.SourceNVML, "total device memory")
	} else if haveCat {
		d.Memory = cat.Memory
	}

	var major, minor int
	ccRet := nvmlDo(func() nvml.Return {
		var r nvml.Return
		major, minor, r = h.GetCudaComputeCapability()
		return r
	})
	if ccRet == nvml.SUCCESS {
		d.Fact("compute capability", fmt.Sprintf("%d.%d", major, minor), profile.SourceNVML)
		g.arch, g.hasArch = archFor(major, minor)
		if g.hasArch {
			d.Fact("architecture", g.arch.name, profile.SourceNVML)
		}
	}
	brand, _ := nvmlCall(h.GetBrand)
	geforce := brand == nvml.BRAND_GEFORCE || brand == nvml.BRAND_GEFORCE_RTX ||
		strings.Contains(strings.ToLower(model), "geforce")

	sms := 0
	if a, ret := nvmlCall(h.GetAttributes); ret == nvml.SUCCESS && a.MultiprocessorCount > 0 {
		sms = int(a.MultiprocessorCount)
	} else if cores, ret := nvmlCall(h.GetNumGpuCores); ret == nvml.SUCCESS && cores > 0 && g.hasArch {
		sms = cores / int(g.arch.rate[profile.FP32]/2)
	}
	smClock, smRet := nvmlCall(func() (uint32, nvml.Return) { return h.GetMaxClockInfo(nvml.CLOCK_SM) })
	if sms > 0 {
		d.Fact("SMs", fmt.Sprint(sms), profile.SourceNVML)
	}
	if smRet == nvml.SUCCESS && smClock > 0 {
		d.Fact("max SM clock", fmt.Sprintf("%d MHz", smClock), profile.SourceNVML)
	}
	if g.hasArch && sms > 0 && smRet == nvml.SUCCESS && smClock > 0 {
		for p := profile.FP32; p < profile.NumPrecisions; p++ {
			r := g.arch.rate[p]
			if geforce && (p == profile.TF32 || p == profile.FP16) && major >= 7 && !(major == 7 && minor < 5) {
				r /= 2 // GeForce: half-rate tf32 and fp16 with fp32 accumulate
			}
			d.Peak[p] = fig(float64(sms)*float64(smClock)*1e6*r, profile.SourceNVML,
				fmt.Sprintf("%d SMs × %d MHz × %g/clock (%s)", sms, smClock, r, g.arch.name))
		}
	} else if haveCat {
		d.Peak = cat.Peak
		for p := range d.Peak {
			if d.Peak[p].Source == profile.SourceCatalog {
				d.Peak[p].Note = "NVML gives no SM count or clock; catalog figure for " + cat.ID
			}
		}
	} else {
		return nil, fmt.Errorf("%s: NVML gives no SM count, clock or known architecture, and the catalog has no such product", model)
	}

	busWidth, bwRet := nvmlCall(h.GetMemoryBusWidth)
	memClock, mcRet := nvmlCall(func() (uint32, nvml.Return) { return h.GetMaxClockInfo(nvml.CLOCK_MEM) })
	if bwRet == nvml.SUCCESS && mcRet == nvml.SUCCESS && busWidth > 0 && memClock > 0 {
		// NVML's memory clock is the command clock; data moves on both edges (×2) for HBM and,
		// in NVML's convention, for GDDR6/6X as well.
		d.Bandwidth = fig(float64(busWidth)/8*float64(memClock)*1e6*2, profile.SourceNVML,
			fmt.Sprintf("%d-bit bus × %d MHz × 2", busWidth, memClock))
		d.Fact("memory bus", fmt.Sprintf("%d bit, %d MHz", busWidth, memClock), profile.SourceNVML)
	} else if haveCat {
		d.Bandwidth = cat.Bandwidth
	} else {
		return nil, fmt.Errorf("%s: NVML gives no memory bus width or clock, and the catalog has no such product", model)
	}

	gen, genRet := nvmlCall(h.GetMaxPcieLinkGeneration)
	width, wRet := nvmlCall(h.GetMaxPcieLinkWidth)
	if genRet == nvml.SUCCESS && wRet == nvml.SUCCESS && pcieLaneRate[gen] > 0 && width > 0 {
		d.HostLink = profile.Link{Kind: profile.LinkPCIe, Name: fmt.Sprintf("pcie%d x%d", gen, width),
			Bandwidth: fig(pcieLaneRate[gen]*float64(width), profile.SourceNVML, fmt.Sprintf("PCIe gen %d × %d lanes", gen, width)),
			Latency:   fig(profile.DefaultLatency[profile.LinkPCIe], profile.SourceDefault, profile.LatencyNote)}
		d.Fact("pcie", fmt.Sprintf("gen %d x%d", gen, width), profile.SourceNVML)
	} else if haveCat && cat.PCIe != "" {
		d.HostLink = presetLink(cat.PCIe)
		d.HostLink.Name = cat.PCIe + " x16"
	}

	// NVLink: count enabled links and where they go.
	perLink := 25e9
	if g.hasArch {
		perLink = g.arch.nvlinkPerDir
	}
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, ret := nvmlCall(func() (nvml.EnableState, nvml.Return) { return h.GetNvLinkState(l) })
		if ret != nvml.SUCCESS {
			break // past the last link, or no NVLink at all
		}
		if st != nvml.FEATURE_ENABLED {
			continue
		}
		g.nvlinks++
		remote, rret := nvmlCall(func() (nvml.PciInfo, nvml.Return) { return h.GetNvLinkRemotePciInfo(l) })
		typ, tret := nvmlCall(func() (nvml.IntNvLinkDeviceType, nvml.Return) { return h.GetNvLinkRemoteDeviceType(l) })
		switch {
		case tret == nvml.SUCCESS && typ == nvml.NVLINK_DEVICE_TYPE_SWITCH:
			g.toSwitch++
		case rret == nvml.SUCCESS && busIDOf(remote) != "":
			// A GPU peer, or (when the type is unknown) possibly a switch: resolved in gpuLinks.
			g.toPeer[normBusID(busIDOf(remote))]++
		default:
			g.toSwitch++
		}
	}
	if g.nvlinks > 0 {
		d.NVLink = fig(float64(g.nvlinks)*perLink, profile.SourceNVML,
			fmt.Sprintf("%d links × %s per direction", g.nvlinks, profile.FormatQuantity(perLink, profile.Rate)))
		where := fmt.Sprintf("%d links", g.nvlinks)
		if g.toSwitch > 0 {
			where += fmt.Sprintf(", %d to NVSwitch", g.toSwitch)
		}
		d.Fact("nvlink", where, profile.SourceNVML)
	}
	applyKindDefaults(d)
	return g, nil
}

// gpuLinks builds the link matrix: NVLink through NVSwitch or direct, else PCIe P2P when
// NVML reports it, else a copy staged through host memory.
func gpuLinks(gpus []*nvmlGPU) [][]profile.Link {
	byBus := map[string]int{}
	for i, g := range gpus {
		if g.busID != "" {
			byBus[g.busID] = i
		}
	}
	// Links whose remote end is not one of our GPUs end at a switch.
	for _, g := range gpus {
		for bus, c := range g.toPeer {
			if _, ok := byBus[bus]; !ok {
				g.toSwitch += c
				delete(g.toPeer, bus)
			}
		}
	}
	k := len(gpus)
	links := make([][]profile.Link, k)
	for i, a := range gpus {
		links[i] = make([]profile.Link, k)
		for j, b := range gpus {
			if i == j {
				links[i][j] = profile.Link{Kind: profile.LinkSelf}
				continue
			}
			links[i][j] = pairLink(a, b)
		}
	}
	return links
}

func pairLink(a, b *nvmlGPU) profile.Link {
	perLink := 25e9
	if a.hasArch {
		perLink = a.arch.nvlinkPerDir
	}
	if b.hasArch {
		perLink = math.Min(perLink, b.arch.nvlinkPerDir)
	}
	lat := fig(profile.DefaultLatency[profile.LinkNVLink], profile.SourceDefault, profile.LatencyNote)
	if c := a.toPeer[b.busID]; c > 0 && b.busID != "" {
		return profile.Link{Kind: profile.LinkNVLink, Name: fmt.Sprintf("nvlink ×%d", c),
			Bandwidth: fig(float64(c)*perLink, profile.SourceNVML, fmt.Sprintf("%d direct links × %s", c, profile.FormatQuantity(perLink, profile.Rate))),
			Latency:   lat}
	}
	if a.toSwitch > 0 && b.toSwitch > 0 {
		c := min(a.toSwitch, b.toSwitch)
		return profile.Link{Kind: profile.LinkNVLink, Name: fmt.Sprintf("nvlink ×%d via NVSwitch", c),
			Bandwidth: fig(float64(c)*perLink, profile.SourceNVML, fmt.Sprintf("%d switch links × %s", c, profile.FormatQuantity(perLink, profile.Rate))),
			Latency:   lat}
	}
	bw := math.Min(a.dev.HostLink.Bandwidth.Value, b.dev.HostLink.Bandwidth.Value)
	src := profile.SourceNVML
	if a.dev.HostLink.Bandwidth.Source != profile.SourceNVML || b.dev.HostLink.Bandwidth.Source != profile.SourceNVML {
		src = profile.SourceDefault
	}
	st, ret := nvmlCall(func() (nvml.GpuP2PStatus, nvml.Return) {
		return a.handle.GetP2PStatus(b.handle, nvml.P2P_CAPS_INDEX_READ)
	})
	if ret == nvml.SUCCESS && st == nvml.P2P_STATUS_OK {
		return profile.Link{Kind: profile.LinkPCIe, Name: "pcie p2p",
			Bandwidth: fig(bw, src, "slower of the two PCIe links (NVML reports P2P read)"),
			Latency:   fig(profile.DefaultLatency[profile.LinkPCIe], profile.SourceDefault, profile.LatencyNote)}
	}
	why := "NVML reports no P2P"
	if ret != nvml.SUCCESS {
		why = "P2P status unknown"
	}
	return profile.Link{Kind: profile.LinkStaged, Name: "via host",
		Bandwidth: fig(bw, src, "staged through host memory: slower of the two PCIe links ("+why+")"),
		Latency:   fig(profile.DefaultLatency[profile.LinkStaged], profile.SourceDefault, profile.LatencyNote)}
}

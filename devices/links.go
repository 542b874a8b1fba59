package devices

import (
	"fmt"
	"math"
	"strings"

	"github.com/onnxpart/onnxpart/profile"
)

// LinkChoices are the values of --link (and of a spec file's links.default): how devices
// that NVML did not describe are connected.
//
//	auto    NVLink between SXM GPUs that both have it, else PCIe peer-to-peer at the slower
//	        host link; a GPU and a CPU device talk over the GPU's host link; two CPU devices
//	        are separate hosts on InfiniBand 100 Gb/s
//	nvlink  NVLink between every pair of GPUs (an error for a GPU without NVLink)
//	pcie3, pcie4, pcie5  PCIe peer-to-peer, capped by each GPU's own host link
//	staged  no peer-to-peer: copies go through host memory
//	ib100, eth10  every device in its own host, on InfiniBand EDR or 10 Gb Ethernet (with
//	        GPUDirect RDMA: the transfer is also capped by each GPU's host link)
var LinkChoices = []string{"auto", "nvlink", "pcie3", "pcie4", "pcie5", "staged", "ib100", "eth10"}

func validLinkChoice(s string) bool {
	for _, c := range LinkChoices {
		if c == s {
			return true
		}
	}
	return false
}

func isSXM(d *profile.Device) bool {
	if d.Catalog == "" {
		return d.NVLink.Value > 0 && d.NVLink.Source == profile.SourceNVML
	}
	if e, ok := LookupCatalog(d.Catalog); ok {
		return e.Form == "sxm"
	}
	return false
}

// hostBW is the bandwidth at which a device can move data to or from its host.
func hostBW(d *profile.Device) profile.Figure {
	if d.Kind == profile.CPU {
		return fig(math.Inf(1), profile.SourceDefault, "")
	}
	return d.HostLink.Bandwidth
}

// minFigure returns the smaller of two figures (keeping its source), ignoring infinite ones.
func minFigure(a, b profile.Figure) profile.Figure {
	if math.IsInf(a.Value, 1) {
		return b
	}
	if math.IsInf(b.Value, 1) || a.Value <= b.Value {
		return a
	}
	return b
}

// autoLink connects device a to device b under a --link choice.
func autoLink(a, b *profile.Device, choice string) (profile.Link, error) {
	if choice == "" {
		choice = "auto"
	}
	gpuA, gpuB := a.Kind != profile.CPU, b.Kind != profile.CPU
	switch choice {
	case "ib100", "eth10":
		l := presetLink(choice)
		l.Bandwidth = minFigure(l.Bandwidth, minFigure(hostBW(a), hostBW(b)))
		if l.Bandwidth.Source != profile.SourceCatalog {
			l.Bandwidth.Note = "capped by a device's host link (" + choice + " is faster)"
		}
		return l, nil
	}
	if a.Host && b.Host && choice == "auto" {
		return hostMemoryLink(a, b), nil
	}
	if !gpuA && !gpuB {
		l := presetLink("ib100")
		l.Bandwidth.Note = "two CPU devices are separate hosts: InfiniBand EDR assumed (" + l.Bandwidth.Note + ")"
		l.Bandwidth.Source = profile.SourceDefault
		return l, nil
	}
	if !gpuA || !gpuB {
		g := a
		if !gpuA {
			g = b
		}
		l := g.HostLink
		if l.Kind == "" {
			l = presetLink("pcie4")
		}
		return l, nil
	}
	staged := func() profile.Link {
		return profile.Link{Kind: profile.LinkStaged, Name: "via host",
			Bandwidth: func() profile.Figure {
				f := minFigure(hostBW(a), hostBW(b))
				f.Note = "staged through host memory at the slower host link"
				return f
			}(),
			Latency: fig(profile.DefaultLatency[profile.LinkStaged], profile.SourceDefault, profile.LatencyNote)}
	}
	p2p := func(cap profile.Figure, name string) profile.Link {
		bw := minFigure(cap, minFigure(hostBW(a), hostBW(b)))
		return profile.Link{Kind: profile.LinkPCIe, Name: name, Bandwidth: bw,
			Latency: fig(profile.DefaultLatency[profile.LinkPCIe], profile.SourceDefault, profile.LatencyNote)}
	}
	nvl := func() profile.Link {
		f := minFigure(a.NVLink, b.NVLink)
		return profile.Link{Kind: profile.LinkNVLink, Name: "nvlink", Bandwidth: f,
			Latency: fig(profile.DefaultLatency[profile.LinkNVLink], profile.SourceDefault, profile.LatencyNote)}
	}
	switch choice {
	case "nvlink":
		for _, d := range []*profile.Device{a, b} {
			if d.NVLink.Value <= 0 {
				return profile.Link{}, fmt.Errorf("link nvlink: %s (%s) has no NVLink", d.Name, d.Model)
			}
		}
		return nvl(), nil
	case "pcie3", "pcie4", "pcie5":
		l := presetLink(choice)
		return p2p(l.Bandwidth, choice+" p2p"), nil
	case "staged":
		return staged(), nil
	case "auto":
		if a.NVLink.Value > 0 && b.NVLink.Value > 0 && isSXM(a) && isSXM(b) {
			return nvl(), nil
		}
		return p2p(fig(math.Inf(1), profile.SourceDefault, ""), "pcie p2p"), nil
	}
	return profile.Link{}, fmt.Errorf("unknown link %q (want one of %s)", choice, strings.Join(LinkChoices, ", "))
}

package costs

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/internal/stats"
	"github.com/onnxpart/onnxpart/profile"
)

// Today is the date a new file records: SOURCE_DATE_EPOCH (seconds since 1970, the
// reproducible-builds convention) when set, else the current day, in UTC.
func Today() string {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(sec, 0).UTC().Format(time.DateOnly)
		}
	}
	return time.Now().UTC().Format(time.DateOnly)
}

// Sample is one model measured on a device.
type Sample struct {
	// Name and SHA256 identify the model file.
	Name, SHA256 string
	Graph        *graph.Graph
	Measured     *profile.Measurement
}

// Describe is the file's record of device d, measured in ONNX Runtime with provider,
// calibrated by cal (fitted on the samples, see profile.Calibrate; nil: none) and holding the
// samples' node times. d is the device before the calibration was applied: its roofline
// figures are those the fit was made against.
func Describe(d *profile.Device, provider, driver string, cal *profile.Calibration, samples []Sample) Device {
	out := Device{Name: d.Name, Classes: map[string]ClassFit{}}
	out.Identity = Identity{Kind: string(d.Kind), Product: d.Model, Threads: d.Threads, Driver: driver, Provider: provider}
	if d.Memory.Value > 0 {
		out.Identity.MemoryBytes = int64(d.Memory.Value)
	}
	out.Roofline = Roofline{PeakFLOPs: map[string]float64{}, Bandwidth: d.Bandwidth.Value, ReadBandwidth: d.ReadBandwidth.Value,
		CacheBytes: d.Cache.Value, CacheBandwidth: d.CacheBandwidth.Value, LaunchS: d.Launch.Value, VectorWidth: d.VectorWidth}
	for p := profile.FP32; p < profile.NumPrecisions; p++ {
		if v := d.Peak[p].Value; v > 0 {
			out.Roofline.PeakFLOPs[p.String()] = v
		}
	}
	for _, r := range d.Reads {
		out.Roofline.Reads = append(out.Roofline.Reads, ReadPoint{Bytes: r.Bytes, Rate: r.Rate})
	}
	if cal != nil {
		out.Call.OverheadS = cal.RunOverhead
		if io := cal.IO; io != nil {
			out.Call.IOPerByteS, out.Call.LayoutPerByteS = io.PerByte, io.LayoutPerByte
			out.Call.ChannelBlock, out.Call.ChannelAlign = io.ChannelBlock, io.ChannelAlign
		}
		for c, f := range cal.Classes {
			out.Classes[string(c)] = ClassFit{Eff: f.Eff, MemEff: f.MemEff, OverheadS: f.Overhead, Nodes: f.Nodes}
		}
	}
	times := map[string][]float64{}
	info := map[string]Entry{}
	for _, s := range samples {
		g, m := s.Graph, s.Measured
		for v := range g.Nodes {
			n := &g.Nodes[v]
			if n.Static || v >= len(m.Node) || !finite(m.Node[v]) {
				continue
			}
			sig := Signature(g, v)
			times[sig] = append(times[sig], m.Node[v])
			if _, ok := info[sig]; !ok {
				op := n.OpType
				if n.Domain != "" && n.Domain != "ai.onnx" {
					op = n.Domain + "::" + op
				}
				info[sig] = Entry{Signature: sig, Op: op, Class: string(profile.ClassOf(g, n))}
			}
		}
	}
	for sig, ts := range times {
		e := info[sig]
		e.TimeS, e.Count = stats.Median(ts), len(ts)
		out.Entries = append(out.Entries, e)
	}
	sort.Slice(out.Entries, func(a, b int) bool { return out.Entries[a].Signature < out.Entries[b].Signature })
	return out
}

// Merge adds the devices of src to dst: a device of the same name and identity gets the
// signatures and the fitted op classes it lacks (its own times, fits and call costs are
// kept: the newer measurement does not silently replace the older); other devices are
// appended. The models
// are listed once each. A device of the same name and another identity is an error: one
// file cannot say which of the two it means.
func Merge(dst, src *File) error {
	for _, sd := range src.Devices {
		for _, dd := range dst.Devices {
			if dd.Name == sd.Name && !sameIdentity(dd.Identity, sd.Identity) {
				return fmt.Errorf("device %s is %s in the file and %s here", sd.Name, identityWords(dd.Identity), identityWords(sd.Identity))
			}
		}
	}
	have := map[string]bool{}
	for _, m := range dst.Models {
		have[m.SHA256] = true
	}
	for _, m := range src.Models {
		if !have[m.SHA256] {
			dst.Models = append(dst.Models, m)
			have[m.SHA256] = true
		}
	}
	for _, sd := range src.Devices {
		found := false
		for i := range dst.Devices {
			dd := &dst.Devices[i]
			if dd.Name != sd.Name || !sameIdentity(dd.Identity, sd.Identity) {
				continue
			}
			found = true
			sigs := map[string]bool{}
			for _, e := range dd.Entries {
				sigs[e.Signature] = true
			}
			for _, e := range sd.Entries {
				if !sigs[e.Signature] {
					dd.Entries = append(dd.Entries, e)
				}
			}
			sort.Slice(dd.Entries, func(a, b int) bool { return dd.Entries[a].Signature < dd.Entries[b].Signature })
			if dd.Classes == nil {
				dd.Classes = map[string]ClassFit{}
			}
			for c, f := range sd.Classes {
				if _, ok := dd.Classes[c]; !ok {
					dd.Classes[c] = f
				}
			}
		}
		if !found {
			dst.Devices = append(dst.Devices, sd)
		}
	}
	return nil
}

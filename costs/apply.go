package costs

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/profile"
)

// Applied is the outcome of Apply: what the planner gets (Measured, and the cluster's
// devices changed in place) and what the output says (Notes, Shares).
type Applied struct {
	Files []*Loaded
	// Measured[d][v] is node v's time on device d from a file, NaN where no file has one;
	// nil for devices no file describes: profile.CostOptions.Measured.
	Measured [][]float64
	// Matched[d] lists, per device, the files (indices into Files) that describe it, in the
	// order given; Calibrated[d] is the file whose figures and calibration device d took
	// (-1: none).
	Matched    [][]int
	Calibrated []int
	// Notes are one line each: a file whose device or ONNX Runtime version does not match,
	// a file that describes none of the devices, devices no file describes.
	Notes []diag.Note
	// source[d][v] is the file that priced node v on device d (-1: the roofline).
	source [][]int
}

type match struct{ file, dev int }

func sameIdentity(a, b Identity) bool {
	return a.Kind == b.Kind && a.Product == b.Product && (a.Kind != string(profile.CPU) || a.Threads == b.Threads)
}

func identityOf(d *profile.Device) Identity {
	return Identity{Kind: string(d.Kind), Product: d.Model, Threads: d.Threads}
}

func identityWords(id Identity) string {
	s := id.Product
	if s == "" {
		s = "unknown " + id.Kind
	}
	if id.Kind == string(profile.CPU) && id.Threads > 0 {
		s += fmt.Sprintf(", %d thread(s)", id.Threads)
	}
	return s
}

// Apply prices g on the cluster c from the files (see the package comment for how devices
// match): every matched device takes the roofline figures, call costs and fitted
// efficiencies of its first file (changed in place; the cluster must not be shared), and
// Measured holds the files' times of g's nodes. ortVersion is the ONNX Runtime this onnxpart
// runs ("" to skip that check): a file measured with another gets a note.
func Apply(c *profile.Cluster, g *graph.Graph, files []*Loaded, ortVersion string) *Applied {
	k := len(c.Devices)
	a := &Applied{Files: files, Measured: make([][]float64, k), Matched: make([][]int, k), Calibrated: make([]int, k), source: make([][]int, k)}
	matches := make([][]match, k)
	nameOnly := make([][]string, len(files)) // per file: "cpu (file: AMD …; here: Intel …)"
	used := make([]bool, len(files))
	for d := range c.Devices {
		dev := &c.Devices[d]
		id := identityOf(dev)
		pass := func(ok func(fd *Device) bool) {
			for fi, l := range files {
				for di := range l.File.Devices {
					if fd := &l.File.Devices[di]; ok(fd) {
						matches[d] = append(matches[d], match{fi, di})
					}
				}
			}
		}
		pass(func(fd *Device) bool { return fd.Name == dev.Name && sameIdentity(fd.Identity, id) })
		if len(matches[d]) == 0 {
			pass(func(fd *Device) bool { return sameIdentity(fd.Identity, id) })
		}
		if len(matches[d]) == 0 {
			pass(func(fd *Device) bool { return fd.Name == dev.Name })
			for _, m := range matches[d] {
				fd := &files[m.file].File.Devices[m.dev]
				nameOnly[m.file] = append(nameOnly[m.file], fmt.Sprintf("%s (measured on %s; here %s)", dev.Name, identityWords(fd.Identity), identityWords(id)))
			}
		}
		a.Calibrated[d] = -1
		seen := map[int]bool{}
		for _, m := range matches[d] {
			used[m.file] = true
			if !seen[m.file] {
				seen[m.file] = true
				a.Matched[d] = append(a.Matched[d], m.file)
			}
		}
	}
	for fi, l := range files {
		if v := l.File.ONNXRuntime; ortVersion != "" && v != ortVersion && used[fi] {
			a.Notes = append(a.Notes, diag.Notef(diag.NoteMismatch, "cost file %s: measured with ONNX Runtime %s, this onnxpart runs %s: its kernels' times may differ", l.Path, v, ortVersion).About(diag.File, l.Path))
		}
		if len(nameOnly[fi]) > 0 {
			a.Notes = append(a.Notes, diag.Notef(diag.NoteMismatch, "cost file %s: applied by device name to a device other than the one measured: %s; its times may not fit", l.Path, strings.Join(nameOnly[fi], ", ")).About(diag.File, l.Path))
		}
		if !used[fi] {
			var have []string
			for _, fd := range l.File.Devices {
				have = append(have, fmt.Sprintf("%s (%s)", fd.Name, identityWords(fd.Identity)))
			}
			a.Notes = append(a.Notes, diag.Notef(diag.NoteSkipped, "cost file %s describes none of the devices (it has %s): unused", l.Path, strings.Join(have, ", ")).About(diag.File, l.Path))
		}
	}
	var none []string
	for d := range c.Devices {
		if len(matches[d]) == 0 {
			none = append(none, fmt.Sprintf("%s (%s)", c.Devices[d].Name, identityWords(identityOf(&c.Devices[d]))))
		}
	}
	if len(none) > 0 && len(files) > 0 {
		a.Notes = append(a.Notes, diag.Notef(diag.NoteApprox, "no cost file describes %s: priced by the roofline with the device's own figures", strings.Join(none, ", ")))
	}
	// Figures and calibration of the first match.
	for d := range c.Devices {
		if len(matches[d]) == 0 {
			continue
		}
		m := matches[d][0]
		a.Calibrated[d] = m.file
		calibrate(&c.Devices[d], files[m.file], &files[m.file].File.Devices[m.dev])
	}
	// Node times.
	sigs := make([]string, len(g.Nodes))
	for v := range g.Nodes {
		if !g.Nodes[v].Static {
			sigs[v] = Signature(g, v)
		}
	}
	for d := range c.Devices {
		a.source[d] = make([]int, len(g.Nodes))
		for v := range a.source[d] {
			a.source[d][v] = -1
		}
		if len(matches[d]) == 0 {
			continue
		}
		tables := make([]map[string]float64, len(matches[d]))
		for i, m := range matches[d] {
			t := map[string]float64{}
			for _, e := range files[m.file].File.Devices[m.dev].Entries {
				t[e.Signature] = e.TimeS
			}
			tables[i] = t
		}
		row := make([]float64, len(g.Nodes))
		for v := range row {
			row[v] = math.NaN()
			if sigs[v] == "" {
				continue
			}
			for i, t := range tables {
				if x, ok := t[sigs[v]]; ok {
					row[v], a.source[d][v] = x, matches[d][i].file
					break
				}
			}
		}
		a.Measured[d] = row
	}
	return a
}

// calibrate sets d's roofline figures, call costs and fitted efficiencies to fd's.
func calibrate(d *profile.Device, l *Loaded, fd *Device) {
	note := "cost file " + l.Path
	set := func(f *profile.Figure, v float64) {
		if v > 0 {
			*f = profile.Figure{Value: v, Source: profile.SourceSpec, Note: note}
		}
	}
	for p := profile.FP32; p < profile.NumPrecisions; p++ {
		set(&d.Peak[p], fd.Roofline.PeakFLOPs[p.String()])
	}
	set(&d.Bandwidth, fd.Roofline.Bandwidth)
	set(&d.ReadBandwidth, fd.Roofline.ReadBandwidth)
	set(&d.Cache, fd.Roofline.CacheBytes)
	set(&d.CacheBandwidth, fd.Roofline.CacheBandwidth)
	set(&d.Launch, fd.Roofline.LaunchS)
	if len(fd.Roofline.Reads) > 0 {
		d.Reads = nil
		for _, r := range fd.Roofline.Reads {
			d.Reads = append(d.Reads, profile.ReadPoint{Bytes: r.Bytes, Rate: r.Rate})
		}
	}
	if fd.Roofline.VectorWidth > 0 {
		d.VectorWidth = fd.Roofline.VectorWidth
	}
	cal := &profile.Calibration{Classes: map[profile.OpClass]profile.ClassFit{}, RunOverhead: fd.Call.OverheadS}
	for c, f := range fd.Classes {
		cal.Classes[profile.OpClass(c)] = profile.ClassFit{Eff: f.Eff, MemEff: f.MemEff, Overhead: f.OverheadS, Nodes: f.Nodes}
	}
	for _, m := range l.File.Models {
		cal.Models = append(cal.Models, m.Name)
	}
	if len(cal.Models) == 0 {
		cal.Models = []string{filepath.Base(l.Path)}
	}
	if fd.Call != (Call{}) {
		cal.IO = &profile.IOCost{Fixed: fd.Call.OverheadS, PerByte: fd.Call.IOPerByteS, LayoutPerByte: fd.Call.LayoutPerByteS,
			ChannelBlock: fd.Call.ChannelBlock, ChannelAlign: fd.Call.ChannelAlign}
	}
	cal.Apply(d)
}

// Share is the part of a plan's node time one source priced.
type Share struct {
	// File is the index of the cost file (-1: the roofline); Calibrated marks roofline time on
	// devices calibrated from a file.
	File       int
	Calibrated bool
	Seconds    float64
	Fraction   float64
}

// Shares splits a plan's node time by what priced it: device[v] is the device index node v
// runs on (-1: none; a node on several devices, as in a batched plan's routes, is counted on
// the first); each node counts its measured time when a file has one, else its roofline time
// (cm.NodeTime, with the figures Apply set). Shares in a fixed order: the files in the order
// given, then calibrated roofline, then the plain roofline; zero shares left out.
func (a *Applied) Shares(g *graph.Graph, cm *profile.CostModel, device []int) []Share {
	byFile := make([]float64, len(a.Files))
	var cal, roof, total float64
	for v := range g.Nodes {
		d := -1
		if v < len(device) {
			d = device[v]
		}
		if d < 0 || d >= len(a.source) || g.Nodes[v].Static {
			continue
		}
		if f := sourceOf(a.source[d], v); f >= 0 {
			t := a.Measured[d][v]
			byFile[f] += t
			total += t
			continue
		}
		t := cm.NodeTime(g, v, d)
		total += t
		if a.Calibrated[d] >= 0 {
			cal += t
		} else {
			roof += t
		}
	}
	var out []Share
	add := func(s Share) {
		if s.Seconds > 0 {
			if total > 0 {
				s.Fraction = s.Seconds / total
			}
			out = append(out, s)
		}
	}
	for f, t := range byFile {
		add(Share{File: f, Seconds: t})
	}
	add(Share{File: -1, Calibrated: true, Seconds: cal})
	add(Share{File: -1, Seconds: roof})
	return out
}

// Line words shares as the output states them: "costs: 96% measured (costs-a100.json), 4%
// calibrated roofline".
func (a *Applied) Line(shares []Share) string {
	var parts []string
	for _, s := range shares {
		switch {
		case s.File >= 0:
			parts = append(parts, fmt.Sprintf("%s measured (%s)", pct(s.Fraction), a.Files[s.File].Path))
		case s.Calibrated:
			parts = append(parts, pct(s.Fraction)+" calibrated roofline")
		default:
			parts = append(parts, pct(s.Fraction)+" roofline")
		}
	}
	if len(parts) == 0 {
		return "costs: no node time to price"
	}
	return "costs: " + strings.Join(parts, ", ")
}

// pct rounds a fraction to a whole percent, keeping a non-zero share off "0%".
func pct(f float64) string {
	p := math.Round(f * 100)
	if p == 0 && f > 0 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// DevicesOf lists, per file, the names of the devices it priced (matched), in cluster order.
func (a *Applied) DevicesOf(c *profile.Cluster) [][]string {
	out := make([][]string, len(a.Files))
	for d, fs := range a.Matched {
		for _, f := range fs {
			out[f] = append(out[f], c.Devices[d].Name)
		}
	}
	for i := range out {
		sort.SliceStable(out[i], func(x, y int) bool { return c.Index(out[i][x]) < c.Index(out[i][y]) })
	}
	return out
}

// FromMeasured describes node times measured during the run (--costs measured:
// profile.CostOptions.Measured, nil for devices not measured) as Apply describes files', so
// that Shares and Line state what they priced: one source named label, and every measured
// device counted as calibrated from it.
func FromMeasured(measured [][]float64, label string) *Applied {
	a := &Applied{Files: []*Loaded{{Path: label}}, Measured: measured, Matched: make([][]int, len(measured)),
		Calibrated: make([]int, len(measured)), source: make([][]int, len(measured))}
	for d, row := range measured {
		a.Calibrated[d] = -1
		if row == nil {
			continue
		}
		a.Calibrated[d], a.Matched[d] = 0, []int{0}
		a.source[d] = make([]int, len(row))
		for v, t := range row {
			a.source[d][v] = -1
			if !math.IsNaN(t) {
				a.source[d][v] = 0
			}
		}
	}
	return a
}

func sourceOf(row []int, v int) int {
	if v < len(row) {
		return row[v]
	}
	return -1
}

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onnxpart/onnxpart/costs"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/graph"
	"github.com/onnxpart/onnxpart/ingest"
	ortmeasure "github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/internal/ort"
	"github.com/onnxpart/onnxpart/profile"
)

// costsFlagHelp is --costs's help in the commands that plan or predict.
const costsFlagHelp = "node costs: roofline (analytic); measured (an ONNX Runtime profile of the host CPU on this run: not reproducible); or cost files FILE[,FILE] written by onnxpart profile --costs measured -o FILE (reproducible; several machines' files combine)"

// costSpec is a parsed --costs value.
type costSpec struct {
	mode  string // roofline, measured or files
	paths []string
	files []*costs.Loaded
}

// parseCosts reads --costs: roofline, measured, or comma-separated cost files, each read and
// checked now, before anything is measured, planned or written (a malformed file is a usage
// error naming it).
func parseCosts(v string) (*costSpec, error) {
	switch v {
	case "roofline", "measured":
		return &costSpec{mode: v}, nil
	case "":
		return nil, diag.Usage("--costs is empty: want roofline, measured or cost files FILE[,FILE]").About(diag.Flag, "--costs")
	}
	s := &costSpec{mode: "files"}
	for _, p := range strings.Split(v, ",") {
		if p == "" {
			return nil, diag.Usage("--costs %q: an empty file name in the list", v).About(diag.Flag, "--costs")
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(p, `/\.`) {
			return nil, diag.Usage("--costs %q: want roofline, measured or cost files FILE[,FILE] (no file %s)", v, p).About(diag.Flag, "--costs")
		}
		l, err := costs.Read(p)
		if err != nil {
			return nil, err
		}
		s.paths = append(s.paths, p)
		s.files = append(s.files, l)
	}
	return s, nil
}

// apply prices g on the cluster from the files (costs.Apply), with the ONNX Runtime
// this onnxpart loads for the version check.
func (s *costSpec) apply(c *profile.Cluster, g *graph.Graph) *costs.Applied {
	return costs.Apply(c, g, s.files, ort.LoadedVersion())
}

// notReproducible is the note of a plan priced by --costs measured.
const notReproducible = "costs: measured in ONNX Runtime on this run, so the plan is not reproducible (a rerun measures again); measure once with onnxpart profile MODEL --devices DEVICES --costs measured -o costs.json and plan with --costs costs.json"

// costsManifest records the files and shares in the manifest.
func costsManifest(a *costs.Applied, c *profile.Cluster, shares []costs.Share) *emit.Costs {
	out := &emit.Costs{Source: "files"}
	devs := a.DevicesOf(c)
	for i, l := range a.Files {
		f := emit.CostFile{Path: l.Path, SHA256: l.SHA256, Devices: devs[i]}
		if f.Devices == nil {
			f.Devices = []string{}
		}
		out.Files = append(out.Files, f)
	}
	for _, s := range shares {
		switch {
		case s.File >= 0:
			out.Files[s.File].Share = round4(s.Fraction)
		case s.Calibrated:
			out.CalibratedRooflineShare = round4(s.Fraction)
		default:
			out.RooflineShare = round4(s.Fraction)
		}
	}
	return out
}

func round4(x float64) float64 {
	return float64(int64(x*1e4+0.5)) / 1e4
}

// measureCostFile is `onnxpart profile MODEL... --costs measured -o FILE`: it profiles every
// model in ONNX Runtime on every host CPU device of the cluster (only those named by only,
// when given), fits each device's op classes on all the models together and writes the cost
// file atomically (merged into the existing file when merge is set).
func measureCostFile(ctx context.Context, e *env, cl *profile.Cluster, paths []string, opt ingest.Options, only []string, out string, merge bool) error {
	for _, n := range only {
		if cl.Index(n) < 0 {
			var names []string
			for _, d := range cl.Devices {
				names = append(names, d.Name)
			}
			return diag.Usage("--only %s: no such device among %s", n, strings.Join(names, ", ")).About(diag.Flag, "--only")
		}
	}
	var old *costs.Loaded
	if merge {
		if _, err := os.Stat(out); err == nil {
			l, err := costs.Read(out)
			if err != nil {
				return err
			}
			old = l
		}
	}
	var notes []string
	var sel []int
	for i := range cl.Devices {
		d := &cl.Devices[i]
		if len(only) > 0 && !slices.Contains(only, d.Name) {
			continue
		}
		if !d.Host {
			notes = append(notes, fmt.Sprintf("%s (%s) is not measured: measuring a GPU needs a GPU build of ONNX Runtime, which this onnxpart does not load; measure it on its host with a GPU build, or plan it by the roofline", d.Name, d.Model))
			continue
		}
		sel = append(sel, i)
	}
	if len(sel) == 0 {
		return diag.Usage("--costs measured -o %s: no device to measure (the host CPU is: add cpu to --devices)", out).About(diag.Flag, "--devices")
	}
	type model struct {
		path string
		m    *ingest.Model
		sum  string
	}
	var models []model
	for _, p := range paths {
		m, err := ingest.Load(p, opt)
		if err != nil {
			return err
		}
		if err := m.RequireInputSizes(); err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(data)
		models = append(models, model{p, m, hex.EncodeToString(h[:])})
	}
	if err := ort.Init(); err != nil {
		return diag.Wrap(diag.KindInput, err)
	}
	f := &costs.File{Date: costs.Today(), Producer: version, ONNXRuntime: ort.LoadedVersion()}
	for _, md := range models {
		f.Models = append(f.Models, costs.Model{Name: filepath.Base(md.path), SHA256: md.sum, Nodes: len(md.m.Graph.Nodes)})
	}
	// One measurement per thread count: the host devices of a split (cpu:2x1) are alike.
	type run struct {
		cal     *profile.Calibration
		samples []costs.Sample
	}
	runs := map[int]*run{}
	for _, i := range sel {
		d := cl.Devices[i] // the figures before calibration: what the fit is made against
		r := runs[d.Threads]
		if r == nil {
			r = &run{}
			io, err := ortmeasure.MeasureIO(ctx, max(d.Threads, 1), 20, d.Bandwidth.Value)
			if err != nil {
				return diag.Wrap(diag.KindInput, fmt.Errorf("measuring ONNX Runtime's call costs: %w", err))
			}
			var samples []profile.Sample
			for _, md := range models {
				fmt.Fprintf(e.stderr, "onnxpart profile: measuring %s on %s (%d thread(s))\n", md.path, d.Name, max(d.Threads, 1))
				meas, err := ortmeasure.MeasureORT(ctx, md.path, md.m.Graph, ortmeasure.MeasureOptions{Threads: max(d.Threads, 1), IO: &io})
				if err != nil {
					return diag.Wrap(diag.KindInput, fmt.Errorf("measuring %s in ONNX Runtime: %w", md.path, err))
				}
				samples = append(samples, profile.Sample{Graph: md.m.Graph, Measured: meas})
				r.samples = append(r.samples, costs.Sample{Name: filepath.Base(md.path), SHA256: md.sum, Graph: md.m.Graph, Measured: meas})
			}
			r.cal = profile.Calibrate(&d, samples)
			runs[d.Threads] = r
		}
		f.Devices = append(f.Devices, costs.Describe(&d, "CPUExecutionProvider", "", r.cal, r.samples))
	}
	if old != nil {
		if old.File.ONNXRuntime != f.ONNXRuntime {
			return diag.Usage("--merge: %s was measured with ONNX Runtime %s, this onnxpart runs %s: write another file", out, old.File.ONNXRuntime, f.ONNXRuntime).About(diag.File, out)
		}
		base := *old.File
		if err := costs.Merge(&base, f); err != nil {
			return diag.Usage("--merge %s: %v", out, err).About(diag.File, out)
		}
		base.Date, base.Producer = f.Date, f.Producer
		f = &base
	}
	if err := costs.Write(out, f); err != nil {
		return diag.Wrap(diag.KindInput, err).About(diag.File, out)
	}
	for _, n := range notes {
		fmt.Fprintf(e.stderr, "onnxpart profile: %s\n", n)
	}
	printCostFile(e.stdout, out, f)
	return nil
}

// printCostFile summarises a written cost file.
func printCostFile(w io.Writer, path string, f *costs.File) {
	var names []string
	for _, m := range f.Models {
		names = append(names, m.Name)
	}
	fmt.Fprintf(w, "wrote %s (%s, ONNX Runtime %s, %s): %s\n", path, costs.Format, f.ONNXRuntime, f.Date, strings.Join(names, ", "))
	for _, d := range f.Devices {
		fmt.Fprintf(w, "  %s  %s, %d thread(s): %d signatures, %d op classes fitted, call %s\n", d.Name, d.Identity.Product,
			d.Identity.Threads, len(d.Entries), len(d.Classes), timeStr(d.Call.OverheadS))
	}
}

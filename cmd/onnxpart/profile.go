package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/onnxpart/onnxpart/costs"
	hw "github.com/onnxpart/onnxpart/devices"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/ingest"
	ortmeasure "github.com/onnxpart/onnxpart/internal/measure"
	"github.com/onnxpart/onnxpart/profile"
)

func init() {
	register(&command{
		name:    "profile",
		summary: "describe the devices and predict a model's time per op class on each",
		usage: `Usage: onnxpart profile [--devices SPEC] [--link KIND] [--costs roofline|measured|FILE[,FILE]] [flags] [MODEL.onnx]
       onnxpart profile --devices SPEC --costs measured -o COSTS.json [--only NAME] [--merge] MODEL.onnx...

Prints the devices onnxpart would plan for, every figure with its source (nvml, catalog,
spec, measured, host, default), the links between them, and, given a model, its predicted
time on each device and the share of each op class.

A model is priced as the planner prices a stage: coarsened into the fused kernels of the
rule set the plan would use (--fusion; by default ort-cuda when a device is a GPU, else
ort-cpu), each kernel priced once, plus the device's run overhead. A stage file written by
onnxpart, profiled with the plan's devices, dims and rule set, gets the manifest's figures:
its compute is the stage's compute_s and the run overhead its call_s. The time to bind the
inputs and outputs is shown apart: a plan counts it with a stage's communication.

--devices takes:
  auto                 the GPUs NVML finds (NVLink, PCIe P2P); the host CPU when there are
                       none, with the reason
  4xH100-SXM, a100-80g,t4,cpu
                       built-in catalog devices (onnxpart profile --catalog lists them) and
                       cpu, this machine's CPU; connected as --link says
  FILE.yaml, FILE.json a device spec file (examples in testdata/devices/)

--costs measured profiles the model in ONNX Runtime on this machine's CPU, uses the measured
per-node times for the host CPU device and calibrates its roofline efficiencies with them.
--costs measured -o COSTS.json measures each model in ONNX Runtime on every device of
--devices it can reach (the host CPU devices; --only names some) and writes a cost file
(schema costs.v1): per node signature the measured time, each device's identity, call
costs, roofline figures and fitted op-class efficiencies. --merge adds to an existing file.
Plans priced from it are reproducible: onnxpart MODEL --devices … --costs COSTS.json.
A GPU needs a GPU build of ONNX Runtime, which this onnxpart does not load: it is left out.
--costs FILE[,FILE] predicts from cost files, as the planner prices.
--nodes adds each kernel's predicted time (JSON: model.kernels) and each node's time priced
alone (JSON: model.node_times), in graph order.

Examples:
  onnxpart profile
  onnxpart profile --devices 4xH100-SXM --link nvlink resnet50.onnx
  onnxpart profile --devices testdata/devices/moirai-inter-server.yaml --json
  onnxpart profile --devices cpu --costs measured squeezenet.onnx
  onnxpart profile --devices cpu:2x1 --costs measured -o costs.json resnet50.onnx bert.onnx
  onnxpart profile --devices cpu:2x1 --costs costs.json resnet50.onnx
`,
		run: runProfile,
	})
}

func runProfile(ctx context.Context, e *env, args []string) error {
	c := commands["profile"]
	fs := newFlags(e, c)
	devices := fs.String("devices", "auto", "auto, a catalog list such as 4xH100-SXM or a100-80g,t4,cpu, or a .yaml/.json spec file")
	link := fs.String("link", "auto", "how catalog devices connect: "+strings.Join(hw.LinkChoices, ", "))
	costsFlag := fs.String("costs", "roofline", "roofline; measured (profile the model in ONNX Runtime on this CPU); or cost files FILE[,FILE]")
	out := fs.StringP("output", "o", "", "with --costs measured: write the measurements to this cost file (costs.v1) instead of predicting")
	only := fs.StringSlice("only", nil, "with -o: measure only these devices (names as --devices gives them, e.g. cpu0)")
	merge := fs.Bool("merge", false, "with -o: add to the cost file if it exists (its entries are kept; new signatures and devices are added)")
	threads := fs.Int("threads", 0, "CPU threads the host CPU device (and ONNX Runtime when measuring) uses (default: all cores, as the planner)")
	dimFlags := fs.StringArray("dim", nil, "bind a symbolic dimension of the model, NAME=SIZE (repeatable)")
	shapeFlags := fs.StringArray("input-shape", nil, inputShapeHelp)
	asJSON := fs.Bool("json", false, "print one JSON object")
	catalog := fs.Bool("catalog", false, "list the built-in device catalog and exit")
	noBench := fs.Bool("no-bench", false, "do not run the host CPU microbenchmarks (nominal figures)")
	refresh := fs.Bool("refresh", false, "rerun the host CPU microbenchmarks instead of using the cache")
	nodes := fs.Bool("nodes", false, "with a model, also list each kernel's and each node's predicted time on each device")
	fusionSet := fs.String("fusion", "", "fusion rule set to coarsen the model with: "+strings.Join(fusion.BuiltinNames(), ", ")+", none (default: by device, as the planner)")
	fusionRules := fs.String("fusion-rules", "", "coarsen by the rule set in `FILE` instead")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *catalog {
		if fs.NArg() > 0 {
			return diag.Usage("--catalog takes no model").About(diag.Flag, "--catalog")
		}
		return printCatalog(e.stdout, *asJSON)
	}
	if *out != "" {
		switch {
		case *costsFlag != "measured":
			return diag.Usage("-o writes a cost file: give --costs measured").About(diag.Flag, "-o")
		case fs.NArg() == 0:
			return diag.Usage("-o %s: give the models to measure", *out).About(diag.Flag, "-o")
		case *asJSON || *nodes:
			return diag.Usage("-o writes a cost file and prints a summary: leave out --json and --nodes").About(diag.Flag, "-o")
		}
	} else if len(*only) > 0 || *merge {
		return diag.Usage("--only and --merge go with -o COSTS.json").About(diag.Flag, "-o")
	}
	if fs.NArg() > 1 && *out == "" {
		return diag.Usage("profile takes at most one model file, got %d arguments (several models go into a cost file: --costs measured -o FILE)", fs.NArg())
	}
	cspec, err := parseCosts(*costsFlag)
	if err != nil {
		return err
	}
	if *nodes && fs.NArg() == 0 {
		return diag.Usage("--nodes needs a model").About(diag.Flag, "--nodes")
	}
	if cspec.mode != "roofline" && fs.NArg() == 0 {
		return diag.Usage("--costs %s needs a model", *costsFlag).About(diag.Flag, "--costs")
	}
	if *threads < 0 {
		return diag.Usage("--threads %d: want 0 (all cores) or more", *threads).About(diag.Flag, "--threads")
	}
	if *fusionSet != "" && *fusionRules != "" {
		return diag.Usage("give --fusion or --fusion-rules, not both").About(diag.Flag, "--fusion-rules")
	}
	if (*fusionSet != "" || *fusionRules != "") && fs.NArg() == 0 {
		return diag.Usage("--fusion and --fusion-rules need a model").About(diag.Flag, "--fusion")
	}
	dims, err := parseDims(*dimFlags)
	if err != nil {
		return err
	}
	shapes, err := parseInputShapes(*shapeFlags)
	if err != nil {
		return err
	}
	l := *link
	if l == "auto" {
		l = ""
	}
	cl, err := hw.Resolve(ctx, *devices, hw.Options{Link: l, Threads: *threads, Names: profileFlags,
		Host: hw.HostOptions{NoBench: *noBench, Refresh: *refresh}})
	if err != nil {
		return err
	}
	if *out != "" {
		for _, n := range cl.Notes {
			fmt.Fprintf(e.stderr, "onnxpart profile: %s\n", n)
		}
		return measureCostFile(ctx, e, cl, fs.Args(), ingest.Options{Dims: dims, InputShapes: shapes, Names: ingestFlags}, *only, *out, *merge)
	}
	rep := &profileReport{Devices: *devices, Notes: diag.NoteStrings(cl.Notes)}
	for i := range cl.Devices {
		rep.Device = append(rep.Device, deviceJSON(&cl.Devices[i]))
	}
	for i := range cl.Links {
		row := make([]linkJSON, len(cl.Links[i]))
		for j, lk := range cl.Links[i] {
			row[j] = linkOf(lk)
		}
		rep.Links = append(rep.Links, row)
	}
	if fs.NArg() == 1 {
		name := *fusionSet
		if name == "" && *fusionRules == "" {
			name = profile.DefaultRuleSet(cl, nil)
		}
		var rs *fusion.RuleSet
		if name != "none" {
			if rs, err = fusion.Resolve(name, *fusionRules); err != nil {
				if name != "" {
					var de *diag.Error
					if errors.As(err, &de) && de.Kind == diag.KindUsage {
						de.About(diag.Flag, "--fusion")
					}
				}
				return err
			}
		}
		if err := predictModel(ctx, rep, cl, fs.Arg(0), ingest.Options{Dims: dims, InputShapes: shapes, Names: ingestFlags}, cspec, *threads, rs, *nodes); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(e.stderr, "onnxpart profile: %s\n", n)
	}
	printProfile(e.stdout, rep)
	return nil
}

type figureJSON struct {
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Source string  `json:"source"`
	Note   string  `json:"note,omitempty"`
}

type linkJSON struct {
	Kind      string      `json:"kind"`
	Name      string      `json:"name,omitempty"`
	Bandwidth *figureJSON `json:"bandwidth,omitempty"`
	Latency   *figureJSON `json:"latency,omitempty"`
}

type deviceReport struct {
	Name     string                `json:"name"`
	Model    string                `json:"model"`
	Kind     string                `json:"kind"`
	Catalog  string                `json:"catalog,omitempty"`
	Figures  map[string]figureJSON `json:"figures"`
	HostLink linkJSON              `json:"host_link"`
	// Efficiency and Overhead hold the non-default entries (spec files, calibration).
	Efficiency map[string]figureJSON `json:"efficiency,omitempty"`
	Overhead   map[string]figureJSON `json:"overhead,omitempty"`
	Facts      []profile.Fact        `json:"facts"`
}

// classRow is the kernels of one op class (profile.KernelClass).
type classRow struct {
	Class   string    `json:"class"`
	Kernels int       `json:"kernels"`
	Nodes   int       `json:"nodes"`   // the kernels' nodes, absorbed constants included
	Time    []float64 `json:"seconds"` // per device
}

// kernelRow is one kernel's prediction (--nodes): a fused group, or a node.
type kernelRow struct {
	Name  string    `json:"name"`
	Rule  string    `json:"rule"` // the fusion rule, or the node's op type
	Class string    `json:"class"`
	Nodes []string  `json:"members"`
	FLOPs int64     `json:"flops"`
	Bytes int64     `json:"bytes"`   // activations in and out, and weights
	Time  []float64 `json:"seconds"` // per device
}

// nodeRow is one node's prediction priced alone (--nodes).
type nodeRow struct {
	Name   string    `json:"name"`
	Op     string    `json:"op"`
	Class  string    `json:"class"`
	Kernel string    `json:"kernel"` // the kernel that computes it
	FLOPs  int64     `json:"flops"`
	Bytes  int64     `json:"bytes"`   // inputs, parameters and outputs
	Time   []float64 `json:"seconds"` // per device, the node alone
}

// modelReport prices the model as the planner prices one stage holding all of it: Compute
// (compute_s) + Overhead (call_s) = Total; Binding is apart (a plan's comm_s).
type modelReport struct {
	Path       string     `json:"path"`
	Nodes      int        `json:"nodes"`
	FLOPs      int64      `json:"flops"`
	Costs      string     `json:"costs"`
	Fusion     string     `json:"fusion"`
	NumKernels int        `json:"kernels"`
	Classes    []classRow `json:"classes"`
	Compute    []float64  `json:"compute_seconds"`
	Overhead   []float64  `json:"run_overhead_seconds"`
	Total      []float64  `json:"total_seconds"`
	Binding    []float64  `json:"binding_seconds"`
	Measured   *float64   `json:"measured_call_seconds,omitempty"`
	Calibrate  []string   `json:"calibrated,omitempty"`
	// CostFiles are the cost files (Costs "files"); CostShares says per device what priced
	// the model's nodes.
	CostFiles  []string    `json:"cost_files,omitempty"`
	CostShares []string    `json:"cost_shares,omitempty"`
	Kernels    []kernelRow `json:"kernel_times,omitempty"`
	NodeRows   []nodeRow   `json:"node_times,omitempty"`
}

type profileReport struct {
	Devices string         `json:"devices"`
	Notes   []string       `json:"notes"`
	Device  []deviceReport `json:"device_list"`
	Links   [][]linkJSON   `json:"links"`
	Model   *modelReport   `json:"model,omitempty"`
}

var figureOrder = []struct {
	key  string
	unit profile.Unit
}{
	{"memory", profile.Bytes}, {"memory_cap", profile.Bytes}, {"peak_fp32", profile.FLOPRate},
	{"peak_tf32", profile.FLOPRate}, {"peak_fp16", profile.FLOPRate}, {"peak_int8", profile.FLOPRate},
	{"bandwidth", profile.Rate}, {"nvlink", profile.Rate}, {"launch", profile.Seconds},
	{"run_overhead", profile.Seconds}, {"io_bandwidth", profile.Rate}, {"layout_bandwidth", profile.Rate},
}

func unitName(u profile.Unit) string {
	return map[profile.Unit]string{profile.Bytes: "B", profile.Rate: "B/s", profile.FLOPRate: "FLOP/s",
		profile.Seconds: "s", profile.Plain: ""}[u]
}

func figOf(f profile.Figure, u profile.Unit) figureJSON {
	return figureJSON{Value: f.Value, Unit: unitName(u), Source: string(f.Source), Note: f.Note}
}

func linkOf(l profile.Link) linkJSON {
	j := linkJSON{Kind: string(l.Kind), Name: l.Name}
	if l.Kind != profile.LinkSelf && l.Kind != profile.LinkNone {
		b, lat := figOf(l.Bandwidth, profile.Rate), figOf(l.Latency, profile.Seconds)
		j.Bandwidth, j.Latency = &b, &lat
	}
	return j
}

func deviceJSON(d *profile.Device) deviceReport {
	r := deviceReport{Name: d.Name, Model: d.Model, Kind: string(d.Kind), Catalog: d.Catalog,
		Figures: map[string]figureJSON{}, HostLink: linkOf(d.HostLink), Facts: d.Facts}
	r.Facts = append([]profile.Fact{}, d.Facts...)
	// The CPU kernel geometry the roofline uses (lane padding of output channels, blocked
	// layout of convolutions), so that a prediction can be traced to it.
	if d.VectorWidth > 0 {
		src := profile.SourceDefault
		switch {
		case d.ChannelAlign > 0: // both come from MeasureIO's blocked-layout probe
			src = profile.SourceMeasured
		case d.Host:
			src = profile.SourceHost // the ISA flags
		case d.Catalog != "":
			src = profile.SourceCatalog
		}
		r.Facts = append(r.Facts, profile.Fact{Key: "vector width", Value: fmt.Sprintf("%d fp32 lanes (output channels are rounded up to it)", d.VectorWidth), Source: src})
	}
	if d.ChannelAlign > 0 {
		r.Facts = append(r.Facts, profile.Fact{Key: "blocked-layout channel multiple", Value: fmt.Sprintf("%d (other convolutions run in the plain layout)", d.ChannelAlign), Source: profile.SourceMeasured})
	}
	set := func(k string, f profile.Figure, u profile.Unit) {
		if f.Known() {
			r.Figures[k] = figOf(f, u)
		}
	}
	set("memory", d.Memory, profile.Bytes)
	set("memory_cap", d.MemoryCap, profile.Bytes)
	for p := profile.FP32; p < profile.NumPrecisions; p++ {
		set("peak_"+p.String(), d.Peak[p], profile.FLOPRate)
	}
	set("bandwidth", d.Bandwidth, profile.Rate)
	set("nvlink", d.NVLink, profile.Rate)
	set("launch", d.Launch, profile.Seconds)
	set("run_overhead", d.RunOverhead, profile.Seconds)
	set("io_bandwidth", d.IOBandwidth, profile.Rate)
	set("layout_bandwidth", d.LayoutBandwidth, profile.Rate)
	if len(d.Efficiency)+len(d.MemEfficiency) > 0 {
		r.Efficiency = map[string]figureJSON{}
		for k, f := range d.Efficiency {
			r.Efficiency[k] = figOf(f, profile.Plain)
		}
		for k, f := range d.MemEfficiency {
			r.Efficiency[k+"/memory"] = figOf(f, profile.Plain)
		}
	}
	if len(d.Overhead) > 0 {
		r.Overhead = map[string]figureJSON{}
		for k, f := range d.Overhead {
			r.Overhead[k] = figOf(f, profile.Seconds)
		}
	}
	return r
}

// predictModel fills rep.Model: the model's time on every device as the planner prices a
// stage holding it (profile.CostModel.PriceGraph with the rule set rs; nil: node by node),
// per op class, and with perNode per kernel and per node.
func predictModel(ctx context.Context, rep *profileReport, cl *profile.Cluster, path string, opt ingest.Options, cspec *costSpec, threads int, rs *fusion.RuleSet, perNode bool) error {
	mode := cspec.mode
	m, err := ingest.Load(path, opt)
	if err != nil {
		return err
	}
	g := m.Graph
	mr := &modelReport{Path: path, Nodes: len(g.Nodes), FLOPs: g.TotalFLOPs(), Costs: mode}
	var opts profile.CostOptions
	if mode == "measured" {
		for i := range cl.Devices {
			if cl.Devices[i].Host {
				threads = cl.Devices[i].Threads // as the planner measures (run.go's measure)
			}
		}
		h, err := ortmeasure.CalibrateHost(ctx, cl, path, g, threads)
		switch {
		case errors.Is(err, ortmeasure.ErrNoHost):
			rep.Notes = append(rep.Notes, "--costs measured: no host CPU among the devices (add cpu to --devices); every device keeps roofline costs")
		case err != nil:
			return diag.Wrap(diag.KindInput, err)
		default:
			opts.Measured = h.Measured
			for _, i := range h.Calibrated {
				mr.Calibrate = append(mr.Calibrate, cl.Devices[i].Name)
				rep.Device[i] = deviceJSON(&cl.Devices[i])
			}
			call := h.Measurement.Call
			mr.Measured = &call
		}
		for i := range cl.Devices {
			if !cl.Devices[i].Host {
				rep.Notes = append(rep.Notes, fmt.Sprintf("--costs measured: %s keeps roofline costs (measuring a GPU needs a GPU build of ONNX Runtime, which this onnxpart does not load)", cl.Devices[i].Name))
				break
			}
		}
	}
	var applied *costs.Applied
	if mode == "files" {
		mr.CostFiles = cspec.paths
		applied = cspec.apply(cl, g)
		rep.Notes = append(rep.Notes, diag.NoteStrings(applied.Notes)...)
		opts.Measured = applied.Measured
		for i := range cl.Devices {
			if applied.Calibrated[i] >= 0 {
				mr.Calibrate = append(mr.Calibrate, cl.Devices[i].Name)
				rep.Device[i] = deviceJSON(&cl.Devices[i])
			}
		}
	}
	cm := profile.NewCostModel(cl, opts)
	k := len(cl.Devices)
	if applied != nil {
		for d := range k {
			on := make([]int, len(g.Nodes))
			for v := range on {
				on[v] = d
			}
			mr.CostShares = append(mr.CostShares, cl.Devices[d].Name+" "+applied.Line(applied.Shares(g, cm, on)))
		}
	}
	mr.Compute, mr.Overhead, mr.Total, mr.Binding = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	rows := map[profile.OpClass]*classRow{}
	kernelOf := make([]string, len(g.Nodes))
	for d := range k {
		pr, err := cm.PriceGraph(g, rs, d)
		if err != nil {
			return err
		}
		mr.Fusion, mr.NumKernels = pr.RuleSet, len(pr.Kernels)
		mr.Compute[d], mr.Overhead[d], mr.Total[d], mr.Binding[d] = pr.Compute, pr.Call, pr.Total(), pr.Binding
		for i, kp := range pr.Kernels {
			r := rows[kp.Class]
			if r == nil {
				r = &classRow{Class: string(kp.Class), Time: make([]float64, k)}
				rows[kp.Class] = r
			}
			r.Time[d] += kp.Time
			if d > 0 {
				mr.Kernels[i].Time[d] = kp.Time
				continue
			}
			r.Kernels++
			r.Nodes += len(kp.Members)
			kr := kernelRow{Name: kp.Name, Rule: kp.Op, Class: string(kp.Class), FLOPs: kp.FLOPs, Bytes: kp.Bytes, Time: make([]float64, k)}
			for _, v := range kp.Members {
				kr.Nodes = append(kr.Nodes, g.Nodes[v].Name)
				if kernelOf[v] == "" {
					kernelOf[v] = kp.Name
				}
			}
			kr.Time[0] = kp.Time
			mr.Kernels = append(mr.Kernels, kr)
		}
	}
	if perNode {
		for v := range g.Nodes {
			n := &g.Nodes[v]
			nr := nodeRow{Name: n.Name, Op: n.OpType, Class: string(profile.ClassOf(g, n)), Kernel: kernelOf[v], FLOPs: n.FLOPs,
				Bytes: n.InputBytes + n.ParamBytes + n.OutputBytes, Time: make([]float64, k)}
			for d := range k {
				nr.Time[d] = cm.NodeTime(g, v, d)
			}
			mr.NodeRows = append(mr.NodeRows, nr)
		}
	} else {
		mr.Kernels = nil
	}
	for _, c := range profile.Classes() {
		if r := rows[c]; r != nil {
			mr.Classes = append(mr.Classes, *r)
		}
	}
	rep.Model = mr
	return nil
}

func printProfile(w io.Writer, rep *profileReport) {
	fmt.Fprintf(w, "devices %s: %d\n", rep.Devices, len(rep.Device))
	for _, d := range rep.Device {
		fmt.Fprintf(w, "\n%s  %s  (%s", d.Name, d.Model, d.Kind)
		if d.Catalog != "" {
			fmt.Fprintf(w, ", catalog %s", d.Catalog)
		}
		fmt.Fprintln(w, ")")
		tw := newTable(w, 0)
		for _, fo := range figureOrder {
			f, ok := d.Figures[fo.key]
			if !ok {
				continue
			}
			val := profile.FormatQuantity(f.Value, fo.unit)
			switch {
			case (fo.key == "nvlink" || fo.key == "io_bandwidth" || fo.key == "layout_bandwidth") && f.Value == 0:
				val = "none"
			case fo.key == "peak_int8":
				val = strings.Replace(val, "FLOP/s", "OP/s", 1)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", strings.ReplaceAll(fo.key, "_", " "), val, f.Source, f.Note)
		}
		if hl := d.HostLink; hl.Bandwidth != nil {
			fmt.Fprintf(tw, "  host link\t%s %s, %s\t%s/%s\t%s\n", hl.Name, profile.FormatQuantity(hl.Bandwidth.Value, profile.Rate),
				profile.FormatQuantity(hl.Latency.Value, profile.Seconds), hl.Bandwidth.Source, hl.Latency.Source, hl.Bandwidth.Note)
		}
		for _, k := range slices.Sorted(maps.Keys(d.Efficiency)) {
			f := d.Efficiency[k]
			fmt.Fprintf(tw, "  efficiency %s\t%.3g\t%s\t%s\n", k, f.Value, f.Source, f.Note)
		}
		for _, k := range slices.Sorted(maps.Keys(d.Overhead)) {
			f := d.Overhead[k]
			fmt.Fprintf(tw, "  overhead %s\t%s\t%s\t%s\n", k, profile.FormatQuantity(f.Value, profile.Seconds), f.Source, f.Note)
		}
		tw.Flush()
		for _, f := range d.Facts {
			fmt.Fprintf(w, "  %s: %s (%s)\n", f.Key, f.Value, f.Source)
		}
	}
	if len(rep.Device) > 1 {
		fmt.Fprintln(w, "\nlinks (rows send, columns receive; bandwidth per direction, latency):")
		tw := newTable(w, 0)
		fmt.Fprint(tw, " ")
		for _, d := range rep.Device {
			fmt.Fprintf(tw, "\t%s", d.Name)
		}
		fmt.Fprintln(tw)
		for i, row := range rep.Links {
			fmt.Fprintf(tw, "  %s", rep.Device[i].Name)
			for _, l := range row {
				switch {
				case l.Kind == string(profile.LinkSelf):
					fmt.Fprint(tw, "\t-")
				case l.Bandwidth == nil:
					fmt.Fprint(tw, "\tnone (routed)")
				default:
					fmt.Fprintf(tw, "\t%s %s %s", l.Kind, profile.FormatQuantity(l.Bandwidth.Value, profile.Rate),
						profile.FormatQuantity(l.Latency.Value, profile.Seconds))
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
		// Sources of the link figures, once each.
		srcs := map[string]bool{}
		for _, row := range rep.Links {
			for _, l := range row {
				if l.Bandwidth != nil {
					srcs["bandwidth "+l.Bandwidth.Source] = true
					srcs["latency "+l.Latency.Source] = true
				}
			}
		}
		fmt.Fprintf(w, "  sources: %s\n", strings.Join(slices.Sorted(maps.Keys(srcs)), ", "))
	}
	if m := rep.Model; m != nil {
		costsWords := m.Costs
		if len(m.CostFiles) > 0 {
			costsWords = strings.Join(m.CostFiles, ",")
		}
		fmt.Fprintf(w, "\nmodel %s: %d nodes, %s, costs %s", m.Path, m.Nodes, flopsStr(m.FLOPs), costsWords)
		if len(m.Calibrate) > 0 {
			fmt.Fprintf(w, " (measured and calibrated: %s)", strings.Join(m.Calibrate, ", "))
		}
		for _, l := range m.CostShares {
			fmt.Fprintf(w, "\n%s", l)
		}
		fmt.Fprintln(w)
		if m.Fusion == "none" {
			fmt.Fprintf(w, "%d kernels, one per node (--fusion none)\n", m.NumKernels)
		} else {
			fmt.Fprintf(w, "%d fused kernels (%s rules), priced as the planner prices a stage\n", m.NumKernels, m.Fusion)
		}
		fmt.Fprintln(w, "predicted time per op class (a kernel counts in its main node's class):")
		tw := newTable(w, tabwriter.AlignRight)
		fmt.Fprint(tw, "class\tkernels\tnodes\t")
		deviceCells(tw, rep.Device)
		fmt.Fprintln(tw)
		for _, r := range m.Classes {
			fmt.Fprintf(tw, "%s\t%d\t%d\t", r.Class, r.Kernels, r.Nodes)
			timeCells(tw, r.Time)
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "compute\t%d\t%d\t", m.NumKernels, m.Nodes)
		timeCells(tw, m.Compute)
		fmt.Fprintln(tw)
		fmt.Fprint(tw, "run overhead\t\t\t")
		timeCells(tw, m.Overhead)
		fmt.Fprintln(tw)
		fmt.Fprint(tw, "total\t\t\t")
		timeCells(tw, m.Total)
		fmt.Fprintln(tw)
		tw.Flush()
		fmt.Fprint(w, "binding of inputs and outputs (a plan counts it with a stage's communication):")
		for i, b := range m.Binding {
			fmt.Fprintf(w, " %s %s", rep.Device[i].Name, timeStr(b))
		}
		fmt.Fprintln(w)
		if len(m.Kernels) > 0 {
			fmt.Fprintln(w, "\npredicted time per kernel:")
			tw := newTable(w, 0)
			fmt.Fprint(tw, "kernel\trule\tclass\tnodes\tFLOPs\tbytes\t")
			deviceCells(tw, rep.Device)
			fmt.Fprintln(tw)
			for _, r := range m.Kernels {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t", r.Name, r.Rule, r.Class, len(r.Nodes), r.FLOPs, r.Bytes)
				timeCells(tw, r.Time)
				fmt.Fprintln(tw)
			}
			tw.Flush()
		}
		if len(m.NodeRows) > 0 {
			fmt.Fprintln(w, "\npredicted time per node, each priced alone (unfused):")
			tw := newTable(w, 0)
			fmt.Fprint(tw, "node\top\tclass\tFLOPs\tbytes\t")
			deviceCells(tw, rep.Device)
			fmt.Fprintln(tw, "kernel")
			for _, r := range m.NodeRows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t", r.Name, r.Op, r.Class, r.FLOPs, r.Bytes)
				timeCells(tw, r.Time)
				fmt.Fprintln(tw, r.Kernel)
			}
			tw.Flush()
		}
		if m.Measured != nil {
			fmt.Fprintf(w, "measured in ONNX Runtime: %s per run (CPU time of the calling thread, median)\n", timeStr(*m.Measured))
		}
	}
}

// timeCells writes one tab-terminated cell per device time.
func timeCells(w io.Writer, ts []float64) {
	for _, t := range ts {
		fmt.Fprintf(w, "%s\t", timeStr(t))
	}
}

// deviceCells writes one tab-terminated cell per device name.
func deviceCells(w io.Writer, devs []deviceReport) {
	for _, d := range devs {
		fmt.Fprintf(w, "%s\t", d.Name)
	}
}

func timeStr(t float64) string {
	if math.IsInf(t, 0) || math.IsNaN(t) {
		return "-"
	}
	return profile.FormatQuantity(t, profile.Seconds)
}

func printCatalog(w io.Writer, asJSON bool) error {
	entries := hw.Catalog()
	if asJSON {
		type entry struct {
			ID        string   `json:"id"`
			Aliases   []string `json:"aliases"`
			Model     string   `json:"model"`
			Kind      string   `json:"kind"`
			Memory    float64  `json:"memory_bytes"`
			Bandwidth float64  `json:"bandwidth_bytes_per_s"`
			Peak      map[string]float64
			NVLink    float64 `json:"nvlink_bytes_per_s"`
			HostLink  string  `json:"host_link,omitempty"`
			Source    string  `json:"source"`
		}
		var out []entry
		for _, e := range entries {
			en := entry{ID: e.ID, Aliases: e.Aliases, Model: e.Model, Kind: string(e.Kind), Memory: e.Memory.Value,
				Bandwidth: e.Bandwidth.Value, NVLink: e.NVLink.Value, HostLink: e.PCIe, Source: e.Source, Peak: map[string]float64{}}
			if en.Aliases == nil {
				en.Aliases = []string{}
			}
			for p := profile.FP32; p < profile.NumPrecisions; p++ {
				en.Peak[p.String()] = e.Peak[p].Value
			}
			out = append(out, en)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := newTable(w, 0)
	fmt.Fprintln(tw, "id\tkind\tmemory\tfp32\tfp16\tint8\tbandwidth\tnvlink\thost\taliases")
	for _, e := range entries {
		nv := "-"
		if e.NVLink.Value > 0 {
			nv = profile.FormatQuantity(e.NVLink.Value, profile.Rate)
		}
		host := e.PCIe
		if host == "" {
			host = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Kind, profile.FormatQuantity(e.Memory.Value, profile.Bytes),
			profile.FormatQuantity(e.Peak[profile.FP32].Value, profile.FLOPRate), profile.FormatQuantity(e.Peak[profile.FP16].Value, profile.FLOPRate),
			profile.FormatQuantity(e.Peak[profile.INT8].Value, profile.FLOPRate), profile.FormatQuantity(e.Bandwidth.Value, profile.Rate),
			nv, host, strings.Join(e.Aliases, ","))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nlinks (--link): auto, nvlink (per device), staged;")
	for _, p := range hw.LinkPresets() {
		fmt.Fprintf(w, "  %-6s %s per direction  (%s)\n", p.ID, profile.FormatQuantity(p.Bandwidth, profile.Rate), p.Source)
	}
	fmt.Fprintln(w, "\nsources (dense figures; see profile/catalog.yaml):")
	for _, e := range entries {
		fmt.Fprintf(w, "  %s: %s\n", e.ID, e.Source)
	}
	return nil
}

package devices

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onnxpart/onnxpart/profile"
	"gopkg.in/yaml.v3"
)

// Spec files describe any cluster in YAML or JSON (the same schema; JSON is read as YAML
// after a strict JSON syntax check). Figures take units ("80GB", "2TB/s", "312TFLOPS",
// "44.26Gbps", "5us") or are plain numbers in base units. Example, Moirai's inter-server
// testbed (Table III, rows send, columns receive):
//
//	devices:
//	  - {name: A, type: rtx-2080-ti}
//	  - {name: B, type: t4, memory_cap: 12GiB}
//	  - {name: C, type: p4}
//	  - {name: D, type: rtx-3060-ti, efficiency: {Conv: 0.45, elementwise: 0.6}}
//	links:
//	  unit: Gbps
//	  latency: 5us
//	  matrix:
//	    - [-,     44.26, 32.92, 44.28]
//	    - [42.39, -,     35.32, 44.51]
//	    - [33.2,  35.31, -,     32.95]
//	    - [42.08, 43.22, 33.28, -    ]
//
// Device fields: name, type (a catalog id, or "host" for this machine's measured CPU), kind,
// model, count (replicates the device as name0, name1, …), memory, memory_cap,
// workspace_reserve (memory the runtime takes besides the stage's tensors; default
// DefaultGPUReserve on a GPU, 0 elsewhere), peak (fp32, tf32, fp16, bf16, int8), bandwidth,
// read_bandwidth, last_level_cache and last_level_cache_bandwidth (the rate at which weights
// stream from memory, and the cache that holds a model's weights between calls when they
// fit, and its read rate; see WeightRate), launch, run_overhead, nvlink, io_bandwidth and
// layout_bandwidth (a stage's boundary costs; 0 for none), host_link (a preset name such as
// pcie4, or {bandwidth, latency}), threads (host CPU), efficiency (op class or ONNX op type →
// fraction of the roofline, one number for both terms or {compute, memory}). A device
// without a type needs kind, peak.fp32 and bandwidth.
//
// Links: default (a --link choice for pairs not given), unit (of bare matrix numbers),
// latency (of matrix entries), matrix (square, in device order; "-", "N.A.", null or 0 means
// no direct link, so transfers are routed), pairs (list of {from, to, bandwidth, latency,
// kind, both}).

// DefaultMaxSpecBytes is the largest spec file accepted.
const DefaultMaxSpecBytes = 1 << 20

// maxSpecDevices bounds the number of devices after count expansion (spec files and
// --devices lists). A cluster holds k² links and its routes take k³ steps: 256 devices
// resolve in 0.4 s and 66 MB, 4096 took a minute and 6.7 GB (`onnxpart profile --devices
// 4096xt4`) before any planning. No planner here uses that many stages anyway.
const maxSpecDevices = 256

var deviceFields = []string{"name", "type", "kind", "model", "count", "memory", "memory_cap", "workspace_reserve", "peak",
	"bandwidth", "launch", "run_overhead", "nvlink", "host_link", "threads", "efficiency", "io_bandwidth",
	"layout_bandwidth", "read_bandwidth", "last_level_cache", "last_level_cache_bandwidth"}

// readSpecFile loads a spec file into a cluster. host is called (at most once) when a device
// has type host.
func readSpecFile(ctx context.Context, path string, opts Options) (*profile.Cluster, error) {
	limit := opts.MaxSpecBytes
	if limit <= 0 {
		limit = DefaultMaxSpecBytes
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, specErr(path, 0, "", "no such file")
		}
		return nil, specErr(path, 0, "", "%w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, specErr(path, 0, "", "%w", err)
	}
	if int64(len(data)) > limit {
		return nil, specErr(path, 0, "", "larger than %d bytes; not a device spec file", limit)
	}
	return parseSpec(ctx, path, data, opts)
}

func lineOf(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

func parseSpec(ctx context.Context, file string, data []byte, opts Options) (*profile.Cluster, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, specErr(file, 0, "", "empty file")
	}
	if strings.EqualFold(filepath.Ext(file), ".json") {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return nil, specErr(file, lineOf(data, se.Offset), "", "invalid JSON: %s", se.Error())
			}
			return nil, specErr(file, 0, "", "invalid JSON: %w", err)
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if rest, ok := strings.CutPrefix(msg, "line "); ok {
			fmt.Sscanf(rest, "%d", &line)
			if _, after, ok := strings.Cut(rest, ": "); ok {
				msg = after
			}
		}
		return nil, specErr(file, line, "", "invalid YAML: %s", msg)
	}
	if len(root.Content) == 0 {
		return nil, specErr(file, 0, "", "empty file")
	}
	d := &dec{file: file}
	top := d.fields(root.Content[0], "", "name", "devices", "links")
	if d.err != nil {
		return nil, d.err
	}
	devNode, ok := top["devices"]
	if !ok {
		return nil, specErr(file, root.Content[0].Line, "devices", "missing: list the devices")
	}
	c := &profile.Cluster{Spec: file}
	var host *profile.Host
	getHost := func() (*profile.Host, error) {
		if host == nil {
			h, err := ProbeHost(ctx, opts.Host)
			if err != nil {
				return nil, err
			}
			host = h
		}
		return host, nil
	}
	items := d.list(devNode[1], "devices")
	if d.err == nil && len(items) == 0 {
		d.failf(devNode[1], "devices", "empty: list at least one device")
	}
	names := map[string]bool{}
	var where []*yaml.Node // the node each device came from
	for i, item := range items {
		path := fmt.Sprintf("devices[%d]", i)
		devs, err := d.specDevice(item, path, getHost, opts)
		if err != nil {
			return nil, err
		}
		if d.err != nil {
			return nil, d.err
		}
		for _, dv := range devs {
			if names[dv.Name] {
				d.failf(item, join(path, "name"), "another device is already called %q", dv.Name)
				return nil, d.err
			}
			names[dv.Name] = true
			c.Devices = append(c.Devices, dv)
			where = append(where, item)
		}
		if len(c.Devices) > maxSpecDevices {
			d.failf(item, path, "more than %d devices", maxSpecDevices)
			return nil, d.err
		}
	}
	c.Host = host
	if err := pinHostDevices(c.Devices, ""); err != nil {
		return nil, specErr(file, 0, "devices", "%w", err)
	}
	if ln, ok := top["links"]; ok {
		c.Links = d.specLinks(ln[1], c, opts)
	} else {
		c.Links = d.defaultLinks(root.Content[0], "links", c, opts.Link)
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// specDevice reads one device entry (several with count).
func (d *dec) specDevice(n *yaml.Node, path string, getHost func() (*profile.Host, error), opts Options) ([]profile.Device, error) {
	f := d.fields(n, path, deviceFields...)
	if d.err != nil {
		return nil, nil
	}
	var dv profile.Device
	name := ""
	if v, ok := f["name"]; ok {
		name = d.str(v[1], join(path, "name"))
		if d.err == nil && (name == "" || strings.ContainsAny(name, " \t,")) {
			d.failf(v[1], join(path, "name"), "want a name without spaces or commas, got %q", name)
		}
	}
	if v, ok := f["type"]; ok {
		typ := d.str(v[1], join(path, "type"))
		if d.err != nil {
			return nil, nil
		}
		switch strings.ToLower(typ) {
		case "host", "cpu":
			h, err := getHost()
			if err != nil {
				return nil, err
			}
			threads := opts.Threads
			if t, ok := f["threads"]; ok {
				threads = d.integer(t[1], join(path, "threads"), 1, 1<<16)
			}
			dv = HostDevice(h, name, threads)
		default:
			e, ok := LookupCatalog(typ)
			if !ok {
				if s := SuggestCatalog(typ); s != "" {
					d.failf(v[1], join(path, "type"), "unknown device type %q; did you mean %s? (catalog: %s; or give kind, peak and bandwidth)", typ, s, knownNames())
					return nil, nil
				}
				d.failf(v[1], join(path, "type"), "unknown device type %q (catalog: %s; or give kind, peak and bandwidth)", typ, knownNames())
				return nil, nil
			}
			dv = e.Device(name)
		}
		// Figures the file overrides take source spec; the rest keep theirs.
	} else {
		kv, ok := f["kind"]
		if !ok {
			d.failf(n, join(path, "type"), "missing: give a catalog type, or kind, peak.fp32 and bandwidth")
			return nil, nil
		}
		k, kok := profile.ParseKind(d.str(kv[1], join(path, "kind")))
		if d.err == nil && !kok {
			d.failf(kv[1], join(path, "kind"), "want gpu, cpu or accelerator")
		}
		dv.Kind = k
		for _, req := range []string{"peak", "bandwidth"} {
			if _, ok := f[req]; !ok && d.err == nil {
				d.failf(n, join(path, req), "missing (required without a catalog type)")
			}
		}
	}
	if d.err != nil {
		return nil, nil
	}
	if v, ok := f["kind"]; ok && f["type"][1] != nil {
		k, kok := profile.ParseKind(d.str(v[1], join(path, "kind")))
		if d.err == nil && (!kok || k != dv.Kind) {
			d.failf(v[1], join(path, "kind"), "contradicts the type's kind %s", dv.Kind)
		}
	}
	if v, ok := f["model"]; ok {
		dv.Model = d.str(v[1], join(path, "model"))
	}
	spec := func(key string, u profile.Unit) (profile.Figure, bool) {
		v, ok := f[key]
		if !ok {
			return profile.Figure{}, false
		}
		x := d.quantity(v[1], join(path, key), u)
		return fig(x, profile.SourceSpec, "line "+fmt.Sprint(v[1].Line)), true
	}
	positive := func(key string, u profile.Unit) (profile.Figure, bool) {
		v, ok := f[key]
		if !ok {
			return profile.Figure{}, false
		}
		x := d.positive(v[1], join(path, key), u)
		return fig(x, profile.SourceSpec, "line "+fmt.Sprint(v[1].Line)), true
	}
	if x, ok := positive("memory", profile.Bytes); ok {
		dv.Memory = x
	}
	if x, ok := positive("memory_cap", profile.Bytes); ok {
		dv.MemoryCap = x
	}
	if x, ok := spec("workspace_reserve", profile.Bytes); ok {
		dv.WorkspaceReserve = x
	}
	if x, ok := positive("bandwidth", profile.Rate); ok {
		dv.Bandwidth = x
	}
	// The weight-streaming figures (see WeightRate); given ones replace a measured read sweep.
	for _, w := range []struct {
		key  string
		u    profile.Unit
		dest *profile.Figure
	}{{"read_bandwidth", profile.Rate, &dv.ReadBandwidth}, {"last_level_cache", profile.Bytes, &dv.Cache}, {"last_level_cache_bandwidth", profile.Rate, &dv.CacheBandwidth}} {
		if x, ok := positive(w.key, w.u); ok {
			*w.dest = x
			dv.Reads = nil
		}
	}
	if x, ok := spec("launch", profile.Seconds); ok {
		dv.Launch = x
		// The file's launch replaces the kind's per-class defaults (defaultOverhead) too.
		kept := map[string]profile.Figure{}
		for k, f := range dv.Overhead {
			if f.Source != profile.SourceDefault {
				kept[k] = f
			}
		}
		dv.Overhead = kept

	}
	if x, ok := spec("run_overhead", profile.Seconds); ok {
		dv.RunOverhead = x
	}
	if x, ok := spec("nvlink", profile.Rate); ok {
		dv.NVLink = x
	}
	if x, ok := spec("io_bandwidth", profile.Rate); ok {
		dv.IOBandwidth = x
	}
	if x, ok := spec("layout_bandwidth", profile.Rate); ok {
		dv.LayoutBandwidth = x
	}
	if v, ok := f["threads"]; ok && dv.Kind != profile.CPU {
		d.failf(v[1], join(path, "threads"), "only CPU devices have threads")
	} else if ok && !dv.Host {
		dv.Threads = d.integer(v[1], join(path, "threads"), 1, 1<<16)
	}
	if v, ok := f["peak"]; ok {
		pf := d.fields(v[1], join(path, "peak"), "fp32", "tf32", "fp16", "bf16", "int8")
		for _, key := range slices.Sorted(maps.Keys(pf)) {
			p, _ := profile.ParsePrecision(key)
			x := d.positive(pf[key][1], join(path, "peak."+key), profile.FLOPRate)
			dv.Peak[p] = fig(x, profile.SourceSpec, "line "+fmt.Sprint(pf[key][1].Line))
		}
		if d.err == nil && !dv.Peak[profile.FP32].Known() {
			d.failf(v[1], join(path, "peak.fp32"), "missing")
		}
	}
	if v, ok := f["host_link"]; ok {
		dv.HostLink = d.linkValue(v[1], join(path, "host_link"), profile.LinkPCIe)
	}
	if v, ok := f["efficiency"]; ok {
		ef := d.fields(v[1], join(path, "efficiency"))
		dv.Efficiency = map[string]profile.Figure{}
		for _, key := range slices.Sorted(maps.Keys(ef)) {
			kp := join(path, "efficiency."+key)
			if !profile.IsClass(key) && (key == "" || key[0] < 'A' || key[0] > 'Z') {
				d.failf(ef[key][0], kp, "not an op class (%s) nor an ONNX op type", classList())
				break
			}
			one := func(n *yaml.Node, path string) profile.Figure {
				x := d.quantity(n, path, profile.Plain)
				if d.err == nil && (x <= 0 || x > 10) {
					d.failf(n, path, "want a fraction of the roofline in (0, 10], got %g", x)
				}
				return fig(x, profile.SourceSpec, "line "+fmt.Sprint(n.Line))
			}
			if vn := ef[key][1]; vn.Kind == yaml.MappingNode {
				cm := d.fields(vn, kp, "compute", "memory")
				c, ok1 := cm["compute"]
				m, ok2 := cm["memory"]
				if d.err == nil && (!ok1 || !ok2) {
					d.failf(vn, kp, "give both compute and memory, or one number for both")
				}
				if d.err != nil {
					break
				}
				if dv.MemEfficiency == nil {
					dv.MemEfficiency = map[string]profile.Figure{}
				}
				dv.Efficiency[key] = one(c[1], join(kp, "compute"))
				dv.MemEfficiency[key] = one(m[1], join(kp, "memory"))
				continue
			}
			dv.Efficiency[key] = one(ef[key][1], kp)
			delete(dv.MemEfficiency, key)
		}
	}
	count := 1
	if v, ok := f["count"]; ok {
		count = d.integer(v[1], join(path, "count"), 1, maxSpecDevices)
	}
	if d.err != nil {
		return nil, nil
	}
	if name == "" {
		d.failf(n, join(path, "name"), "missing")
		return nil, nil
	}
	applyKindDefaults(&dv)
	if dv.Model == "" {
		dv.Model = name
	}
	if count == 1 {
		dv.Name = name
		return []profile.Device{dv}, nil
	}
	out := make([]profile.Device, count)
	for i := range out {
		out[i] = cloneDevice(dv)
		out[i].Name = fmt.Sprintf("%s%d", name, i)
	}
	return out, nil
}

func classList() string {
	var s []string
	for _, c := range profile.Classes() {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func cloneDevice(d profile.Device) profile.Device {
	c := d
	c.Facts = append([]profile.Fact(nil), d.Facts...)
	c.Efficiency = copyFigures(d.Efficiency)
	c.MemEfficiency = copyFigures(d.MemEfficiency)
	c.Overhead = copyFigures(d.Overhead)
	return c
}

func copyFigures(m map[string]profile.Figure) map[string]profile.Figure {
	if m == nil {
		return nil
	}
	out := make(map[string]profile.Figure, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// linkValue reads a link: a preset name (pcie4, ib100, …) or {bandwidth, latency, kind}.
func (d *dec) linkValue(n *yaml.Node, path string, kind profile.LinkKind) profile.Link {
	if d.err != nil {
		return profile.Link{}
	}
	if n.Kind == yaml.ScalarNode {
		name := d.str(n, path)
		if _, ok := mustCatalog().preset(name); !ok {
			d.failf(n, path, "unknown link %q (want pcie3, pcie4, pcie5, ib100, eth10, or {bandwidth, latency})", name)
			return profile.Link{}
		}
		return presetLink(name)
	}
	f := d.fields(n, path, "bandwidth", "latency", "kind")
	l := profile.Link{Kind: kind, Name: "spec"}
	if v, ok := f["kind"]; ok {
		k := profile.LinkKind(d.str(v[1], join(path, "kind")))
		switch k {
		case profile.LinkNVLink, profile.LinkPCIe, profile.LinkStaged, profile.LinkNetwork, profile.LinkMemory, profile.LinkCustom:
			l.Kind = k
		default:
			d.failf(v[1], join(path, "kind"), "want nvlink, pcie, host-staged, network, memory or custom")
		}
	}
	v, ok := f["bandwidth"]
	if !ok {
		d.failf(n, join(path, "bandwidth"), "missing")
		return profile.Link{}
	}
	l.Bandwidth = fig(d.positive(v[1], join(path, "bandwidth"), profile.Rate), profile.SourceSpec, "line "+fmt.Sprint(v[1].Line))
	if v, ok := f["latency"]; ok {
		l.Latency = fig(d.quantity(v[1], join(path, "latency"), profile.Seconds), profile.SourceSpec, "line "+fmt.Sprint(v[1].Line))
	} else {
		l.Latency = fig(profile.DefaultLatency[l.Kind], profile.SourceDefault, profile.LatencyNote)
	}
	return l
}

// defaultLinks connects every pair by a --link choice.
func (d *dec) defaultLinks(n *yaml.Node, path string, c *profile.Cluster, choice string) [][]profile.Link {
	k := len(c.Devices)
	links := make([][]profile.Link, k)
	for i := range k {
		links[i] = make([]profile.Link, k)
		for j := range k {
			if i == j {
				links[i][j] = profile.Link{Kind: profile.LinkSelf}
				continue
			}
			l, err := autoLink(&c.Devices[i], &c.Devices[j], choice)
			if err != nil {
				d.failf(n, path, "%v", err)
				return nil
			}
			links[i][j] = l
		}
	}
	return links
}

func (d *dec) specLinks(n *yaml.Node, c *profile.Cluster, opts Options) [][]profile.Link {
	f := d.fields(n, "links", "default", "unit", "latency", "matrix", "pairs")
	if d.err != nil {
		return nil
	}
	choice := opts.Link
	if v, ok := f["default"]; ok {
		choice = d.str(v[1], "links.default")
		if d.err == nil && !validLinkChoice(choice) {
			d.failf(v[1], "links.default", "want one of %s", strings.Join(LinkChoices, ", "))
		}
	}
	links := d.defaultLinks(n, "links.default", c, choice)
	if d.err != nil {
		return nil
	}
	unit := 1.0
	if v, ok := f["unit"]; ok {
		u := d.str(v[1], "links.unit")
		x, err := profile.ParseQuantity("1"+u, profile.Rate)
		if d.err == nil && err != nil {
			d.failf(v[1], "links.unit", "want a bandwidth unit such as Gbps, GB/s, MiB/s")
		}
		unit = x
	}
	lat := fig(profile.DefaultLatency[profile.LinkCustom], profile.SourceDefault, profile.LatencyNote)
	if v, ok := f["latency"]; ok {
		lat = fig(d.quantity(v[1], "links.latency", profile.Seconds), profile.SourceSpec, "line "+fmt.Sprint(v[1].Line))
	}
	k := len(c.Devices)
	if v, ok := f["matrix"]; ok {
		rows := d.list(v[1], "links.matrix")
		if d.err == nil && len(rows) != k {
			d.failf(v[1], "links.matrix", "has %d rows for %d devices (rows send, columns receive, in device order)", len(rows), k)
		}
		for i, r := range rows {
			rp := fmt.Sprintf("links.matrix[%d]", i)
			cells := d.list(r, rp)
			if d.err == nil && len(cells) != k {
				d.failf(r, rp, "has %d entries for %d devices", len(cells), k)
			}
			for j, cell := range cells {
				if d.err != nil {
					return nil
				}
				cp := fmt.Sprintf("%s[%d]", rp, j)
				empty := cell.Kind == yaml.ScalarNode && (cell.Tag == "!!null" || cell.Value == "-" ||
					strings.EqualFold(cell.Value, "N.A.") || strings.EqualFold(cell.Value, "NA"))
				if i == j {
					if !empty && !(cell.Kind == yaml.ScalarNode && cell.Value == "0") {
						d.failf(cell, cp, "the diagonal (a device to itself) must be -, null or 0")
					}
					continue
				}
				if empty {
					links[i][j] = profile.Link{Kind: profile.LinkNone, Name: "no direct link"}
					continue
				}
				s := d.str(cell, cp)
				x, err := profile.ParseQuantity(s, profile.Rate)
				if err != nil && d.err == nil {
					d.failf(cell, cp, "%v", err)
					return nil
				}
				if !strings.ContainsAny(strings.TrimLeft(s, "0123456789.eE+-"), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ/") {
					x *= unit // a bare number: in links.unit
				}
				if x == 0 {
					links[i][j] = profile.Link{Kind: profile.LinkNone, Name: "no direct link"}
					continue
				}
				links[i][j] = profile.Link{Kind: profile.LinkCustom, Name: "spec matrix",
					Bandwidth: fig(x, profile.SourceSpec, "line "+fmt.Sprint(cell.Line)), Latency: lat}
			}
		}
	}
	if v, ok := f["pairs"]; ok {
		for i, p := range d.list(v[1], "links.pairs") {
			pp := fmt.Sprintf("links.pairs[%d]", i)
			pf := d.fields(p, pp, "from", "to", "bandwidth", "latency", "kind", "both")
			if d.err != nil {
				return nil
			}
			idx := func(key string) int {
				v, ok := pf[key]
				if !ok {
					d.failf(p, join(pp, key), "missing")
					return -1
				}
				name := d.str(v[1], join(pp, key))
				x := c.Index(name)
				if x < 0 && d.err == nil {
					d.failf(v[1], join(pp, key), "no device called %q", name)
				}
				return x
			}
			from, to := idx("from"), idx("to")
			if d.err == nil && from == to {
				d.failf(p, pp, "from and to are the same device")
			}
			sub := &yaml.Node{Kind: yaml.MappingNode, Line: p.Line, Column: p.Column}
			for _, key := range []string{"bandwidth", "latency", "kind"} {
				if kv, ok := pf[key]; ok {
					sub.Content = append(sub.Content, kv[0], kv[1])
				}
			}
			l := d.linkValue(sub, pp, profile.LinkCustom)
			if _, ok := pf["latency"]; !ok {
				l.Latency = lat
			}
			both := false
			if v, ok := pf["both"]; ok {
				both = d.boolean(v[1], join(pp, "both"))
			}
			if d.err != nil {
				return nil
			}
			links[from][to] = l
			if both {
				links[to][from] = l
			}
		}
	}
	if d.err != nil {
		return nil
	}
	// Every device must be able to reach every other, directly or through others.
	bw, _ := profile.Routes(links)
	for i := range k {
		for j := range k {
			if i != j && !(bw[i][j] > 0) && !math.IsInf(bw[i][j], 1) {
				d.failf(n, "links", "no route from %s to %s", c.Devices[i].Name, c.Devices[j].Name)
				return nil
			}
		}
	}
	return links
}

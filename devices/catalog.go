package devices

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/onnxpart/onnxpart/internal/typo"
	"github.com/onnxpart/onnxpart/profile"
	"gopkg.in/yaml.v3"
)

//go:embed catalog.yaml
var catalogYAML []byte

// CatalogEntry is one device of the built-in catalog (catalog.yaml): published figures with
// the document they come from.
type CatalogEntry struct {
	ID      string
	Aliases []string
	Model   string
	Kind    profile.Kind
	Form    string // "sxm" or "pcie" for GPUs
	Cores   int    // CPU cores
	Vector  int    // CPU fp32 vector lanes (see Device.VectorWidth)
	Memory  profile.Figure
	// Bandwidth is device memory bandwidth; NVLink the aggregate NVLink bandwidth per
	// direction (0 when none).
	Bandwidth profile.Figure
	NVLink    profile.Figure
	Peak      [profile.NumPrecisions]profile.Figure
	PCIe      string // host link preset ("pcie3", "pcie4", "pcie5")
	Source    string // the cited document
	Note      string
	nvml      []string
}

// LinkPreset is a named link of the catalog (pcie3, pcie4, pcie5, ib100, eth10).
type LinkPreset struct {
	ID        string
	Kind      profile.LinkKind
	Bandwidth float64 // bytes/s per direction
	Source    string
}

type catalogData struct {
	devices []CatalogEntry
	links   []LinkPreset
}

var (
	catalogOnce sync.Once
	catalogVal  *catalogData
	catalogErr  error
)

// loadCatalog parses the embedded catalog once; it is immutable afterwards.
func loadCatalog() (*catalogData, error) {
	catalogOnce.Do(func() { catalogVal, catalogErr = parseCatalog("catalog.yaml", catalogYAML) })
	return catalogVal, catalogErr
}

func mustCatalog() *catalogData {
	c, err := loadCatalog()
	if err != nil {
		panic("profile: built-in catalog is invalid: " + err.Error())
	}
	return c
}

// Catalog returns the built-in device entries in file order.
func Catalog() []CatalogEntry { return append([]CatalogEntry(nil), mustCatalog().devices...) }

// LinkPresets returns the built-in link presets in file order.
func LinkPresets() []LinkPreset { return append([]LinkPreset(nil), mustCatalog().links...) }

func parseCatalog(file string, data []byte) (*catalogData, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	d := &dec{file: file}
	top := d.fields(root.Content[0], "", "links", "devices")
	out := &catalogData{}
	for i, ln := range d.list(top["links"][1], "links") {
		path := fmt.Sprintf("links[%d]", i)
		f := d.fields(ln, path, "id", "kind", "bandwidth", "source")
		p := LinkPreset{
			ID:        d.str(f["id"][1], join(path, "id")),
			Kind:      profile.LinkKind(d.str(f["kind"][1], join(path, "kind"))),
			Bandwidth: d.positive(f["bandwidth"][1], join(path, "bandwidth"), profile.Rate),
			Source:    d.str(f["source"][1], join(path, "source")),
		}
		out.links = append(out.links, p)
	}
	seen := map[string]bool{}
	for i, en := range d.list(top["devices"][1], "devices") {
		path := fmt.Sprintf("devices[%d]", i)
		f := d.fields(en, path, "id", "aliases", "model", "nvml", "kind", "form", "cores", "memory",
			"bandwidth", "peak", "nvlink", "pcie", "source", "note", "vector_width")
		for _, req := range []string{"id", "model", "kind", "memory", "bandwidth", "peak", "source"} {
			if _, ok := f[req]; !ok && d.err == nil {
				d.failf(en, join(path, req), "missing")
			}
		}
		if d.err != nil {
			break
		}
		e := CatalogEntry{
			ID:     d.str(f["id"][1], join(path, "id")),
			Model:  d.str(f["model"][1], join(path, "model")),
			Source: d.str(f["source"][1], join(path, "source")),
		}
		if n, ok := f["aliases"]; ok {
			e.Aliases = d.strList(n[1], join(path, "aliases"))
		}
		if n, ok := f["nvml"]; ok {
			e.nvml = d.strList(n[1], join(path, "nvml"))
		}
		if n, ok := f["note"]; ok {
			e.Note = d.str(n[1], join(path, "note"))
		}
		if n, ok := f["form"]; ok {
			e.Form = d.str(n[1], join(path, "form"))
		}
		if n, ok := f["cores"]; ok {
			e.Cores = d.integer(n[1], join(path, "cores"), 1, 1<<16)
		}
		if n, ok := f["vector_width"]; ok {
			e.Vector = d.integer(n[1], join(path, "vector_width"), 1, 1024)
		}
		k, ok := profile.ParseKind(d.str(f["kind"][1], join(path, "kind")))
		if !ok && d.err == nil {
			d.failf(f["kind"][1], join(path, "kind"), "want gpu, cpu or accelerator")
		}
		e.Kind = k
		e.Memory = d.catalogFigure(f["memory"][1], join(path, "memory"), profile.Bytes)
		e.Bandwidth = d.catalogFigure(f["bandwidth"][1], join(path, "bandwidth"), profile.Rate)
		if n, ok := f["nvlink"]; ok {
			e.NVLink = d.catalogFigure(n[1], join(path, "nvlink"), profile.Rate)
		} else {
			e.NVLink = fig(0, profile.SourceCatalog, "no NVLink")
		}
		if n, ok := f["pcie"]; ok {
			e.PCIe = d.str(n[1], join(path, "pcie"))
			if d.err == nil && !strings.HasPrefix(e.PCIe, "pcie") {
				d.failf(n[1], join(path, "pcie"), "want pcie3, pcie4 or pcie5")
			}
		}
		pf := d.fields(f["peak"][1], join(path, "peak"), profile.PrecisionNames[:]...)
		for p := profile.FP32; p < profile.NumPrecisions; p++ {
			n, ok := pf[p.String()]
			if !ok {
				if d.err == nil {
					d.failf(f["peak"][1], join(path, "peak."+p.String()), "missing")
				}
				continue
			}
			e.Peak[p] = d.catalogFigure(n[1], join(path, "peak."+p.String()), profile.FLOPRate)
		}
		if d.err != nil {
			break
		}
		for _, name := range append([]string{e.ID}, e.Aliases...) {
			key := normID(name)
			if seen[key] {
				d.failf(f["id"][0], join(path, "id"), "%q is used by two entries", name)
			}
			seen[key] = true
		}
		out.devices = append(out.devices, e)
	}
	if d.err != nil {
		return nil, d.err
	}
	for _, e := range out.devices {
		if e.PCIe != "" {
			if _, ok := out.preset(e.PCIe); !ok {
				return nil, fmt.Errorf("%s: %s: unknown host link %q", file, e.ID, e.PCIe)
			}
		}
	}
	return out, nil
}

// catalogFigure reads `123GB/s` (source catalog) or `{value: 123GB/s, derived: "why"}`
// (source default: not on the cited sheet).
func (d *dec) catalogFigure(n *yaml.Node, path string, u profile.Unit) profile.Figure {
	if d.err != nil {
		return profile.Figure{}
	}
	if n.Kind == yaml.MappingNode {
		f := d.fields(n, path, "value", "derived")
		v := d.quantity(f["value"][1], join(path, "value"), u)
		why := ""
		if w, ok := f["derived"]; ok {
			why = d.str(w[1], join(path, "derived"))
		} else if d.err == nil {
			d.failf(n, join(path, "derived"), "missing: say how the figure was derived")
		}
		return fig(v, profile.SourceDefault, "derived: "+why)
	}
	return fig(d.quantity(n, path, u), profile.SourceCatalog, "")
}

func (c *catalogData) preset(id string) (LinkPreset, bool) {
	for _, p := range c.links {
		if p.ID == id {
			return p, true
		}
	}
	return LinkPreset{}, false
}

// presetLink turns a catalog link preset into a Link with the kind's default latency.
func presetLink(id string) profile.Link {
	p, ok := mustCatalog().preset(id)
	if !ok {
		panic("profile: no link preset " + id)
	}
	lat := profile.DefaultLatency[p.Kind]
	if id == "eth10" {
		lat = profile.EthLatency
	}
	return profile.Link{Kind: p.Kind, Name: id,
		Bandwidth: fig(p.Bandwidth, profile.SourceCatalog, p.Source),
		Latency:   fig(lat, profile.SourceDefault, profile.LatencyNote)}
}

// normID folds a device name for lookups: lower case, without spaces, dashes, underscores.
func normID(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r == ' ' || r == '-' || r == '_' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// LookupCatalog finds an entry by id or alias, ignoring case, spaces, dashes and underscores.
func LookupCatalog(name string) (*CatalogEntry, bool) {
	c := mustCatalog()
	key := normID(name)
	for i := range c.devices {
		e := &c.devices[i]
		if normID(e.ID) == key {
			return e, true
		}
		for _, a := range e.Aliases {
			if normID(a) == key {
				return e, true
			}
		}
	}
	return nil, false
}

// normNVML folds an NVML product name: lower-case letters and digits only, without the
// words nvidia, tesla, geforce and mock.
func normNVML(s string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ' ' }) {
		switch w {
		case "nvidia", "tesla", "geforce", "mock":
			continue
		}
		words = append(words, w)
	}
	var b strings.Builder
	for _, r := range strings.Join(words, "") {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '*' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// MatchNVML finds the catalog entry for a product name as NVML reports it ("NVIDIA
// A100-SXM4-40GB", "Tesla T4"): an exact pattern wins, else the longest prefix pattern.
func MatchNVML(name string) (*CatalogEntry, bool) {
	c := mustCatalog()
	key := normNVML(name)
	var best *CatalogEntry
	bestLen := 0
	for i := range c.devices {
		e := &c.devices[i]
		for _, p := range e.nvml {
			np := normNVML(p)
			if pre, ok := strings.CutSuffix(np, "*"); ok {
				if strings.HasPrefix(key, pre) && len(pre) > bestLen {
					best, bestLen = e, len(pre)
				}
				continue
			}
			if np == key {
				return e, true
			}
		}
	}
	return best, best != nil
}

// Device makes a device from the entry, every figure with source catalog (or default for
// the derived ones), overheads from the device kind.
func (e *CatalogEntry) Device(name string) profile.Device {
	d := profile.Device{
		Name: name, Model: e.Model, Catalog: e.ID, Kind: e.Kind,
		Memory: e.Memory, Bandwidth: e.Bandwidth, NVLink: e.NVLink, Peak: e.Peak,
	}
	d.Fact("catalog", e.ID, profile.SourceCatalog)
	d.Fact("data sheet", e.Source, profile.SourceCatalog)
	if e.Note != "" {
		d.Fact("note", e.Note, profile.SourceCatalog)
	}
	if e.Kind == profile.CPU {
		d.Threads, d.VectorWidth = e.Cores, e.Vector
		d.Fact("cores", fmt.Sprint(e.Cores), profile.SourceCatalog)
	}
	if e.PCIe != "" {
		d.HostLink = presetLink(e.PCIe)
		d.HostLink.Name = e.PCIe + " x16"
	}
	applyKindDefaults(&d)
	return d
}

// applyKindDefaults is profile.ApplyKindDefaults, and an accelerator whose host link is
// unknown gets the catalog's PCIe 4.0 x16.
func applyKindDefaults(d *profile.Device) {
	profile.ApplyKindDefaults(d)
	if d.HostLink.Kind == "" && d.Kind != profile.CPU {
		d.HostLink = presetLink("pcie4")
		d.HostLink.Bandwidth.Source = profile.SourceDefault
		d.HostLink.Bandwidth.Note = "host link unknown: PCIe 4.0 x16 assumed"
	}
}

func fig(v float64, s profile.Source, note string) profile.Figure {
	return profile.Figure{Value: v, Source: s, Note: note}
}

// SuggestCatalog is the catalog name (id or alias, as the catalog spells it) closest to a
// name that matches none: at most 2 edits apart, ignoring case, spaces, dashes and
// underscores, and not more than a third of the name; "" when none is that close.
func SuggestCatalog(name string) string {
	key := normID(name)
	best, bestD := "", 3
	for _, e := range mustCatalog().devices {
		for _, n := range append([]string{e.ID}, e.Aliases...) {
			d := typo.Distance(key, normID(n))
			if d < bestD && 3*d <= len(key) {
				best, bestD = n, d
			}
		}
	}
	return best
}

package devices

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/profile"
)

// Options control Resolve.
type Options struct {
	// Link is how devices NVML did not connect are linked (see LinkChoices); "" is auto.
	Link string
	// NVML is the library to query for `auto`; nil means the system's (nvml.New()). Tests
	// pass go-nvml's mock servers.
	NVML nvml.Interface
	// Host controls the host CPU microbenchmarks and their cache.
	Host HostOptions
	// Threads is the number of threads the host CPU device is described for (0: all cores).
	Threads int
	// MaxSpecBytes bounds spec files (0: DefaultMaxSpecBytes).
	MaxSpecBytes int64
	// Names are the caller's names in errors: "Devices" for Resolve's spec (else "devices"),
	// "Link" for Link (else Options.Link). The command passes its flags.
	Names diag.Names
}

// usagef is a malformed --devices or --link value (or a device count the host cannot give): a
// *diag.Error of kind usage, as opposed to a bad spec file (kind input, about the file).
func usagef(format string, a ...any) *diag.Error { return diag.Usage(format, a...) }

// IsSpecFile reports whether a --devices value names a file rather than a device list:
// it ends in .yaml, .yml or .json, or it is a path to an existing file.
func IsSpecFile(spec string) bool {
	switch strings.ToLower(filepath.Ext(spec)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	if strings.ContainsRune(spec, os.PathSeparator) {
		if fi, err := os.Stat(spec); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// Resolve turns a --devices value into a cluster. The value is one of:
//
//   - "auto" (or ""): the GPUs NVML finds, with their NVLink/PCIe links; when NVML cannot be
//     loaded or finds no GPU, the host CPU, with the reason as a note;
//   - a comma list of items "[N x]NAME" where NAME is a catalog id or alias (see Catalog),
//     "cpu" (or "host") for this machine's measured CPU, or "auto": "4xH100-SXM",
//     "a100-80g,t4,cpu", "auto,cpu"; "cpu:MxT" splits the host CPU into M devices of T
//     threads on disjoint cores ("cpu:2x1"), "cpu:T" is one device of T threads, "Mxcpu"
//     M devices sharing the cores equally (see pinHostDevices);
//   - a spec file, .yaml/.yml/.json (see the package documentation of spec files).
//
// Devices of a list are named gpu0, gpu1, … (accelerators acc0, …; CPUs cpu, or cpu0, …) in
// order, and connected according to opts.Link.
func Resolve(ctx context.Context, spec string, opts Options) (*profile.Cluster, error) {
	if opts.Link != "" && !validLinkChoice(opts.Link) {
		return nil, usagef("%s: want one of %s", opts.Names.Say("Link", strconv.Quote(opts.Link)), strings.Join(LinkChoices, ", ")).About(diag.Option, opts.Names.Name("Link"))
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		spec = "auto"
	}
	var c *profile.Cluster
	var err error
	if IsSpecFile(spec) {
		c, err = readSpecFile(ctx, spec, opts)
	} else {
		c, err = resolveList(ctx, spec, opts)
	}
	if err != nil {
		return nil, err
	}
	c.Spec = spec
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %v", spec, err)
	}
	return c, nil
}

var countRE = regexp.MustCompile(`^(\d+)\s*[x×*]\s*(\S.*)$`)

type listItem struct {
	count int
	name  string
}

func parseList(spec, devicesName string) ([]listItem, error) {
	var items []listItem
	for _, raw := range strings.Split(spec, ",") {
		s := strings.TrimSpace(raw)
		if s == "" {
			return nil, usagef("%s %q: empty item", devicesName, spec).About(diag.Option, devicesName)
		}
		it := listItem{count: 1, name: s}
		if m := countRE.FindStringSubmatch(s); m != nil {
			n, err := strconv.Atoi(m[1])
			if err != nil || n < 1 || n > maxSpecDevices {
				return nil, usagef("%s: %q: count must be 1 to %d", devicesName, s, maxSpecDevices).About(diag.Option, devicesName)
			}
			it = listItem{count: n, name: strings.TrimSpace(m[2])}
		}
		items = append(items, it)
	}
	return items, nil
}

func knownNames() string {
	var ids []string
	for _, e := range Catalog() {
		ids = append(ids, e.ID)
	}
	return strings.Join(ids, ", ")
}

func resolveList(ctx context.Context, spec string, opts Options) (*profile.Cluster, error) {
	devicesName := opts.Names.Or("Devices", "devices") // what errors call spec
	items, err := parseList(spec, devicesName)
	if err != nil {
		return nil, err
	}
	c := &profile.Cluster{}
	// fixed[i][j] holds links NVML already described (between its own GPUs).
	type fixedLink struct{ i, j int }
	fixed := map[fixedLink]profile.Link{}
	explicitHost := false
	for _, it := range items {
		k := normID(it.name)
		_, _, split, _ := parseHostItem(it.name, devicesName)
		explicitHost = explicitHost || k == "cpu" || k == "host" || split
	}
	probe := func() error {
		if c.Host == nil {
			h, err := ProbeHost(ctx, opts.Host)
			if err != nil {
				return fmt.Errorf("host CPU: %w", err)
			}
			c.Host = h
		}
		return nil
	}
	addHost := func() error {
		if err := probe(); err != nil {
			return err
		}
		c.Devices = append(c.Devices, HostDevice(c.Host, "", opts.Threads))
		return nil
	}
	// addHosts splits the host CPU into n devices of threads each (threads 0: an equal
	// share of the cores).
	hostSplit := false
	addHosts := func(raw string, n, threads int) error {
		if hostSplit || c.Host != nil {
			return usagef("%s: the host CPU is named twice (split it in one item, e.g. cpu:2x1)", devicesName).About(diag.Option, devicesName)
		}
		if err := probe(); err != nil {
			return err
		}
		hostSplit = true
		if threads == 0 {
			threads = c.Host.Cores / n
			if threads < 1 {
				return usagef("%s: %q: %d devices of the host CPU need %d cores on their own, this machine has %d", devicesName, raw, n, n, c.Host.Cores).About(diag.Option, devicesName)
			}
		}
		if n*threads > c.Host.Cores {
			return usagef("%s: %q: %d device(s) of %d thread(s) need %d cores on their own, this machine has %d", devicesName, raw, n, threads, n*threads, c.Host.Cores).About(diag.Option, devicesName)
		}
		for range n {
			c.Devices = append(c.Devices, HostDevice(c.Host, "", threads))
		}
		return nil
	}
	for _, it := range items {
		if n, threads, ok, err := parseHostItem(it.name, devicesName); ok {
			if err != nil {
				return nil, err
			}
			if it.count != 1 {
				return nil, usagef("%s: %q: give the number of devices after the colon (cpu:%dx%d)", devicesName, it.name, it.count*n, threads).About(diag.Option, devicesName)
			}
			if err := addHosts(it.name, n, threads); err != nil {
				return nil, err
			}
			continue
		}
		key := normID(it.name)
		switch key {
		case "auto":
			if it.count != 1 {
				return nil, usagef("%s: %q: auto takes no count", devicesName, it.name).About(diag.Option, devicesName)
			}
			lib := opts.NVML
			if lib == nil {
				lib = nvml.New()
			}
			devs, links, notes, err := discoverNVML(lib)
			c.Notes = append(c.Notes, notes...)
			if err != nil {
				c.Notes = append(c.Notes, diag.Notef(diag.NoteFault, "%v; using the host CPU", err).About(diag.Option, devicesName))
				if !explicitHost {
					if err := addHost(); err != nil {
						return nil, err
					}
				}
				continue
			}
			base := len(c.Devices)
			for i := range devs {
				for j := range devs {
					fixed[fixedLink{base + i, base + j}] = links[i][j]
				}
			}
			c.Devices = append(c.Devices, devs...)
		case "cpu", "host":
			if it.count != 1 {
				// N devices sharing the cores equally.
				if err := addHosts(fmt.Sprintf("%dx%s", it.count, it.name), it.count, 0); err != nil {
					return nil, err
				}
				break
			}
			if c.Host != nil || hostSplit {
				return nil, usagef("%s: the host CPU is named twice (to split it into several devices, say cpu:2x1)", devicesName).About(diag.Option, devicesName)
			}
			if err := addHost(); err != nil {
				return nil, err
			}
		default:
			e, ok := LookupCatalog(it.name)
			if !ok {
				if s := SuggestCatalog(it.name); s != "" {
					return nil, usagef("%s: unknown device %q; did you mean %s? (catalog: %s; or cpu, auto, or a .yaml/.json spec file)", devicesName, it.name, s, knownNames()).About(diag.Option, devicesName)
				}
				return nil, usagef("%s: unknown device %q (catalog: %s; or cpu, auto, or a .yaml/.json spec file)", devicesName, it.name, knownNames()).About(diag.Option, devicesName)
			}
			for range it.count {
				c.Devices = append(c.Devices, e.Device(""))
			}
		}
		if len(c.Devices) > maxSpecDevices {
			return nil, usagef("%s: more than %d devices", devicesName, maxSpecDevices).About(diag.Option, devicesName)
		}
	}
	nameDevices(c.Devices)
	if err := pinHostDevices(c.Devices, devicesName); err != nil {
		return nil, err
	}
	k := len(c.Devices)
	c.Links = make([][]profile.Link, k)
	for i := range k {
		c.Links[i] = make([]profile.Link, k)
		for j := range k {
			if i == j {
				c.Links[i][j] = profile.Link{Kind: profile.LinkSelf}
				continue
			}
			if l, ok := fixed[fixedLink{i, j}]; ok {
				c.Links[i][j] = l
				continue
			}
			l, err := autoLink(&c.Devices[i], &c.Devices[j], opts.Link)
			if err != nil {
				return nil, usagef("%v", err)
			}
			c.Links[i][j] = l
		}
	}
	if k == 0 {
		return nil, errors.New("no devices")
	}
	return c, nil
}

// nameDevices names unnamed devices gpu0…, acc0…, cpu/cpu0… in order; NVML devices keep
// their index-based names.
func nameDevices(devs []profile.Device) {
	count := map[profile.Kind]int{}
	for _, d := range devs {
		count[d.Kind]++
	}
	next := map[profile.Kind]int{}
	taken := map[string]bool{}
	for _, d := range devs {
		if d.Name != "" {
			taken[d.Name] = true
		}
	}
	for i := range devs {
		d := &devs[i]
		if d.Name != "" {
			continue
		}
		prefix := map[profile.Kind]string{profile.GPU: "gpu", profile.CPU: "cpu", profile.Accelerator: "acc"}[d.Kind]
		if d.Kind == profile.CPU && count[profile.CPU] == 1 {
			d.Name = "cpu"
			continue
		}
		for {
			name := fmt.Sprintf("%s%d", prefix, next[d.Kind])
			next[d.Kind]++
			if !taken[name] {
				d.Name = name
				taken[name] = true
				break
			}
		}
	}
}

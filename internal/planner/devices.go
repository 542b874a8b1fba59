package planner

import (
	"strconv"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/emit"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/profile"
)

// cudaOrdinals maps each GPU of the cluster to the CUDA ordinal a serving process uses for it.
func cudaOrdinals(c *profile.Cluster, opt *Options) (map[int]int, error) {
	ids := opt.GPUIDs
	var gpus []int
	for d := range c.Devices {
		if c.Devices[d].Kind == profile.GPU {
			gpus = append(gpus, d)
		}
	}
	out := map[int]int{}
	if ids != nil {
		if len(ids) != len(gpus) {
			return nil, diag.Usage("%s gives %d ids for %d GPUs", opt.name("GPUIDs"), len(ids), len(gpus)).About(diag.Option, opt.name("GPUIDs"))
		}
		seen := map[int]bool{}
		for i, id := range ids {
			if id < 0 || seen[id] {
				return nil, diag.Usage("%s: %d is negative or given twice", opt.name("GPUIDs"), id).About(diag.Option, opt.name("GPUIDs"))
			}
			seen[id] = true
			out[gpus[i]] = id
		}
		return out, nil
	}
	for rank, d := range gpus {
		if nv := c.Devices[d].NVML; nv != nil {
			out[d] = nv.Index
		} else {
			out[d] = rank
		}
	}
	return out, nil
}

// DeviceLabel names a cluster device for people: "gpu0 (A100-SXM4-80GB)", the product
// without its vendor prefix.
func DeviceLabel(c *profile.Cluster, name string) string {
	d := c.Index(name)
	if d < 0 {
		return name
	}
	return emit.DeviceLabel(name, c.Devices[d].Model)
}

// chooseDevices picks the devices a plan may use: all of them.
func chooseDevices(c *profile.Cluster, opt *Options) ([]int, error) {
	n := len(c.Devices)
	if opt.MaxStages < 0 {
		return nil, diag.Usage("%s: must be positive", opt.say("MaxStages", strconv.Itoa(opt.MaxStages))).About(diag.Option, opt.name("MaxStages"))
	}
	devs := make([]int, n)
	for i := range devs {
		devs[i] = i
	}
	return devs, nil
}

// identicalDevices reports whether every device has the same model and figures.
func identicalDevices(c *profile.Cluster, devs []int) bool {
	a := &c.Devices[devs[0]]
	for _, d := range devs[1:] {
		b := &c.Devices[d]
		if a.Kind != b.Kind || a.Model != b.Model || a.Catalog != b.Catalog ||
			a.Peak != b.Peak || a.Bandwidth != b.Bandwidth || a.Capacity() != b.Capacity() {
			return false
		}
	}
	return true
}

// ruleSet resolves the fusion rule set: explicit, or by the devices' backend.
func ruleSet(c *profile.Cluster, devs []int, opt Options) (*fusion.RuleSet, error) {
	name := opt.Fusion
	if opt.FusionRules == "" && name == "" {
		name = profile.DefaultRuleSet(c, devs)
	}
	if opt.FusionRules != "" && opt.Fusion != "" {
		return nil, diag.Usage("give %s or %s, not both", opt.name("Fusion"), opt.name("FusionRules")).About(diag.Option, opt.name("FusionRules"))
	}
	if opt.FusionRules != "" {
		return fusion.LoadRuleSet(opt.FusionRules)
	}
	rs, err := fusion.Builtin(name)
	if err != nil {
		return nil, diag.Wrap(diag.KindUsage, err)
	}
	return rs, nil
}

// provider is the ONNX Runtime execution provider a stage on d uses.
func provider(d *profile.Device) string {
	switch d.Kind {
	case profile.GPU:
		return "CUDAExecutionProvider"
	case profile.CPU:
		return "CPUExecutionProvider"
	}
	return "CPUExecutionProvider"
}

package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/fusion"
	"github.com/onnxpart/onnxpart/graph"
)

// fusionFlags are inspect's --fusion RULESET, --fusion-rules FILE and --fusion-top N.
//
// Wiring in runInspect (inspect.go):
//
//	ff := addFusionFlags(fs)                 // before parseFlags
//	...
//	fsum, err := ff.summary(m.Graph)         // after ingest.Load; nil without the flags
//	if err != nil { return err }
//	JSON: encode struct{ *ingest.Summary; Fusion *fusion.Summary `json:"fusion,omitempty"` }{s, fsum}
//	text: after printSummary, if fsum != nil { fmt.Fprintln(e.stdout); fsum.WriteText(e.stdout) }
type fusionFlags struct {
	set  *string
	file *string
	top  *int
}

// addFusionFlags registers the flags on an inspect flag set.
func addFusionFlags(fs *pflag.FlagSet) *fusionFlags {
	return &fusionFlags{
		set: fs.String("fusion", "", "coarsen by a fusion rule set and show the groups: "+
			strings.Join(fusion.BuiltinNames(), ", ")),
		file: fs.String("fusion-rules", "", "coarsen by the fusion rule set in `FILE` (YAML, see package fusion)"),
		top:  fs.Int("fusion-top", 10, "with --fusion: how many of the largest groups to list"),
	}
}

// summary coarsens g when --fusion or --fusion-rules was given and summarises the groups;
// it returns nil otherwise. An unknown rule-set name is a usage error, a bad rule file bad
// input.
func (f *fusionFlags) summary(g *graph.Graph) (*fusion.Summary, error) {
	if *f.set == "" && *f.file == "" {
		return nil, nil
	}
	if *f.set != "" && *f.file != "" {
		return nil, diag.Usage("give --fusion or --fusion-rules, not both")
	}
	var rs *fusion.RuleSet
	var err error
	if *f.file != "" {
		rs, err = fusion.LoadRuleSet(*f.file)
		if err != nil {
			return nil, diag.Wrap(diag.KindInput, err)
		}
	} else if rs, err = fusion.Builtin(*f.set); err != nil {
		return nil, diag.Wrap(diag.KindUsage, err)
	}
	if *f.top < 0 {
		return nil, diag.Usage("--fusion-top must not be negative").About(diag.Flag, "--fusion-top")
	}
	c, err := fusion.Coarsen(g, rs)
	if err != nil {
		return nil, err
	}
	return fusion.Summarize(c, *f.top), nil
}

package fusion

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/onnxpart/onnxpart/diag"
	"github.com/onnxpart/onnxpart/graph"
	opreg "github.com/onnxpart/onnxpart/internal/ops"
)

// RuleSet is one backend's fusion behaviour, as data: which ops it folds away before run time
// (absorption), which ops merely alias their input (views), and the ordered op patterns it
// fuses into one kernel. Built-in sets live in rules/*.yaml; a user file has the same form.
type RuleSet struct {
	// Name identifies the set ("ort-cuda"); Backend says which backend behaviour it models and
	// Sources where that knowledge comes from (files, documents, versions).
	Name    string
	Backend string
	Sources []string
	// Absorb merges constant and shape-arithmetic nodes into the groups that use them.
	Absorb bool
	// Views are op keys whose output aliases their input (no data movement, no kernel of
	// their own). Each is folded into its producer's group when it is that producer's only
	// reader, else into its only consumer's group.
	Views []string
	// TransparentViews lets patterns see through folded views (Conv → Reshape → Relu
	// matches Conv, Relu), for backends that eliminate no-op reshapes before fusing.
	TransparentViews bool
	// Rules in priority order: when several complete a match, the first wins.
	Rules []Rule
}

// Rule is an ordered op pattern. Step k's node reads an output of the nodes of the steps in
// its From list (the previous step by default); other inputs may come from anywhere
// (multi-input connections), subject to the step's predicates.
type Rule struct {
	Name   string
	Source string
	Steps  []Step

	allOps    map[string]bool
	hasRepeat bool
}

// prepare fills the lookup fields of a rule built in code (ParseRuleSet does it for files).
func (r *Rule) prepare() {
	r.allOps = map[string]bool{}
	r.hasRepeat = false
	for k := range r.Steps {
		st := &r.Steps[k]
		st.ops = map[string]bool{}
		for _, o := range st.Ops {
			st.ops[o] = true
			r.allOps[o] = true
		}
		if st.Repeat {
			r.hasRepeat = true
		}
	}
}

// Step is one position of a pattern.
type Step struct {
	// Ops are the op keys the step accepts: OpType for the ONNX domain, "domain:OpType" else.
	Ops []string
	// From lists earlier steps whose node's output this step's node reads. For a repeated
	// step, From applies to its first occurrence and each later occurrence reads the one
	// before it; a reference to a repeated step means its last occurrence.
	From []int
	// SameInput lists earlier steps whose node reads a tensor that this step's node reads
	// too (e.g. Sub(x, mean) reads the x that ReduceMean read).
	SameInput []int
	// ConstOther requires every input that the From/SameInput links do not account for to
	// be a constant (an initializer or the output of an absorbed node). A step without links
	// (the first) may read one non-constant tensor: the pattern's input.
	ConstOther bool
	// Repeat lets the step match one or more consecutive nodes, each reading the previous.
	Repeat bool
	// Attrs must all equal the node's attributes.
	Attrs []AttrPred

	ops map[string]bool
}

// AttrPred requires an attribute to be present and equal to a value. Numbers compare as
// float64; lists element by element.
type AttrPred struct {
	Name    string
	Str     *string
	Num     *float64
	Nums    []float64
	hasNums bool
}

func (p AttrPred) holds(n *graph.Node) bool {
	a := n.Attr(p.Name)
	if a == nil {
		return false
	}
	switch {
	case p.Str != nil:
		return a.Kind == graph.AttrString && a.Str == *p.Str
	case p.Num != nil:
		switch a.Kind {
		case graph.AttrInt:
			return float64(a.Int) == *p.Num
		case graph.AttrFloat:
			return a.Float == *p.Num
		}
		return false
	case p.hasNums:
		var got []float64
		switch a.Kind {
		case graph.AttrInts:
			for _, v := range a.Ints {
				got = append(got, float64(v))
			}
		case graph.AttrFloats:
			got = a.Floats
		default:
			return false
		}
		if len(got) != len(p.Nums) {
			return false
		}
		for i := range got {
			if got[i] != p.Nums[i] {
				return false
			}
		}
		return true
	}
	return false
}

//go:embed rules/*.yaml
var builtinFS embed.FS

// BuiltinNames lists the built-in rule sets, sorted.
func BuiltinNames() []string {
	ents, _ := builtinFS.ReadDir("rules")
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".yaml") {
			out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// Builtin returns the built-in rule set called name (see BuiltinNames).
func Builtin(name string) (*RuleSet, error) {
	data, err := builtinFS.ReadFile("rules/" + name + ".yaml")
	if err != nil {
		return nil, diag.Usage("unknown fusion rule set %q (built in: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	return ParseRuleSet(data, name+".yaml")
}

// LoadRuleSet reads a rule-set file (the --fusion-rules FILE of the CLI). Errors, here and in
// Builtin and ParseRuleSet, are *diag.Error: an unknown built-in name is usage, a file that
// cannot be read or parsed is input.
func LoadRuleSet(path string) (*RuleSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, diag.Input("no such file").About(diag.File, path)
		}
		return nil, diag.Input("%w", err)
	}
	return ParseRuleSet(data, filepath.Base(path))
}

// Resolve picks a rule set: a file when file is not empty, else the built-in set called name.
func Resolve(name, file string) (*RuleSet, error) {
	if file != "" {
		return LoadRuleSet(file)
	}
	return Builtin(name)
}

// File form. Unknown fields are errors, so that a typo does not silently drop a constraint.
type fileRuleSet struct {
	Name    string              `yaml:"name"`
	Backend string              `yaml:"backend"`
	Sources []string            `yaml:"sources"`
	Absorb  *bool               `yaml:"absorb"`
	Views   []string            `yaml:"views"`
	Transp  bool                `yaml:"transparent_views"`
	Classes map[string][]string `yaml:"classes"`
	Rules   []fileRule          `yaml:"rules"`
}

type fileRule struct {
	Name   string     `yaml:"name"`
	Source string     `yaml:"source"`
	Steps  []fileStep `yaml:"steps"`
}

type fileStep struct {
	Op         stringList           `yaml:"op"`
	From       *intList             `yaml:"from"`
	SameInput  intList              `yaml:"same_input"`
	ConstOther bool                 `yaml:"const_other"`
	Repeat     bool                 `yaml:"repeat"`
	Optional   bool                 `yaml:"optional"`
	Attrs      map[string]yaml.Node `yaml:"attrs"`
}

// stringList accepts a scalar or a sequence of strings.
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = []string{n.Value}
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return err
	}
	*s = l
	return nil
}

// intList accepts a scalar or a sequence of integers.
type intList []int

func (s *intList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var v int
		if err := n.Decode(&v); err != nil {
			return err
		}
		*s = []int{v}
		return nil
	}
	var l []int
	if err := n.Decode(&l); err != nil {
		return err
	}
	*s = l
	return nil
}

// ParseRuleSet reads a rule set from YAML; file names the source in error messages. Steps
// marked optional (only allowed at the end of a rule) expand into one rule per length.
func ParseRuleSet(data []byte, file string) (*RuleSet, error) {
	var f fileRuleSet
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, diag.Input("fusion rules %s: %w", file, err)
	}
	errf := func(format string, a ...any) error {
		return diag.Input("fusion rules %s: %s", file, fmt.Sprintf(format, a...))
	}
	if f.Name == "" {
		return nil, errf("the rule set has no name")
	}
	rs := &RuleSet{Name: f.Name, Backend: strings.TrimSpace(f.Backend), Sources: f.Sources, Absorb: true}
	if f.Absorb != nil {
		rs.Absorb = *f.Absorb
	}
	expand := func(where string, ops []string) ([]string, error) {
		var out []string
		for _, o := range ops {
			if strings.HasPrefix(o, "@") {
				cls, ok := f.Classes[o[1:]]
				if !ok {
					// The op registry's fusion roles are classes every file may use.
					r, isRole := opreg.RoleByName[o[1:]]
					if !isRole {
						return nil, errf("%s: unknown class %q", where, o)
					}
					cls = opreg.WithRole(r)
				}
				for _, c := range cls {
					if strings.HasPrefix(c, "@") {
						return nil, errf("class %q: classes cannot contain classes (%q)", o[1:], c)
					}
				}
				out = append(out, cls...)
				continue
			}
			if o == "" {
				return nil, errf("%s: empty op name", where)
			}
			out = append(out, o)
		}
		return out, nil
	}
	views, err := expand("views", f.Views)
	if err != nil {
		return nil, err
	}
	rs.Views = views
	rs.TransparentViews = f.Transp
	seen := map[string]bool{}
	for ri, fr := range f.Rules {
		if fr.Name == "" {
			return nil, errf("rule %d has no name", ri+1)
		}
		if seen[fr.Name] {
			return nil, errf("two rules are called %q", fr.Name)
		}
		seen[fr.Name] = true
		where := func(k int) string { return fmt.Sprintf("rule %q step %d", fr.Name, k) }
		if len(fr.Steps) == 0 {
			return nil, errf("rule %q has no steps", fr.Name)
		}
		var steps []Step
		firstOptional := -1
		for k, fs := range fr.Steps {
			if fs.Optional && firstOptional < 0 {
				firstOptional = k
			}
			if !fs.Optional && firstOptional >= 0 {
				return nil, errf("%s: only the last steps of a rule may be optional", where(k))
			}
			ops, err := expand(where(k), fs.Op)
			if err != nil {
				return nil, err
			}
			if len(ops) == 0 {
				return nil, errf("%s: no op", where(k))
			}
			st := Step{Ops: ops, SameInput: fs.SameInput, ConstOther: fs.ConstOther, Repeat: fs.Repeat}
			switch {
			case fs.From != nil:
				st.From = *fs.From
			case k > 0:
				st.From = []int{k - 1}
			}
			for _, list := range [][]int{st.From, st.SameInput} {
				for _, j := range list {
					if j < 0 || j >= k {
						return nil, errf("%s: refers to step %d, which is not an earlier step", where(k), j)
					}
				}
			}
			names := make([]string, 0, len(fs.Attrs))
			for name := range fs.Attrs {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				p, err := parseAttrPred(name, fs.Attrs[name])
				if err != nil {
					return nil, errf("%s: attribute %q: %v", where(k), name, err)
				}
				st.Attrs = append(st.Attrs, p)
			}
			steps = append(steps, st)
		}
		minLen := len(steps)
		if firstOptional >= 0 {
			minLen = firstOptional
		}
		for n := minLen; n <= len(steps); n++ {
			if n == 0 {
				continue
			}
			r := Rule{Name: fr.Name, Source: strings.TrimSpace(fr.Source), Steps: steps[:n:n]}
			r.prepare()
			if n == 1 && !r.Steps[0].Repeat {
				if firstOptional >= 0 {
					continue // the one-step variant of an optional tail fuses nothing
				}
				return nil, errf("rule %q matches single nodes only: give it a second step or a repeated one", fr.Name)
			}
			rs.Rules = append(rs.Rules, r)
		}
	}
	return rs, nil
}

func parseAttrPred(name string, n yaml.Node) (AttrPred, error) {
	p := AttrPred{Name: name}
	switch n.Kind {
	case yaml.ScalarNode:
		var f float64
		if n.Tag != "!!str" && n.Decode(&f) == nil {
			p.Num = &f
			return p, nil
		}
		s := n.Value
		p.Str = &s
		return p, nil
	case yaml.SequenceNode:
		var l []float64
		if err := n.Decode(&l); err != nil {
			return p, fmt.Errorf("want a number, a string or a list of numbers")
		}
		p.Nums, p.hasNums = l, true
		return p, nil
	}
	return p, fmt.Errorf("want a number, a string or a list of numbers")
}

// opKey is the op name rules use for a node: OpType in the ONNX domain, "domain:OpType" else.
func opKey(n *graph.Node) string {
	if n.Domain == "" || n.Domain == "ai.onnx" {
		return n.OpType
	}
	return n.Domain + ":" + n.OpType
}

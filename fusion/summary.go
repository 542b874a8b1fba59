package fusion

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Summary describes a coarsening for people (WriteText) and for --json outputs: the field
// names are a contract, like ingest.Summary's.
type Summary struct {
	RuleSet     string `json:"rule_set"`
	NodesBefore int    `json:"nodes_before"`
	NodesAfter  int    `json:"nodes_after"`
	// Reduction is 1 − after/before.
	Reduction float64 `json:"reduction"`
	// Absorbed counts the nodes absorbed as constants; Duplicates the extra copies of them
	// that groups recompute.
	Absorbed   int         `json:"absorbed"`
	Duplicates int         `json:"duplicates"`
	Rules      []RuleCount `json:"rules"`
	Largest    []GroupInfo `json:"largest"`
}

// RuleCount says how many groups a rule formed, how many kernel (non-absorbed) nodes they
// hold and how many absorbed nodes they hold as primary members. Rule "" is single nodes,
// "views" nodes with folded views.
type RuleCount struct {
	Rule     string `json:"rule"`
	Groups   int    `json:"groups"`
	Nodes    int    `json:"nodes"`
	Absorbed int    `json:"absorbed"`
}

// GroupInfo describes one coarse node.
type GroupInfo struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Rule  string `json:"rule"`
	// Nodes counts the kernel (non-absorbed) members, Ops lists their op types in node
	// order; Absorbed counts the absorbed nodes the group holds (primary or duplicate).
	Nodes    int      `json:"nodes"`
	Ops      []string `json:"ops"`
	Absorbed int      `json:"absorbed"`
	FLOPs    int64    `json:"flops"`
}

// Summarize counts groups per rule and lists the top largest groups (by kernel nodes, ties
// by index).
func Summarize(c *Grouping, top int) *Summary {
	s := &Summary{RuleSet: c.RuleSet, NodesBefore: len(c.Orig.Nodes), NodesAfter: len(c.Groups)}
	if s.NodesBefore > 0 {
		s.Reduction = 1 - float64(s.NodesAfter)/float64(s.NodesBefore)
	}
	for v, a := range c.Absorbed {
		if a {
			s.Absorbed++
			s.Duplicates += len(c.Dup[v])
		}
	}
	kernel := make([]int, len(c.Groups))
	counts := map[string]*RuleCount{}
	for i, r := range c.Rule {
		rc := counts[r]
		if rc == nil {
			rc = &RuleCount{Rule: r}
			counts[r] = rc
		}
		rc.Groups++
		for _, v := range c.Groups[i] {
			if c.Absorbed[v] {
				rc.Absorbed++
			} else {
				kernel[i]++
			}
		}
		rc.Nodes += kernel[i]
	}
	for _, rc := range counts {
		s.Rules = append(s.Rules, *rc)
	}
	sort.Slice(s.Rules, func(i, j int) bool {
		a, b := s.Rules[i], s.Rules[j]
		if a.Groups != b.Groups {
			return a.Groups > b.Groups
		}
		return a.Rule < b.Rule
	})
	idx := make([]int, len(c.Groups))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return kernel[idx[a]] > kernel[idx[b]] })
	if top > len(idx) {
		top = len(idx)
	}
	for _, i := range idx[:max(top, 0)] {
		gi := GroupInfo{Index: i, Name: c.Graph.Nodes[i].Name, Rule: c.Rule[i], Nodes: kernel[i],
			FLOPs: c.Graph.Nodes[i].FLOPs, Ops: []string{}}
		for _, v := range c.Members(i) {
			if c.Absorbed[v] {
				gi.Absorbed++
			} else {
				gi.Ops = append(gi.Ops, c.Orig.Nodes[v].OpType)
			}
		}
		s.Largest = append(s.Largest, gi)
	}
	return s
}

// WriteText prints the summary as aligned text.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "fusion     %s: %d nodes -> %d groups (%.1f%% fewer), %d absorbed constants (%d duplicates)\n",
		s.RuleSet, s.NodesBefore, s.NodesAfter, 100*s.Reduction, s.Absorbed, s.Duplicates)
	fmt.Fprintln(&b, "groups per rule:")
	for _, r := range s.Rules {
		name := r.Rule
		switch name {
		case "":
			name = "(single node)"
		case "views":
			name = "(node with views)"
		}
		fmt.Fprintf(&b, "  %6d  %-28s %6d nodes  %6d absorbed\n", r.Groups, name, r.Nodes, r.Absorbed)
	}
	if len(s.Largest) > 0 {
		fmt.Fprintln(&b, "largest groups:")
		for _, g := range s.Largest {
			fmt.Fprintf(&b, "  #%-5d %4d nodes %4d absorbed  %s: %s\n", g.Index, g.Nodes, g.Absorbed, g.Name, strings.Join(g.Ops, " "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

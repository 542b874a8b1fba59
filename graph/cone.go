package graph

// Input cones: the nodes that compute a tensor from the graph's inputs and weights alone,
// such as a decoder's causal mask built from attention_mask. A planner may compute such a
// cone again in every stage that reads its output instead of sending the output. Inputs in
// skip (a model's state, which lives on one stage) and nodes holding subgraphs break a cone.

// InputDerived marks every node computed from graph inputs not in skip, initializers and
// the outputs of weight-only (Static) or other input-derived nodes; weight-only nodes and
// nodes holding subgraphs are not marked.
func (g *Graph) InputDerived(skip map[int]bool) []bool {
	derived := make([]bool, len(g.Nodes))
	for _, v := range g.topo {
		n := &g.Nodes[v]
		if n.Static || n.Subgraphs > 0 {
			continue
		}
		ok := true
		for _, t := range n.Deps() {
			tt := &g.Tensors[t]
			switch {
			case tt.Kind == Initializer:
			case tt.Kind == Input:
				ok = ok && !skip[t]
			case tt.Producer >= 0 && (g.Nodes[tt.Producer].Static || derived[tt.Producer]):
			default:
				ok = false
			}
		}
		derived[v] = ok
	}
	return derived
}

// InputCone returns node v and its ancestors that are not weight-only, the nodes a stage
// runs to compute v's outputs itself; ok is false when v is not input-derived
// (InputDerived: one of them reads an input in skip or holds a subgraph).
func (g *Graph) InputCone(v int, skip map[int]bool) (cone []int, ok bool) {
	seen := map[int]bool{v: true}
	stack := []int{v}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := &g.Nodes[u]
		if n.Static {
			continue
		}
		if n.Subgraphs > 0 {
			return nil, false
		}
		for _, t := range n.Deps() {
			if skip[t] {
				return nil, false
			}
		}
		cone = append(cone, u)
		for _, p := range g.preds[u] {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return cone, true
}

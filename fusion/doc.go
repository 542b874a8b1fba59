// Package fusion coarsens an operator graph by the fusion rules of the backend that will run
// it, so that partitioning and scheduling work on kernels rather than on thousands of tiny
// ops, and never cut between ops the backend fuses anyway.
//
// What goes in: a graph.Graph from ingest (costs and shapes filled in) and a RuleSet: one of
// the built-in sets (BuiltinNames: ort-cpu, ort-cuda, tensorrt, generic, none; each file in
// rules/ says which backend behaviour it models and where that knowledge comes from, and
// rules/README.md summarises them) or a user file of the same form (LoadRuleSet, the CLI's
// --fusion-rules FILE).
//
// What comes out: a *Grouping, holding a coarse graph.Graph with one node per group, the
// mapping from groups to original nodes, and Expand, which turns a stage or device per coarse
// node back into one per original node for emit. The coarse graph is acyclic and its cost
// fields price each group as the fused kernel (Grouping documents the contract).
//
// Coarsen works in three passes:
//
//  1. Absorption (RuleSet.Absorb). Nodes whose outputs are known before run time — Constant
//     nodes, weight-only subgraphs (graph.Node.Static) and shape arithmetic that ingest folded
//     (graph.Tensor.Value) — leave the working graph and join every group that uses them,
//     duplicated when several groups do, so that no stage boundary ever separates a constant
//     from its use. Backends fold these at session creation, so they cost nothing at run time.
//  2. Views (RuleSet.Views). An op whose output aliases its input (Reshape, Squeeze, ...) joins
//     its producer when it is the producer's only reader, else its only reader. Patterns see
//     through folded views only when the rule set says so (TransparentViews).
//  3. GCOF, Algorithm 1 of seed 004 (Moirai): a depth-first traversal from a virtual root that
//     merges a vertex with a successor when the concatenation of their op sequences is a
//     complete rule (fuse) or part of one (bind), on a valid connection; bound vertices that
//     never complete a rule are released at the end (unbind). Extensions, each documented
//     where it is implemented: rules are op patterns with connection constraints (which
//     earlier step each step reads, shared inputs, constant side inputs, attribute values,
//     repeated steps), so that patterns with internal forks such as LayerNorm and GELU can
//     form; the valid-connection rule is lifted from single predecessors to groups (a fan-out
//     is allowed only when the rule itself reads it later); every merge is checked for
//     cycles through side paths with an incrementally maintained topological order and
//     refused when it would close one.
//
// Rule-set file format (YAML; unknown fields are errors):
//
//	name: ort-cuda                  # the set's name
//	backend: text                   # which backend behaviour it models
//	sources: [text, ...]            # where that knowledge comes from
//	absorb: true                    # absorb constants and shape arithmetic (default true)
//	views: [Reshape, Squeeze]       # ops whose output aliases their input
//	transparent_views: false        # patterns see through folded views
//	classes: {act: [Relu, Clip]}    # named op lists, referenced as "@act"; "@anchor",
//	                                # "@epilogue", "@view" and "@fused" name the op registry's
//	                                # fusion roles unless the file defines them
//	rules:                          # priority order
//	  - name: conv-bn-act
//	    source: text                # the backend code or document that performs this fusion
//	    steps:
//	      - op: Conv                # an op, a list of ops, or "@class"; "domain:Op" outside ONNX
//	      - op: BatchNormalization
//	        from: [0]               # steps whose output this node reads (default: previous)
//	        same_input: []          # steps that read a tensor this node also reads
//	        const_other: true       # its other inputs are constants
//	      - op: "@act"
//	        attrs: {alpha: 0.1}     # attribute equality (numbers, strings, number lists)
//	        repeat: false           # match one or more consecutive nodes
//	        optional: true          # trailing steps only: the rule also matches without them
package fusion

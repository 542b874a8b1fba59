// Package schedule places the operators of one inference graph on a set of heterogeneous
// devices (a CPU and different GPUs) and schedules them, for the latency of one input or for
// the batched throughput of a batch of inputs, and certifies how far the plan is from optimal.
//
// What goes in: a Problem on plain cost arrays — a DAG of Nodes with per-device times (and
// per-batch-size times for batched mode), per-node memory, Devices with capacities and
// supported batch sizes, a Link matrix (bandwidth and latency per ordered device pair,
// possibly asymmetric, absent links routed through the widest path) or explicit per-edge
// transfer times (Moirai's pc columns), the number of granules of a batch (Batch) and whether
// transfers congest (Congestion: one transfer at a time out of and into each device, Moirai
// eq. (8)). The package knows nothing of ONNX; package instances reads Moirai's CSV files and
// generates RandWire stacks.
//
// What comes out: a Placement (device of each node, or of each granule of each node in batched
// mode, plus the priorities that order the list schedule) and its Schedule, computed by
// Simulate — the single judge of every method: per-task start and end times, transfers, the
// makespan, the throughput, memory and busy time per device. Solve runs one method or several
// (auto, best-device, met, greedy, heft, ea, sa, milp, split), re-evaluates every candidate with
// the simulator, and returns a Result with the best placement, its schedule, a proved lower
// bound on the optimal makespan and the gap 1 − bound/makespan.
//
// Methods, with the seeds they come from (seed 003 = Ghannane's thesis, digest-003; seed 004
// = Moirai, digest-004):
//
//   - best-device, MET, Greedy (earliest finish), HEFT (upward rank, insertion) and their
//     batched variants (bMET, bGreedy, bHEFT), seed 003 §4.2;
//   - the biased (1+1) EA and simulated annealing with the thesis's encoding: one gene per
//     node in breadth-first topological order (a device in latency mode, a batch split in
//     batched mode), fitness = the simulated makespan;
//   - the latency MILP of seed 004 §III-D, eqs. (4)–(8): communication tasks, link choice,
//     congestion, memory (5), with disjunctive pairs only for nodes (and transfers) not
//     ordered by reachability, big-M = the best heuristic's makespan, a MIP start from it,
//     and optional symmetry breaking between identical devices (seed 003 §5.2);
//   - the batched-throughput MILP of seed 003 §3.2, eqs. (3.1)–(3.8) as corrected by
//     digest-003 §3.4 (formulation F: per-input precedence F4a with the duration, SOS-style
//     batch selection F2 instead of the big-M (3.5)–(3.6), memory (3.7));
//   - MILP-SPLIT (seed 003 §3.3): module detection (nodes on every source–sink path, i.e.
//     articulation points turned into bridges; multi-channel cuts from k-edge-connected
//     components, or at minimum-channel ideals by max-flow when those components do not split
//     sparse modules), the exact DP over single-channel modules × (input device, output
//     device) — pruned: only the (u, v) pairs that can still beat the best stitched plan get a
//     MILP —, chained solves across multi-channel cuts (each module sees where its inputs were
//     put and how long each device stays busy), a final annealing of the stitched plan, and
//     the thesis's recursive lower bound from dependency and predecessor sets, built from the
//     sub-solves' dual bounds (never incumbents) when they time out.
//
// Stage calls: a stage is a run of a device's tasks that one runtime call executes; a task
// (in batched mode a node's batch on a device) opens one when it reads a non-free tensor from
// another device (batched: when one of its granules does) or is a source and its device's
// first task, and then also takes its device's CallCost (Device.CallCost), so the stages a
// caller emits from Schedule.Tasks (Task.Stage, Task.Call) are exactly the priced ones. What
// prices them where:
//
//   - the simulator, in both modes, hence every heuristic, EA and SA, which it judges, and
//     the chosen plan's merge: whole stages moved onto a neighbouring stage's device (batched:
//     their granules), or everything onto one device, while the makespan falls, so no stage
//     remains whose merge into a neighbour pays; Options.MaxStages caps the stages of latency
//     and batched plans alike: a plan over the cap is repaired by merges of least makespan,
//     by merges of fewest stages and onto one device (a stage may then also move onto any
//     device in use: a batched route of granules has no neighbour), each repair improved
//     within the cap, and the fastest kept (a *StageCapError when no plan within the cap fits);
//   - the latency MILP (milp_latency.go): cross-device openers exactly (o_jv ≥ x_jv − x_iv),
//     a source's call through a shifted start, each used device's call in its load row; its
//     optimum is a lower bound always and equals the priced makespan of its plan unless a
//     source with an in-edge or no time may sit on a device with a call (then it serves as a
//     relaxation, and the simulator judges its plan);
//   - MILP-SPLIT's sub-problems: the cross-device calls of their nodes, never a source's
//     first-task call (their devices may have run earlier modules), so their bounds stay
//     bounds of every real plan's part;
//   - the batched MILP (milp_batched.go) the same way per granule: a batch opens on its
//     per-granule rows o[j,v] ≥ x[j,v,l] − x[i,v,l] and takes c_v in F3, F4a and F5, a source
//     batch's call through a shifted start, each device's calls (≥ one when used) in its load
//     row; its optimum is a lower bound always and the priced makespan of its plan without
//     congestion unless a call may fall on a source with an in-edge or on a batch of no time
//     (then, as with congestion, it serves as a relaxation, and the simulator judges its plan);
//   - the lower bounds (bounds.go): the communication critical path adds a call to every
//     cross-device input and ends every task of positive time no earlier than its device's
//     call; the load LP charges each device it uses one call; the serial horizon one call per
//     task. Each argument is written beside its code;
//   - the coupled bounds (bounds_coupled.go, latency mode): the HLP relaxation (fractional
//     devices, completion times along every edge, loads) with transfers, calls, head/tail
//     rows and congestion loads (coupled-lp); the same LP with every node fixed off the
//     devices where its head + tail reaches θ, max over θ of min(θ, LP(θ)) (coupled-lp-fixed);
//     and the model with binary devices (coupled-mip, HiGHS's dual bound).
//
// Certificates: a Result's LowerBound (and every entry of Bounds) is proved — each bound's
// argument is stated where it is computed (bounds.go, bounds_coupled.go, split.go) —, Optimal means the plan is
// within RelGap of that bound, and Solve returns an error of kind diag.KindInfeasible only
// with a proof (a node that fits nowhere, more memory needed than the devices hold, or the
// full MILP infeasible over a horizon valid for every plan); when nothing is proved and no
// plan fits it returns one of kind diag.KindNoPlan. The certificate harness
// (certify_*_test.go) checks these promises against an exhaustive reference written apart
// from the solvers, on random small instances with the edge cases that broke them before:
// `go test` runs a few thousand, ONNXPART_FUZZ_CERT=N (TestCertificatesLong) N more, and
// FuzzCertificates drives the generator from fuzz input.
//
// The planner (internal/planner) builds a Problem from a model's graph and its costs (the
// CLI's path for ONNX models, and the benchmarks'); sub-package instances reads Moirai's CSVs
// and generates RandWire stacks; bench/schedule (at the repository root) prints the benchmark
// tables (make bench-schedule).
//
// Units: one time unit throughout (the benchmarks use milliseconds); bytes and bandwidth in
// bytes per time unit. Every method is deterministic for a given seed when it stops on its
// iteration budget or proves optimality; a time limit or a cancelled context returns the best
// placement found so far.
package schedule

// Package report renders a plan's manifest as report.html: one self-contained page (inline
// CSS and SVG, no script, nothing fetched) with the model summary, the pipeline of stages
// and transfers, a timeline of one inference (or the planner's own timeline with its
// critical path), the steady-state pipeline with the bottleneck stage, memory per device
// against capacity, a workload's phases, and the lower bounds with the gap they certify.
//
// What goes in: an *emit.Manifest, as emit writes it and the planners fill its predicted,
// bounds, timeline and memory sections. What comes out: the page's bytes (HTML), the same
// for the same manifest, or report.html written into a directory (Write; the command line
// calls it through emit.Options.Extras, inside emit's atomic write). PlanFigures gives the
// figures the page headlines (a pipeline's bottleneck, a placement's latency, a batch's
// time), CriticalPath and CriticalStages the chain of a timeline that sets its length.
package report

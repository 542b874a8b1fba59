#!/usr/bin/env bash
# families-table.sh [ONNXPART_FLAGS...]: generates the held-out families (internal/familygen's
# *_small presets, and any preset named in $PRESETS) and plans each on a100-80g,t4 and
# a100-80g,t4,cpu with --objective latency and the given flags (none: no seed, the default
# 30 s, as issue 41 asks), one at a time; prints a Markdown row per plan: plan, bound and
# which, gap, stages, wall time (loading and writing included). The load average is printed
# before and after: the clock-driven runs depend on it.
#   make bench-families                                   # the table in docs/benchmarks.md
#   make bench-families BENCH_FAMILIES_FLAGS="--seed 1"   # the reproducible search
#   FAMILY_MODELS="../shared/models/googlenet_small.onnx …" make bench-families   # given models
# env: ONNXPART (the binary, default bin/onnxpart), PRESETS (the presets to plan), FAMILY_MODELS
# (model files to plan instead of generated presets).
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=${ONNXPART:-bin/onnxpart}
presets=${PRESETS:-"densenet121_small inception_v3_small gpt2_small gpt2_small_masks randwire_er_small randwire_ws_small"}
if [ -n "${FAMILY_MODELS:-}" ]; then
	mkdir -p "$work/models"
	presets=""
	for f in $FAMILY_MODELS; do
		m=$(basename "$f" .onnx)
		cp "$f" "$work/models/$m.onnx"
		presets="$presets $m"
	done
else
	# shellcheck disable=SC2086
	go run ./internal/familygen/cmd/familygen -o "$work/models" $presets >/dev/null
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| model | devices | plan | bound (by) | gap | stages | wall |"
echo "|---|---|---:|---:|---:|---:|---:|"
for m in $presets; do
	for d in a100-80g,t4 a100-80g,t4,cpu; do
		out="$work/out/$m-$d"
		s=$(date +%s.%N)
		"$bin" "$work/models/$m.onnx" --devices "$d" --objective latency -q -o "$out" "$@" >/dev/null
		e=$(date +%s.%N)
		python3 - "$out/manifest.json" "$m" "$d" "$(echo "$e - $s" | bc)" <<'PY'
import json, sys
man, m, d, wall = sys.argv[1:]
j = json.load(open(man))
b, plan = j["bounds"], j["predicted"]["latency_s"]
print(f"| {m} | {d} | {plan*1e6:.1f} µs | {b['lower_bound_s']*1e6:.1f} µs ({b['method']}) | {b['gap']*100:.1f}% | {len(j['stages'])} | {float(wall):.1f} s |")
PY
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

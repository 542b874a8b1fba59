#!/usr/bin/env bash
# bench-costs (#42): stage times planned from a cost file measured once, against ONNX
# Runtime's measured stage times.
#
#   1. profile every model once into one cost file (onnxpart profile --costs measured -o);
#   2. plan each model from that file (--costs FILE, --seed 1, a pipeline on DEVICES);
#   3. run each plan's stages in ONNX Runtime (onnxpart bench) and compare each stage's busy
#      time (its ONNX Runtime call, mean wall time) with the manifest's prediction.
#
# Prints one row per stage (predicted, measured, error) and the median |error| over all
# stages, with the machine's load before and after. Writes everything under $OUT.
#
# Usage: scripts/bench-costs.sh [MODEL.onnx[:DIMS]...]
#   DIMS binds symbolic dims, e.g. llama-small.onnx:batch=1,seq=1,past=128
#   env: ONNXPART (the binary), DEVICES (default cpu:2x1), OUT (default out/bench-costs),
#        REQUESTS (default 200), MODELS (the corpus directory)
set -euo pipefail
ONNXPART=${ONNXPART:-out/onnxpart}
DEVICES=${DEVICES:-cpu:2x1}
OUT=${OUT:-out/bench-costs}
REQUESTS=${REQUESTS:-200}
MODELS=${MODELS:-../shared/models}
mkdir -p "$OUT"
if [ $# -eq 0 ]; then
	if [ ! -f "$OUT/llama-small.onnx" ]; then
		go run ./internal/llamagen/cmd/llamagen -preset small -o "$OUT" >/dev/null
	fi
	set -- "$MODELS/squeezenet1_1_small.onnx" "$MODELS/resnet50_small.onnx" "$MODELS/mobilenet_v2_small.onnx" \
		"$MODELS/googlenet_small.onnx" "$MODELS/efficientnet_b0_small.onnx" \
		"$OUT/llama-small.onnx:batch=1,seq=1,past=128"
fi
echo "# bench-costs $(date -u +%Y-%m-%dT%H:%MZ), devices $DEVICES, $REQUESTS requests per plan"
echo "load before: $(uptime)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) logical CPUs"
# 1. One cost file. Models with dims are profiled on their own (each --dim applies to all
# the models of one profile run) and merged into the same file.
COSTS="$OUT/costs.json"
rm -f "$COSTS"
plain=()
for spec in "$@"; do
	case "$spec" in
	*:*) ;;
	*) plain+=("$spec") ;;
	esac
done
if [ ${#plain[@]} -gt 0 ]; then
	"$ONNXPART" profile --devices "$DEVICES" --costs measured --merge -o "$COSTS" "${plain[@]}"
fi
for spec in "$@"; do
	case "$spec" in
	*:*)
		m=${spec%%:*}
		dims=${spec#*:}
		"$ONNXPART" profile --devices "$DEVICES" --costs measured --merge -o "$COSTS" --dim "$dims" "$m"
		;;
	esac
done
# 2 and 3. Plan from the file, bench the plan.
for spec in "$@"; do
	m=${spec%%:*}
	dimargs=()
	if [ "$spec" != "$m" ]; then dimargs=(--dim "${spec#*:}"); fi
	name=$(basename "$m" .onnx)
	"$ONNXPART" "$m" --devices "$DEVICES" --costs "$COSTS" --objective throughput --seed 1 -q --force \
		"${dimargs[@]}" -o "$OUT/$name" >"$OUT/$name.plan.txt"
	"$ONNXPART" bench "$OUT/$name" --devices "$DEVICES" --requests "$REQUESTS" "${dimargs[@]}" --json >"$OUT/$name.bench.json"
done
echo "load after: $(uptime)"
python3 - "$OUT" "$@" <<'EOF'
import json, os, statistics, sys
out, specs = sys.argv[1], sys.argv[2:]
rows, errs, perrs, cerrs = [], [], [], []
for spec in specs:
    name = os.path.basename(spec.split(':')[0])[:-len('.onnx')]
    plan = open(os.path.join(out, name + '.plan.txt')).read()
    share = next((l.split('costs:', 1)[1].strip() for l in plan.splitlines() if 'costs:' in l), '?')
    b = json.load(open(os.path.join(out, name + '.bench.json')))
    for s in b['stage_times']:
        pred, meas, p50, cpu = s['busy']['planned'], s['busy']['measured'], s['busy_p50_s'], s['cpu_s']
        err, perr, cerr = (pred - meas) / meas, (pred - p50) / p50, (pred - cpu) / cpu
        errs.append(abs(err))
        perrs.append(abs(perr))
        cerrs.append(abs(cerr))
        rows.append((name, s['stage'], s['device'], pred, meas, err, p50, perr, cpu, cerr, share))
print()
print('| model | stage | device | predicted | busy, mean wall | error | busy, median wall | error | busy, mean CPU | error | costs |')
print('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|')
for r in rows:
    print('| %s | %d | %s | %.0f µs | %.0f µs | %+.1f%% | %.0f µs | %+.1f%% | %.0f µs | %+.1f%% | %s |' % (
        r[0], r[1], r[2], r[3] * 1e6, r[4] * 1e6, r[5] * 100, r[6] * 1e6, r[7] * 100, r[8] * 1e6, r[9] * 100, r[10]))
print()
print('median |error| over %d stages: %.1f%% against the mean wall time, %.1f%% against the median wall time, %.1f%% against the CPU time' % (
    len(errs), statistics.median(errs) * 100, statistics.median(perrs) * 100, statistics.median(cerrs) * 100))
EOF

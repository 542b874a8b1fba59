#!/bin/bash
# The GPU check of issue 4, run on a machine with an NVIDIA GPU, PyTorch and the onnx package
# (see gpucheck.py). Arguments: the onnxpart binary and a directory of models. Writes the log
# to stdout and the per-node JSON files to the directory $OUT (default /tmp/gpucheck).
B=${1:-onnxpart}; M=${2:-../shared/models}; OUT=${OUT:-/tmp/gpucheck}
here=$(dirname "$0")
mkdir -p "$OUT/json"
echo "== nvidia-smi"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,pcie.link.gen.max,pcie.link.width.max,pcie.link.gen.current,driver_version --format=csv
nvidia-smi nvlink -s 2>&1 | head -5
echo "== onnxpart profile --devices auto"
"$B" profile --devices auto 2>&1
if "$B" profile --devices auto 2>&1 | grep -q "NVML not available"; then
	for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
		[ -e "$d/libnvidia-ml.so.1" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && break
	done
	echo "== again with LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
	"$B" profile --devices auto 2>&1
fi
"$B" profile --devices auto --json > "$OUT/json/profile_auto.json" 2>&1
echo "== ONNX Runtime on this machine"
python3 -c "import onnxruntime as o; print('python onnxruntime', o.__version__, o.get_available_providers())" 2>&1
find / -xdev -name 'libonnxruntime_providers_cuda*' 2>/dev/null | head -3
echo "== peaks"
python3 "$here/gpucheck.py" --peaks --json "$OUT/json/peaks.json" 2>&1
run() { # model, then --dim flags
	local m=$1; shift
	local tag=$(basename "$m" .onnx)${1:+_${1#*=}}
	"$B" profile --devices auto --nodes --json ${1:+--dim $1} "$m" > "$OUT/json/$tag.pred.json" || return
	python3 "$here/gpucheck.py" --model "$m" --pred "$OUT/json/$tag.pred.json" ${1:+--dim $1} --json "$OUT/json/$tag.meas.json" 2>&1
}
for m in resnet50_small vgg16_small squeezenet1_1 squeezenet1_1_small googlenet_small efficientnet_b0_small randwire_ws_small_small bert_base_like_small; do
	run "$M/$m.onnx"
done
for b in 1 64 256; do run "$M/mobilenet_v2_small_dynbatch.onnx" batch=$b; done

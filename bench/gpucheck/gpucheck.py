#!/usr/bin/env python3
"""gpucheck: the roofline's per-node GPU predictions against a real GPU.

Runs only where a GPU is (the device machine of this workplace, or any CUDA machine with
PyTorch and the onnx package); nothing in the build or the tests depends on it.

onnxpart loads the CPU build of ONNX Runtime, so its stage files cannot be timed on a GPU
through it. This script times each node of an ONNX model on the GPU with PyTorch instead:
every node is mapped to the PyTorch call that computes it (a small interpreter for the ops
of ../shared/models), run once to get real inputs, and then timed two ways:

  graph   the node's kernels captured in a CUDA graph and replayed: device time only, no
          host dispatch (what a runtime that captures graphs, e.g. TensorRT, pays);
  eager   the node called back to back from Python: host dispatch included (an upper
          figure for a runtime that launches one op at a time).

It then reads `onnxpart profile --devices auto --nodes --json MODEL` (run beforehand, the
file named by --pred) and prints, per op class, predicted against measured, and the whole
model. Usage:

  onnxpart profile --devices auto --nodes --json [--dim batch=B] M.onnx > M.pred.json
  python3 gpucheck.py --model M.onnx --pred M.pred.json [--dim batch=B] [--json out.json]
  python3 gpucheck.py --peaks            # GEMM, copy, host-link and launch microbenchmarks
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DT = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32,
      7: torch.int64, 9: torch.bool, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16}


def lst(v):
    return v if isinstance(v, list) else v.tolist()


def sym_pads(pads, n):
    """ONNX pads [b1..bn, e1..en] -> (symmetric padding tuple or None, F.pad list)."""
    if not pads:
        return tuple([0] * n), None
    b, e = pads[:n], pads[n:]
    if b == e:
        return tuple(b), None
    fp = []
    for i in reversed(range(n)):
        fp += [b[i], e[i]]
    return tuple([0] * n), fp


def op_conv(a, x, w, b=None):
    n = w.dim() - 2
    pad, fp = sym_pads(a.get("pads"), n)
    if fp:
        x = F.pad(x, fp)
    s = tuple(a.get("strides", [1] * n))
    d = tuple(a.get("dilations", [1] * n))
    g = a.get("group", 1)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return conv(x, w, b, s, pad, d, g)


def op_pool(a, x, kind):
    k = a["kernel_shape"]
    n = len(k)
    pad, fp = sym_pads(a.get("pads"), n)
    s = a.get("strides", [1] * n)
    if kind == "max":
        if fp:
            x = F.pad(x, fp, value=-math.inf)
        f = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n]
        return f(x, k, s, pad, a.get("dilations", [1] * n), bool(a.get("ceil_mode", 0)))
    if fp:
        x = F.pad(x, fp)
    f = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    return f(x, k, s, pad, bool(a.get("ceil_mode", 0)), bool(a.get("count_include_pad", 0)))


def op_gemm(a, A, B, C=None):
    if a.get("transA", 0):
        A = A.t()
    if a.get("transB", 0):
        B = B.t()
    y = a.get("alpha", 1.0) * (A @ B)
    if C is not None:
        y = y + a.get("beta", 1.0) * C
    return y


def op_reshape(a, x, shape):
    shape = list(lst(shape))
    if not a.get("allowzero", 0):
        shape = [x.shape[i] if v == 0 else v for i, v in enumerate(shape)]
    return x.reshape(shape)


def op_slice(a, x, starts, ends, axes=None, steps=None):
    starts, ends = lst(starts), lst(ends)
    axes = lst(axes) if axes is not None else list(range(len(starts)))
    steps = lst(steps) if steps is not None else [1] * len(starts)
    idx = [slice(None)] * x.dim()
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax = ax % x.dim()
        dim = x.shape[ax]
        if st < 0:
            raise NotImplementedError("negative Slice step")
        s = max(0, min(dim, s + dim if s < 0 else s))
        e = max(0, min(dim, e + dim if e < 0 else e))
        idx[ax] = slice(s, e, st)
    return x[tuple(idx)]


def op_gather(a, x, i):
    ax = a.get("axis", 0) % x.dim()
    i = torch.where(i < 0, i + x.shape[ax], i)
    out = x.index_select(ax, i.reshape(-1))
    return out.reshape(tuple(x.shape[:ax]) + tuple(i.shape) + tuple(x.shape[ax + 1:]))


def op_div(a, x, y):
    if x.is_floating_point():
        return x / y
    return torch.div(x, y, rounding_mode="trunc")


def op_reduce_mean(a, x, axes=None):
    axes = lst(axes) if axes is not None else a.get("axes")
    keep = bool(a.get("keepdims", 1))
    if not axes:
        return x.mean(dim=tuple(range(x.dim())), keepdim=keep)
    return x.mean(dim=tuple(axes), keepdim=keep)


def op_softmax(a, x, opset):
    if opset >= 13:
        return torch.softmax(x, a.get("axis", -1))
    ax = a.get("axis", 1) % x.dim()
    s = x.shape
    return torch.softmax(x.reshape(math.prod(s[:ax]), -1), -1).reshape(s)


def op_unsqueeze(a, x, axes=None):
    axes = sorted(lst(axes) if axes is not None else a["axes"])
    r = x.dim() + len(axes)
    for ax in sorted(v % r for v in axes):
        x = x.unsqueeze(ax)
    return x


def op_squeeze(a, x, axes=None):
    axes = lst(axes) if axes is not None else a.get("axes")
    if axes is None:
        return x.squeeze()
    for ax in sorted((v % x.dim() for v in axes), reverse=True):
        x = x.squeeze(ax)
    return x


# Inputs that carry shapes or axes: read once as Python lists, so the timed call is only the
# node's kernel (a runtime knows them when it builds the session).
SHAPE_ARGS = {"Reshape": {1}, "Slice": {1, 2, 3, 4}, "Expand": {1}, "ConstantOfShape": {0},
              "ReduceMean": {1}, "Unsqueeze": {1}, "Squeeze": {1}, "Tile": {1}}


def make_op(node, a, opset):
    t = node.op_type
    unary = {"Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Erf": torch.erf,
             "Sqrt": torch.sqrt, "Exp": torch.exp, "Neg": torch.neg, "Identity": lambda x: x}
    if t in unary:
        return unary[t]
    binary = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Pow": torch.pow,
              "Equal": torch.eq, "MatMul": torch.matmul}
    if t in binary:
        return binary[t]
    if t == "Div":
        return lambda x, y: op_div(a, x, y)
    if t == "Where":
        return torch.where
    if t == "Conv":
        return lambda *xs: op_conv(a, *xs)
    if t == "MaxPool":
        return lambda x: op_pool(a, x, "max")
    if t == "AveragePool":
        return lambda x: op_pool(a, x, "avg")
    if t == "GlobalAveragePool":
        return lambda x: x.mean(dim=tuple(range(2, x.dim())), keepdim=True)
    if t == "Gemm":
        return lambda *xs: op_gemm(a, *xs)
    if t == "Clip":
        lo, hi = a.get("min"), a.get("max")
        return lambda x, mn=None, mx=None: torch.clamp(x, mn if mn is not None else lo,
                                                        mx if mx is not None else hi)
    if t == "Concat":
        return lambda *xs: torch.cat(xs, a["axis"])
    if t == "Flatten":
        ax = a.get("axis", 1)
        return lambda x: x.reshape(math.prod(x.shape[:ax % max(x.dim(), 1)] if ax else []), -1)
    if t == "Reshape":
        return lambda x, s: op_reshape(a, x, s)
    if t == "Transpose":
        return lambda x: x.permute(a["perm"]) if "perm" in a else x.permute(*reversed(range(x.dim())))
    if t == "Slice":
        return lambda *xs: op_slice(a, *xs)
    if t == "Gather":
        return lambda x, i: op_gather(a, x, i)
    if t == "Softmax":
        return lambda x: op_softmax(a, x, opset)
    if t == "ReduceMean":
        return lambda *xs: op_reduce_mean(a, *xs)
    if t == "LayerNormalization":
        def ln(x, w, b=None):
            ax = a.get("axis", -1) % x.dim()
            return F.layer_norm(x, tuple(x.shape[ax:]), w, b, a.get("epsilon", 1e-5))
        return ln
    if t == "Cast":
        return lambda x: x.to(DT[a["to"]])
    if t == "Expand":
        return lambda x, s: x.expand(torch.broadcast_shapes(tuple(x.shape), tuple(lst(s))))
    if t == "Unsqueeze":
        return lambda *xs: op_unsqueeze(a, *xs)
    if t == "Squeeze":
        return lambda *xs: op_squeeze(a, *xs)
    raise NotImplementedError(t)


def load(path, dims, dev):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    opset = max((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), default=13)
    vals = {}
    for init in m.graph.initializer:
        vals[init.name] = torch.from_numpy(numpy_helper.to_array(init).copy()).to(dev)
    gen = torch.Generator().manual_seed(1)
    for inp in m.graph.input:
        if inp.name in vals:
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dims[d.dim_param] for d in tt.shape.dim]
        dt = DT[tt.elem_type]
        if dt.is_floating_point:
            v = torch.randn(shape, generator=gen).to(dt)
        elif "mask" in inp.name:
            v = torch.ones(shape, dtype=dt)
        else:
            v = torch.randint(0, 100, shape, generator=gen).to(dt)
        vals[inp.name] = v.to(dev)
    return m, opset, vals


def attrs_of(node):
    from onnx import helper, numpy_helper
    a = {}
    for at in node.attribute:
        v = helper.get_attribute_value(at)
        if isinstance(v, bytes):
            v = v.decode()
        elif hasattr(v, "dims") and hasattr(v, "data_type"):
            v = numpy_helper.to_array(v)
        a[at.name] = v
    return a


def plan(m, opset, vals, dev):
    """Runs the model once node by node; returns [(node, call, args)] with args resolved."""
    steps = []
    for node in m.graph.node:
        a = attrs_of(node)
        if node.op_type == "Constant":
            if "value" in a:
                v = torch.from_numpy(a["value"].copy()).to(dev)
            else:
                (k, raw), = a.items()  # value_float(s), value_int(s)
                v = torch.tensor(raw, dtype=torch.float32 if "float" in k else torch.int64, device=dev)
            vals[node.output[0]] = v
            steps.append((node, None, None))
            continue
        if node.op_type == "Shape":
            x = vals[node.input[0]]
            s = list(x.shape)
            st, en = a.get("start", 0), a.get("end", len(s))
            vals[node.output[0]] = torch.tensor(s[st:en], dtype=torch.int64, device=dev)
            steps.append((node, None, None))
            continue
        if node.op_type == "ConstantOfShape":
            shape = lst(vals[node.input[0]])
            fill = torch.from_numpy(a["value"].copy()) if "value" in a else torch.zeros(1)
            vals[node.output[0]] = torch.full(shape, fill.item(), dtype=fill.dtype, device=dev)
            steps.append((node, None, None))
            continue
        call = make_op(node, a, opset)
        args = []
        for i, name in enumerate(node.input):
            if name == "":
                args.append(None)
            elif i in SHAPE_ARGS.get(node.op_type, ()):
                args.append(lst(vals[name]))
            else:
                args.append(vals[name])
        while args and args[-1] is None:
            args.pop()
        out = call(*args)
        outs = out if isinstance(out, tuple) else (out,)
        for name, v in zip(node.output, outs):
            vals[name] = v
        steps.append((node, call, args))
    return steps


def time_graph(fn, reps=10, replays=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(replays):
            g.replay()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) * 1e-3 / (reps * replays))
    del g
    return statistics.median(times)


def time_eager(fn, reps=50):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def measure_model(path, dims, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    m, opset, vals = load(path, dims, dev)
    with torch.no_grad():
        steps = plan(m, opset, vals, dev)
        nodes = {}
        for node, call, args in steps:
            if call is None:
                nodes[node.name] = {"op": node.op_type, "graph_s": 0.0, "eager_s": 0.0, "folded": True}
                continue
            fn = lambda c=call, a=args: c(*a)
            try:
                g = time_graph(fn)
            except Exception as e:  # a call that cannot be captured (host sync)
                g = None
                print(f"  {node.name}: not captured ({type(e).__name__}: {str(e)[:80]})", file=sys.stderr)
            nodes[node.name] = {"op": node.op_type, "graph_s": g, "eager_s": time_eager(fn)}
        calls = [(c, a) for _, c, a in steps if c is not None]

        def whole():
            for c, a in calls:
                c(*a)
        total = {"graph_s": time_graph(whole, reps=2, replays=10), "eager_s": time_eager(whole, reps=10)}
    return nodes, total


def compare(pred, meas, total, label):
    rows = pred["model"]["node_times"]
    by = {}
    errs = []
    for r in rows:
        mm = meas.get(r["name"])
        if mm is None or mm.get("folded") or mm["graph_s"] is None:
            continue
        c = by.setdefault(r["class"], [0, 0.0, 0.0, 0.0])
        c[0] += 1
        c[1] += r["seconds"][0]
        c[2] += mm["graph_s"]
        c[3] += mm["eager_s"]
        if mm["graph_s"] > 0:
            errs.append(r["seconds"][0] / mm["graph_s"])
    print(f"\n{label}")
    print(f"{'class':>22} {'nodes':>5} {'predicted':>11} {'graph':>11} {'eager':>11} {'pred/graph':>10}")
    for cl, (n, p, g, e) in sorted(by.items(), key=lambda kv: -kv[1][2]):
        print(f"{cl:>22} {n:>5} {p*1e6:>9.1f}µs {g*1e6:>9.1f}µs {e*1e6:>9.1f}µs {p/g if g else float('nan'):>10.2f}")
    ptot = pred["model"]["total_seconds"][0]
    print(f"{'whole model':>22} {len(rows):>5} {ptot*1e6:>9.1f}µs {total['graph_s']*1e6:>9.1f}µs "
          f"{total['eager_s']*1e6:>9.1f}µs {ptot/total['graph_s']:>10.2f}")
    if errs:
        errs.sort()
        med = statistics.median(errs)
        within = sum(1 for x in errs if 0.5 <= x <= 2) / len(errs)
        print(f"per node predicted/graph: median {med:.2f}, p10 {errs[len(errs)//10]:.2f}, "
              f"p90 {errs[len(errs)*9//10]:.2f}, within 2x {within*100:.0f}% of {len(errs)}")


def peaks():
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0),
           "sms": torch.cuda.get_device_properties(0).multi_processor_count}
    n = 8192
    for name, dt, tf32 in [("fp32", torch.float32, False), ("tf32", torch.float32, True),
                           ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device=dev, dtype=dt)
        b = torch.randn(n, n, device=dev, dtype=dt)
        t = time_eager(lambda: a @ b, reps=5)
        out["gemm_" + name + "_flops"] = 2 * n ** 3 / t
    torch.backends.cuda.matmul.allow_tf32 = False
    x = torch.empty(1 << 28, device=dev)  # 1 GiB
    y = torch.empty_like(x)
    t = time_eager(lambda: y.copy_(x), reps=10)
    out["copy_bytes_per_s"] = 2 * x.numel() * 4 / t
    h = torch.empty(1 << 28, pin_memory=True)
    t = time_eager(lambda: x.copy_(h, non_blocking=True), reps=5)
    out["h2d_bytes_per_s"] = x.numel() * 4 / t
    t = time_eager(lambda: h.copy_(x, non_blocking=True), reps=5)
    out["d2h_bytes_per_s"] = x.numel() * 4 / t
    s = torch.zeros(1, device=dev)
    out["tiny_kernel_graph_s"] = time_graph(lambda: s.add_(1), reps=100, replays=20)
    out["tiny_kernel_eager_s"] = time_eager(lambda: s.add_(1), reps=1000)
    for k, v in out.items():
        print(f"{k:>22}  {v:.4g}" if isinstance(v, float) else f"{k:>22}  {v}")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--pred")
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--json")
    ap.add_argument("--peaks", action="store_true")
    o = ap.parse_args()
    res = {}
    if o.peaks:
        res["peaks"] = peaks()
    if o.model:
        dims = {k: int(v) for k, v in (d.split("=") for d in o.dim)}
        pred = json.load(open(o.pred))
        for tf32 in (False, True):
            nodes, total = measure_model(o.model, dims, tf32)
            label = f"{o.model} {' '.join(o.dim)} on {torch.cuda.get_device_name(0)}, fp32 {'with TF32' if tf32 else 'strict (no TF32)'}"
            compare(pred, nodes, total, label)
            res["tf32" if tf32 else "fp32"] = {"nodes": nodes, "total": total}
    if o.json:
        json.dump(res, open(o.json, "w"), indent=1)


if __name__ == "__main__":
    main()

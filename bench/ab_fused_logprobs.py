"""A/B in one process: replay exact with the vocabulary gather of a log-softmax fused (ops.replay_log_softmax_gather,
"new") and unfused ("old": replay_gather over the log-softmax), interleaved, medians.

    python bench/ab_fused_logprobs.py [workload (default tree)] [reps (default 5)] [other harness systems...]
"""
import importlib.util, sys, pathlib, os, statistics
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(pathlib.Path(__file__).resolve().parents[1] / ".torchinductor_cache"))
import torch
path = pathlib.Path(__file__).resolve().parent / "harness.py"
spec = importlib.util.spec_from_file_location("h", path)
h = importlib.util.module_from_spec(spec); sys.modules["h"] = h; spec.loader.exec_module(h)
from replaycompile.passes import rewrite as rw
torch.set_num_threads(2)
wl = sys.argv[1] if len(sys.argv) > 1 else "tree"
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
extra = sys.argv[3:]  # other harness systems to interleave
model, cfg = h.build_model("qwen3", False, "cpu")
ctx = h.Context("cpu", cfg, 6 * 2**30, "inductor", "inductor")
w = h.WORKLOADS[wl]
orig = rw._fused_log_softmax_input
steps = {}
for name, patch in (("new", orig), ("old", lambda *a: None)):
    rw._fused_log_softmax_input = patch
    steps[name] = h._with_backward(h._compiled(h.lc._loss_full, f"step_{name}", "replay", {"inner": "inductor"}))
    for k in range(2):
        print(name, "warm", round(h.run_step(steps[name], model, w.batch(cfg.vocab_size, k), "cpu")[1], 3), flush=True)
rw._fused_log_softmax_input = orig
for e in extra:
    steps[e] = ctx.step(h.SYSTEMS[e])
    print(e, "warm", round(h.run_step(steps[e], model, w.batch(cfg.vocab_size, 0), "cpu")[1], 3), flush=True)
ts = {k: [] for k in steps}
for r in range(reps):
    b = w.batch(cfg.vocab_size, 10 + r)
    for k, s in steps.items():
        ts[k].append(h.run_step(s, model, b, "cpu")[1])
    print(r, {k: round(v[-1], 3) for k, v in ts.items()}, flush=True)
print({k: round(statistics.median(v), 3) for k, v in ts.items()})

"""bf16 autocast: how far the packed step is from eager, next to how far eager is from itself.

Issue 10 asks for bf16 gradients "within the noise of eager against eager on a permuted batch". On CPU that noise
is ~1e-7 (eager computes every row alone and alike wherever it sits), so any computation that rounds anywhere
else misses it. This prints, for a tiny Qwen3 and Llama under bf16 autocast (fp32 weights), the distance to eager
on the batch as is of: eager on the permuted batch, eager in two micro-batches (gradient accumulation, what
TRL's loop does), eager padded 8 columns longer, eager row by row unpadded, the packed step (replay, aot_eager),
and the fp32 step (what bf16 costs); and each one's distance to fp32.

    python bench/bf16_noise.py
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from helpers import group_batch, grpo_loss, old_logprobs, run
from replaycompile.models import tiny_model
import replaycompile

torch.manual_seed(0)
torch.set_num_threads(2)
DT = torch.bfloat16

def loss_sum(model, ids, am, adv, p, denom):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = logits[:, p - 1:-1].float().log_softmax(-1).gather(-1, ids[:, p:, None]).squeeze(-1)
    cm = am[:, p:].float()
    ratio = torch.exp(logp - old_logprobs(ids, p, logits.shape[-1]))
    obj = torch.minimum(ratio * adv[:, None], ratio.clamp(0.8, 1.2) * adv[:, None])
    return -((obj + 0.01 * logp) * cm).sum() / denom

def grads(model):
    return {k: q.grad.detach().clone() for k, q in model.named_parameters() if q.grad is not None}

def zero(model):
    for q in model.parameters(): q.grad = None

def eager(model, ids, am, adv, p, chunks=1, extra_pad=0, rows=False):
    zero(model)
    denom = am[:, p:].float().sum()
    if extra_pad:
        ids = torch.cat([ids, torch.zeros(ids.shape[0], extra_pad, dtype=ids.dtype)], 1)
        am = torch.cat([am, torch.zeros(am.shape[0], extra_pad, dtype=am.dtype)], 1)
    total = 0.0
    parts = [[i] for i in range(ids.shape[0])] if rows else torch.arange(ids.shape[0]).chunk(chunks)
    for idx in parts:
        idx = torch.as_tensor(idx)
        i, a = ids[idx], am[idx]
        if rows:  # unpadded row (keep the left padding of the prompt so p stays the same)
            n = int(a.nonzero().max()) + 1
            i, a = i[:, :n], a[:, :n]
        with torch.autocast("cpu", dtype=DT):
            l = loss_sum(model, i, a, adv[idx], p, denom)
        l.backward(); total += l.detach()
    return total, grads(model)

def compiled_step():
    fn = torch.compile(lambda m, i, a, ad, p: loss_sum(m, i, a, ad, p, a[:, p:].float().sum()), backend="replay",
                       options={"inner": "aot_eager"})
    def step(model, ids, am, adv, p):
        zero(model)
        with torch.autocast("cpu", dtype=DT):
            l = fn(model, ids, am, adv, p)
        l.backward()
        return l.detach(), grads(model)
    return step

def worst(a, b):
    return max(((a[1][k].float() - b[1][k].float()).norm() / b[1][k].float().norm()).item() for k in b[1])

def l2(a, b):
    num = sum(((a[1][k].double() - b[1][k].double()).norm() ** 2).item() for k in b[1])
    den = sum((b[1][k].double().norm() ** 2).item() for k in b[1])
    return (num / den) ** 0.5

for name, batch in [("test batch (G=6, prompt 10)", group_batch(lens=(6, 5, 6, 4, 6, 3))),
                    ("G=8, prompt 96, completions 8-40", group_batch(prompt_len=96, lens=(40, 17, 33, 8, 25, 40, 12, 30), vocab=128))]:
    for family in ("qwen3", "llama"):
        model = tiny_model(family, "sdpa")
        fp32model = tiny_model(family, "sdpa")
        ids, am, adv, p = batch
        ref = eager(model, ids, am, adv, p)
        perm = torch.randperm(ids.shape[0])
        vs = {
            "eager, rows permuted": eager(model, ids[perm], am[perm], adv[perm], p),
            "eager, 2 micro-batches (grad accumulation)": eager(model, ids, am, adv, p, chunks=2),
            "eager, padded 8 columns longer": eager(model, ids, am, adv, p, extra_pad=8),
            "eager, row by row unpadded": eager(model, ids, am, adv, p, rows=True),
        }
        zero(fp32model)
        l = loss_sum(fp32model, ids, am, adv, p, am[:, p:].float().sum()); l.backward()
        fp32 = (l.detach(), grads(fp32model))
        got = compiled_step()(model, ids, am, adv, p)
        st = replaycompile.last_stats()
        print(f"## {name}, {family}, bf16 autocast; replay applied={st['applied']} tokens {st['tokens_computed']}/{st['tokens_in']}")
        print(f"  {'compared with eager (bf16, the batch as is)':<48} worst-param rel  grad rel L2   loss diff")
        for k, v in vs.items():
            print(f"  {k:<48} {worst(v, ref):.1e}          {l2(v, ref):.1e}      {abs(v[0]-ref[0]).item():.1e}")
        print(f"  {'replay (packed)':<48} {worst(got, ref):.1e}          {l2(got, ref):.1e}      {abs(got[0]-ref[0]).item():.1e}")
        print(f"  {'fp32 eager (what bf16 costs)':<48} {worst(fp32, ref):.1e}          {l2(fp32, ref):.1e}      {abs(fp32[0]-ref[0]).item():.1e}")
        print(f"  vs fp32: eager {worst(ref, fp32):.1e}, replay {worst(got, fp32):.1e}")

def per_param(a, b):
    return sorted((((a[1][k].float() - b[1][k].float()).norm() / b[1][k].float().norm()).item(), k) for k in b[1])[::-1]
print("\n# worst parameters, last case")
for nm, v in [("replay", got), ("row by row", vs["eager, row by row unpadded"]), ("micro-batches", vs["eager, 2 micro-batches (grad accumulation)"])]:
    print(nm, [(f"{e:.1e}", k) for e, k in per_param(v, ref)[:6]])

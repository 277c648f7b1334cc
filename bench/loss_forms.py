"""One GRPO training step (forward, loss, backward) written in eight loss forms of the same semantics, each timed
eager, eager at its best (``logits_to_keep``; row by row at long context) and under ``backend="replay"``.

Per completion token logp_t (the log-prob of the sampled token), ratio = exp(logp - old_logp),
obj = min(ratio * adv, clamp(ratio, 0.8, 1.28) * adv), loss = -(obj * cm).sum() / cm.sum(). The forms:

    a    slice then gather: logits[:, P-1:-1].float().log_softmax(-1).gather(-1, ids[:, P:, None])
    b    logits_to_keep=C+1, then the same on logits[:, :-1]
    c    every position times a mask: log_softmax(logits[:, :-1]) gathered at ids[:, 1:] over all T-1 positions,
         old log-probs / advantages / mask laid out on [B, T-1] (the completion at positions P-1..T-2, zeros elsewhere)
    d    HF labels with -100 and the model's own loss (mean NLL over the labelled tokens: an objective of its own,
         compared against its own eager)
    d2   F.cross_entropy(..., ignore_index=-100, reduction="none") over all T-1 positions as -logp in the GRPO loss
    e    TRL's selective_log_softmax on the completion slice
    f    verl's logprobs_from_logits on the response slice and masked_mean of -obj
    g    a with an entropy bonus: loss - 0.01 * masked_mean(entropy, cm)       (compared against its own eager)
    h    a with a k3 KL term against reference log-probs: loss + 0.04 * masked_mean(kl, cm)  (its own eager)

Systems per form: ``eager`` as written; ``eager best``, the best a user writes by hand for the same semantics
(the form with ``logits_to_keep=C+1``; at long context also row by row, unpadded, as bench/long_context.py's
eager_rows, and the faster of the two); ``replay`` = torch.compile(step, backend="replay") with default options but
``inner`` (``--inner``). Form c also runs with options lm_head="plain" and lm_head="chunked".

Batch: G rows of one prompt (bench/long_context.py's make_rl_batch: completions of random length, right-padded),
stored old log-probs from a perturbed copy of the model (every parameter + 0.02 std N(0, 1)) and reference
log-probs (form h) from a second one. One batch per run (no new T per step, unlike long_context.py: the point is
the forms, not recompiles). One process; after one warm-up round (compiles; the exactness check runs on its
results) the systems run round-robin per rep (order rotating), medians. Padded eager systems whose predicted
peak (replaycompile.planning.memory) passes --max-gb are skipped ("cap").

    python bench/loss_forms.py --quick                         # smoke run: tiny model, prompt 64, aot_eager
    python bench/loss_forms.py                                 # prompt 1024, the reference model (README)
    python bench/loss_forms.py --prompt 1024 --inner aot_eager --reps 1 --forms a c d
    python bench/loss_forms.py --prompt 16384                  # long_context.py's small model, 256-512 completions

Writes bench/out/loss_forms/loss_forms_<prompt>.md and .json (``--quick``: loss_forms_quick.*).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".torchinductor_cache"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import replaycompile  # noqa: E402,F401 - the backend (also found through its entry point)
from replaycompile.planning import memory  # noqa: E402
# stored rollout log-probs: a perturbed copy of the model (every parameter + scale * its std * N(0, 1)), no_grad
from replaycompile.testing.models import behaviour_logprobs, tiny_config, tiny_model  # noqa: E402

import long_context as lc  # noqa: E402
from common import reference_config  # noqa: E402

LOW, HIGH = 0.8, 1.28  # the clip range (DAPO's asymmetric clip-higher)
ENT_COEF, KL_COEF = 0.01, 0.04
LOSS_TOL, GRAD_TOL = 1e-5, 1e-4  # fp32 exactness bars: loss relative, worst parameter's gradient relative L2


def log(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------- loss pieces

def clipped_objective(logp, old_logp, adv):
    """The per-token clipped surrogate (adv broadcast against logp)."""
    ratio = torch.exp(logp - old_logp)
    return torch.minimum(ratio * adv, ratio.clamp(LOW, HIGH) * adv)


# verl's helpers, written here because verl is not installed: verl/utils/torch_functional.py's
# logprobs_from_logits (its non-flash-attn path, logprobs_from_logits_naive + gather_from_labels) and masked_mean
# (the form of verl releases before masked_sum switched to torch.where(mask.bool(), values, 0.0)).
def logprobs_from_logits(logits, labels):
    logp = F.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, labels.unsqueeze(-1)).squeeze(-1)


def masked_mean(values, mask, axis=None):
    if axis is not None:
        return (values * mask).sum(axis=axis) / mask.sum(axis=axis)
    return (values * mask).sum() / mask.sum()


def _selective_log_softmax():
    from trl.trainer.utils import selective_log_softmax  # trl 1.16: trl/trainer/utils.py
    return selective_log_softmax


# ------------------------------------------------------------------------------------------- the forms, eager
# Every step takes (model, <its batch tensors>) and returns the loss; P and C come from the shapes, so the same
# code runs at every length. The batch tensors each form takes are listed in FORMS.

def form_a(model, ids, am, adv, old_logp, cm):
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = logits[:, P - 1:-1].float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
    obj = clipped_objective(logp, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum()


def form_b(model, ids, am, adv, old_logp, cm):
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
    logp = logits.float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
    obj = clipped_objective(logp, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum()


def form_c(model, ids, am, adv_all, old_all, mask_all):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp_all = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    obj_all = clipped_objective(logp_all, old_all, adv_all)
    return -(obj_all * mask_all).sum() / mask_all.sum()


def form_d(model, ids, am, labels):
    return model(input_ids=ids, attention_mask=am, labels=labels, use_cache=False).loss


def form_d2(model, ids, am, adv_all, old_all, mask_all, labels):
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    V = logits.shape[-1]
    nll = F.cross_entropy(logits[:, :-1].float().reshape(-1, V), labels[:, 1:].reshape(-1), ignore_index=-100,
                          reduction="none").view(labels.shape[0], -1)
    obj_all = clipped_objective(-nll, old_all, adv_all)
    return -(obj_all * mask_all).sum() / mask_all.sum()


def form_e(model, ids, am, adv, old_logp, cm):
    selective_log_softmax = _selective_log_softmax()
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = selective_log_softmax(logits[:, P - 1:-1], ids[:, P:])
    obj = clipped_objective(logp, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum()


def form_f(model, ids, am, adv, old_logp, cm):
    response_length = old_logp.shape[1]
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    log_prob = logprobs_from_logits(logits[:, -response_length - 1:-1], ids[:, -response_length:])
    obj = clipped_objective(log_prob, old_logp, adv[:, None])
    return masked_mean(-obj, cm)


def form_g(model, ids, am, adv, old_logp, cm):
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logps = logits[:, P - 1:-1].float().log_softmax(-1)
    logp = logps.gather(-1, ids[:, P:, None]).squeeze(-1)
    entropy = -(logps.exp() * logps).sum(-1)
    obj = clipped_objective(logp, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum() - ENT_COEF * masked_mean(entropy, cm)


def form_h(model, ids, am, adv, old_logp, cm, ref_logp):
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False).logits
    logp = logits[:, P - 1:-1].float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
    obj = clipped_objective(logp, old_logp, adv[:, None])
    d = ref_logp - logp
    kl = torch.exp(d) - d - 1
    return -(obj * cm).sum() / cm.sum() + KL_COEF * masked_mean(kl, cm)


# ------------------------------------------------------------- each form at its best by hand: logits_to_keep
# Forms a and c are computed best by form b; the others keep their own style on the kept logits.

def form_d_keep(model, ids, am, labels_c):
    C = labels_c.shape[1]
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
    V = logits.shape[-1]
    return F.cross_entropy(logits.float().reshape(-1, V), labels_c.reshape(-1), ignore_index=-100)


def form_d2_keep(model, ids, am, adv, old_logp, cm, labels_c):
    C = old_logp.shape[1]
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
    V = logits.shape[-1]
    nll = F.cross_entropy(logits.float().reshape(-1, V), labels_c.reshape(-1), ignore_index=-100,
                          reduction="none").view(labels_c.shape)
    obj = clipped_objective(-nll, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum()


def form_e_keep(model, ids, am, adv, old_logp, cm):
    selective_log_softmax = _selective_log_softmax()
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
    logp = selective_log_softmax(logits, ids[:, P:])
    obj = clipped_objective(logp, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum()


def form_f_keep(model, ids, am, adv, old_logp, cm):
    response_length = old_logp.shape[1]
    logits = model(input_ids=ids, attention_mask=am, use_cache=False,
                   logits_to_keep=response_length + 1).logits[:, :-1]
    log_prob = logprobs_from_logits(logits, ids[:, -response_length:])
    obj = clipped_objective(log_prob, old_logp, adv[:, None])
    return masked_mean(-obj, cm)


def form_g_keep(model, ids, am, adv, old_logp, cm):
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
    logps = logits.float().log_softmax(-1)
    logp = logps.gather(-1, ids[:, P:, None]).squeeze(-1)
    entropy = -(logps.exp() * logps).sum(-1)
    obj = clipped_objective(logp, old_logp, adv[:, None])
    return -(obj * cm).sum() / cm.sum() - ENT_COEF * masked_mean(entropy, cm)


def form_h_keep(model, ids, am, adv, old_logp, cm, ref_logp):
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    logits = model(input_ids=ids, attention_mask=am, use_cache=False, logits_to_keep=C + 1).logits[:, :-1]
    logp = logits.float().log_softmax(-1).gather(-1, ids[:, P:, None]).squeeze(-1)
    obj = clipped_objective(logp, old_logp, adv[:, None])
    d = ref_logp - logp
    kl = torch.exp(d) - d - 1
    return -(obj * cm).sum() / cm.sum() + KL_COEF * masked_mean(kl, cm)


# ------------------------------------------------------------------ row by row (long_context.py's eager_rows)

def rows_step(model, kind, ids, am, adv, old_logp, cm, ref_logp):
    """Each row unpadded (causal SDPA, no mask), ``logits_to_keep`` = its completion + 1, backward per row, so
    the gradients accumulate to the batch's (every objective here is a sum over completion tokens divided by
    their count). ``kind``: "grpo", "nll" (form d), "grpo_ent" (g), "grpo_kl" (h). Runs its own backward."""
    C = old_logp.shape[1]
    P = ids.shape[1] - C
    lens = am.sum(1).tolist()
    denom = float(cm.sum())
    total = torch.zeros(())
    for i, n in enumerate(lens):
        c = n - P
        out = model(input_ids=ids[i:i + 1, :n], use_cache=False, logits_to_keep=c + 1).logits[:, :-1].float()
        logps = out.log_softmax(-1)
        logp = logps.gather(-1, ids[i:i + 1, P:n, None]).squeeze(-1)
        if kind == "nll":
            loss = -logp.sum() / denom
        else:
            loss = -clipped_objective(logp, old_logp[i:i + 1, :c], adv[i]).sum() / denom
            if kind == "grpo_ent":
                loss = loss - ENT_COEF * (-(logps.exp() * logps).sum(-1)).sum() / denom
            elif kind == "grpo_kl":
                d = ref_logp[i:i + 1, :c] - logp
                loss = loss + KL_COEF * (torch.exp(d) - d - 1).sum() / denom
        loss.backward()
        total = total + loss.detach()
        del out, logps, logp, loss
    return total


# ------------------------------------------------------------------------------------------------ registry

# form -> (eager step, its batch tensors, its best-by-hand step, that step's tensors, rows kind, note)
GRPO = ("ids", "am", "adv", "old", "cm")
ALL_POS = ("ids", "am", "adv_all", "old_all", "mask_all")
FORMS = {
    "a": (form_a, GRPO, form_b, GRPO, "grpo", "slice then gather"),
    "b": (form_b, GRPO, None, None, "grpo", "logits_to_keep"),
    "c": (form_c, ALL_POS, form_b, GRPO, "grpo", "all positions times a mask"),
    "d": (form_d, ("ids", "am", "labels"), form_d_keep, ("ids", "am", "labels_c"), "nll",
          "HF labels=-100, model's loss (mean NLL)"),
    "d2": (form_d2, ALL_POS + ("labels",), form_d2_keep, GRPO + ("labels_c",), "grpo",
           "F.cross_entropy(ignore_index=-100) as -logp"),
    "e": (form_e, GRPO, form_e_keep, GRPO, "grpo", "TRL selective_log_softmax"),
    "f": (form_f, GRPO, form_f_keep, GRPO, "grpo", "verl logprobs_from_logits + masked_mean"),
    "g": (form_g, GRPO, form_g_keep, GRPO, "grpo_ent", "a + entropy bonus"),
    "h": (form_h, GRPO + ("ref",), form_h_keep, GRPO + ("ref",), "grpo_kl", "a + k3 KL to reference"),
}
FORM_NAMES = tuple(FORMS)


def _fresh(fn, name):
    """``fn`` with a code object of its own (Dynamo caches per code object; lc._fresh)."""
    return lc._fresh(fn, name)


def compiled(form: str, inner: str, options: dict | None = None, tag: str = ""):
    """The form's eager step under backend="replay" (default options but ``inner`` and ``options``)."""
    fn = FORMS[form][0]
    opts = {"inner": inner, **(options or {})}
    return torch.compile(_fresh(fn, f"replay_{form}{tag}"), backend="replay", options=opts)


# ---------------------------------------------------------------------------------------------------- batch

def _stored_logprobs(model, ids, am, P: int, seed: int):
    """[B, C] completion log-probs of a perturbed copy of ``model`` (replaycompile.testing.models.behaviour_logprobs), each
    row unpadded in a forward of its own (no [T, T] padding mask at long context), zeros at padding as a trainer
    stores them."""
    B, T = ids.shape
    out = torch.zeros(B, T - P)
    for i, n in enumerate(am.sum(1).tolist()):
        out[i, :n - P] = behaviour_logprobs(model, ids[i:i + 1, :n], am[i:i + 1, :n], P, seed=seed)[0]
    return out


def make_batch(model, group: int, prompt: int, cmin: int, cmax: int, seed: int = 0) -> dict:
    """Every tensor any form takes, from one batch (long_context.make_rl_batch: G rows of one prompt, completions
    of cmin..cmax tokens right-padded to T = P + the longest; its synthetic old log-probs are replaced by a
    perturbed model's)."""
    V = model.config.vocab_size
    ids, am, adv, _ = lc.make_rl_batch(group, prompt, cmin, cmax, V, seed)
    B, T = ids.shape
    P = prompt
    C = T - P
    cm = am[:, P:].float()
    old = _stored_logprobs(model, ids, am, P, seed + 1)  # the rollout policy's
    ref = _stored_logprobs(model, ids, am, P, seed + 2)  # the reference policy's (form h)
    mask_all = torch.zeros(B, T - 1)
    mask_all[:, P - 1:] = cm
    old_all = torch.zeros(B, T - 1)
    old_all[:, P - 1:] = old
    adv_all = adv[:, None] * mask_all
    labels = ids.clone()
    labels[am == 0] = -100
    labels[:, :P] = -100
    return dict(ids=ids, am=am, adv=adv, old=old, cm=cm, ref=ref, mask_all=mask_all, old_all=old_all,
                adv_all=adv_all, labels=labels, labels_c=labels[:, P:], P=P, C=C)


# ---------------------------------------------------------------------------------------------------- systems

class System:
    """A timed step (model, batch) -> loss that runs its own backward."""

    def __init__(self, name, label, fn, args=None, rows_kind=None, replay=False, padded=None):
        self.name, self.label, self.fn, self.args = name, label, fn, args
        self.rows_kind, self.replay, self.padded = rows_kind, replay, padded

    def __call__(self, model, b):
        if self.rows_kind is not None:
            return rows_step(model, self.rows_kind, b["ids"], b["am"], b["adv"], b["old"], b["cm"], b["ref"])
        loss = self.fn(model, *[b[k] for k in self.args])
        loss.backward()
        return loss.detach()


def build_systems(forms, args):
    """The systems to time (deduplicated: forms a, b and c share their best, forms of one semantics share rows)
    and per form the names of its eager, best candidates and replay systems."""
    systems, plan = {}, {}
    for f in forms:
        fn, fargs, best, bargs, kind, _ = FORMS[f]
        eager = f"eager:{f}"
        systems[eager] = System(eager, f"eager {f}", fn, fargs, padded="eager_keep" if f == "b" else "eager")
        cands = []
        if best is not None and "keep" in args.best:
            bname = f"eager:{best.__name__.removeprefix('form_')}" if best is not form_b else "eager:b"
            if bname not in systems:
                systems[bname] = System(bname, f"{bname} (logits_to_keep)", best, bargs, padded="eager_keep")
            cands.append(bname)
        elif best is None and "keep" in args.best:
            cands.append(eager)  # form b is its own best
        if "rows" in args.best:
            rname = f"rows:{kind}"
            if rname not in systems:
                systems[rname] = System(rname, f"eager row by row ({kind})", None, rows_kind=kind)
            cands.append(rname)
        rep = f"replay:{f}"
        systems[rep] = System(rep, f"replay {f}", compiled(f, args.inner), FORMS[f][1], replay=True)
        replays = [rep]
        if f == "c" and not args.no_lm_head_rows:
            for head in ("plain", "chunked"):
                n = f"replay:c lm_head={head}"
                systems[n] = System(n, n, compiled("c", args.inner, {"lm_head": head}, f"_{head}"), FORMS["c"][1],
                                    replay=True)
                replays.append(n)
        plan[f] = dict(eager=eager, best=cands, replays=replays)
    return systems, plan


def fits(cfg, sysm: System, b, max_bytes) -> str | None:
    """Why a padded system is skipped (its predicted peak passes the cap), else None."""
    if sysm.padded is None:
        return None
    comps = (b["am"].sum(1) - b["P"]).tolist()
    pred = memory.predict_peak_bytes(cfg, len(comps), b["P"], comps, variant=sysm.padded)
    if sysm.name.startswith("eager:") and sysm.padded == "eager" and sysm.name[6:] in ("c", "d", "d2"):
        pred *= 2  # these read log-softmax at every position: a second [B, T, V] beside the logits
    if pred > max_bytes:
        return f"cap: predicted peak {pred / 2**30:.1f} GiB > --max-gb {max_bytes / 2**30:g}"
    return None


# ---------------------------------------------------------------------------------------------------- running

def grads_of(model):
    return lc.grads_of(model)


def run_one(sysm, model, b):
    for p in model.parameters():
        p.grad = None
    gc.collect()
    t0 = time.perf_counter()
    loss = sysm(model, b)
    return loss, time.perf_counter() - t0


STAT_SHOWN = ("applied", "lm_head_chunked", "tokens_computed", "tokens_in")
STAT_HIDDEN = {"mode", "fallback_reason", "rows", "continued", "recompiles", "attention", "shared_no_grad",
               "recurrent_per_row", "recurrent_tokens_computed", "recurrent_tree_scan", "sparse_layers",
               "dense_layers", "cache_copied", "graph", "graphs", "call"}


def other_stats(st: dict) -> dict:
    """The scalar last_stats() keys beside the shown ones: queries_selected, selected_only_values, graphs_packed
    and whatever counters the backend has added (LM-head rows, masked positions, ...)."""
    return {k: v for k, v in sorted(st.items())
            if k not in STAT_HIDDEN and k not in STAT_SHOWN and v is not None and not isinstance(v, (list, dict))}


def replay_counters():
    from torch._dynamo.utils import counters
    return {"replay": dict(counters["replay"]), "replay_declines": dict(counters["replay_declines"])}


def counters_delta(before, after):
    out = {}
    for grp in after:
        d = {k: v - before.get(grp, {}).get(k, 0) for k, v in after[grp].items()
             if v - before.get(grp, {}).get(k, 0)}
        if d:
            out[grp] = d
    return out


def config_for(args):
    """(model config dict, G, prompt, cmin, cmax, max_position_embeddings, label)."""
    if args.quick:
        cfg, _ = reference_config(True)  # hidden 64, 2 layers, vocab 2000
        return cfg, 8, 64, 8, 16, 4096, "replay_bench quick model"
    if args.prompt >= 8192:
        return dict(lc.MODELS["small"]), 8, args.prompt, 256, 512, lc.MAX_POS, "long_context.py 'small' model"
    cfg, (G, _, cmin, cmax) = reference_config(False)
    return cfg, G, args.prompt, cmin, cmax, max(4096, 2 * args.prompt), "the README's reference model"


def fmt_s(x):
    return "-" if x is None else f"{x:.3f}"


def fmt_x(x):
    return "-" if x is None else f"{x:.2f}x"


def fmt_e(x):
    return "-" if x is None else f"{x:.1e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: tiny model, prompt 64, aot_eager, 1 rep")
    ap.add_argument("--prompt", type=int, default=1024, help="1024 (the reference model) or 16384 (long_context's "
                    "small model, 256-512-token completions)")
    ap.add_argument("--forms", nargs="+", default=list(FORM_NAMES), choices=FORM_NAMES)
    ap.add_argument("--reps", type=int, default=None, help="timed rounds (default 3 at 1K, 2 at 16K, 1 quick)")
    ap.add_argument("--inner", default=None, choices=["inductor", "aot_eager", "eager"],
                    help="replay's inner compiler (default inductor; aot_eager with --quick)")
    ap.add_argument("--best", nargs="+", default=None, choices=["keep", "rows"],
                    help="eager-best candidates (default keep below 8K, keep and rows from 8K)")
    ap.add_argument("--replay-reps", type=int, default=8, help="extra timed rounds of the replay systems alone "
                    "(their medians then cover reps + replay-reps steps)")
    ap.add_argument("--max-gb", type=float, default=6.0, help="skip padded eager systems predicted above this")
    ap.add_argument("--no-lm-head-rows", action="store_true", help="skip form c's lm_head=plain/chunked rows")
    ap.add_argument("--verbose", action="store_true", help="print sorted(last_stats().keys()) and full stats")
    ap.add_argument("--out", default=str(HERE / "out" / "loss_forms"))
    args = ap.parse_args(argv)
    if args.quick:
        args.prompt = 64
    args.inner = args.inner or ("aot_eager" if args.quick else "inductor")
    args.reps = args.reps or (1 if args.quick else 2 if args.prompt >= 8192 else 3)
    args.best = args.best or (["keep", "rows"] if args.prompt >= 8192 else ["keep"])
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    mcfg, G, P, cmin, cmax, max_pos, mlabel = config_for(args)
    torch.manual_seed(0)
    model = tiny_model("qwen3", "sdpa", max_position_embeddings=max_pos, **mcfg)
    cfg = tiny_config("qwen3", "sdpa", max_position_embeddings=max_pos, **mcfg)
    t_start = time.perf_counter()
    b = make_batch(model, G, P, cmin, cmax, seed=0)
    tag = "quick" if args.quick else str(args.prompt)
    log(f"# loss forms: Qwen3-shaped {mcfg} ({mlabel}), fp32, G={G}, prompt {P}, completions {cmin}-{cmax} "
        f"(T={b['ids'].shape[1]}, C={b['C']}), replay inner={args.inner}, best={args.best}, reps={args.reps}, "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    log("# old/ref log-probs: replaycompile.testing.models.behaviour_logprobs (perturbed copies, 0.02 std, seeds 1 and 2)")
    systems, plan = build_systems(args.forms, args)
    skipped = {}
    for name, s in systems.items():
        why = fits(cfg, s, b, args.max_gb * 2**30)
        if why:
            skipped[name] = why
            log(f"# {name}: skipped ({why})")
    run = [n for n in systems if n not in skipped]

    # warm-up round: compiles, and gives each system's loss, gradients and (replay) stats for the checks
    results = {n: dict(times=[], first_s=None) for n in run}
    losses, grads = {}, {}
    printed_keys = False
    for n in run:
        s = systems[n]
        before_call = lc.replay_call()
        before_cnt = replay_counters()
        try:
            loss, dt = run_one(s, model, b)
        except Exception as e:  # noqa: BLE001 - report it, do not stop the run
            log(f"# warm-up {n}: ERROR {type(e).__name__}: {str(e)[:400]}")
            results[n]["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            continue
        losses[n], grads[n] = loss, grads_of(model)
        results[n]["first_s"] = dt
        results[n]["loss"] = loss.item()
        msg = f"# warm-up {n}: {dt:.1f} s, loss {loss.item():.8f}"
        if s.replay:
            st = lc.fresh_stats(before_call)
            delta = counters_delta(before_cnt, replay_counters())
            results[n]["counters"] = delta
            if st is None:
                results[n]["stats"] = None
                msg += ", no replay stats recorded (Dynamo ran it without the backend?)"
            else:
                keep = {k: st.get(k) for k in STAT_SHOWN + ("fallback_reason",)}
                keep["other"] = other_stats(st)
                keep["graphs"] = [{k: g.get(k) for k in ("graph", "applied", "fallback_reason", "tokens_computed")}
                                  for g in st.get("graphs") or []]
                results[n]["stats"] = keep
                msg += (f", applied={st['applied']}, tokens {st.get('tokens_computed')}/{st.get('tokens_in')}, "
                        f"lm_head_chunked={st.get('lm_head_chunked')}, other={keep['other']}")
                if not st["applied"]:
                    msg += f", reason={st.get('fallback_reason')!r}"
                if args.verbose and not printed_keys:
                    log(f"#   sorted(last_stats().keys()) = {sorted(st.keys())}")
                    printed_keys = True
                if args.verbose:
                    log(f"#   last_stats() = {st}")
            log(msg)
            log(f"#   counters (this step): {delta}")
        else:
            log(msg)

    # timed rounds, interleaved, the order rotating
    live = [n for n in run if "error" not in results[n]]
    for rep in range(args.reps):
        order = live[rep % len(live):] + live[:rep % len(live)] if live else []
        for n in order:
            before_call = lc.replay_call()
            loss, dt = run_one(systems[n], model, b)
            results[n]["times"].append(dt)
            extra = ""
            if systems[n].replay:
                st = lc.fresh_stats(before_call)
                if st is None or not st["applied"]:
                    results[n].setdefault("unpacked_reps", 0)
                    results[n]["unpacked_reps"] += 1
                    extra = " (NOT PACKED)"
            log(f"# rep {rep + 1}/{args.reps} {n}: {dt:.3f} s{extra}")
    # the replay steps take under a second where the eager ones take several: extra rounds of the replay systems
    # alone (interleaved among themselves) make their medians comparable across forms without timing eager more
    rlive = [n for n in live if systems[n].replay]
    for rep in range(args.replay_reps):
        order = rlive[rep % len(rlive):] + rlive[:rep % len(rlive)] if rlive else []
        for n in order:
            _, dt = run_one(systems[n], model, b)
            results[n]["times"].append(dt)
        log(f"# replay round {rep + 1}/{args.replay_reps}: " + ", ".join(
            f"{n.split(':', 1)[1]} {results[n]['times'][-1]:.3f}" for n in order))
    for n in live:
        results[n]["median_s"] = statistics.median(results[n]["times"]) if results[n]["times"] else None

    # FLOP model (bench/harness.py's flop_counts): padded, kept, rows and the ideal (distinct tokens, the head on
    # the distinct completion rows)
    try:
        from harness import flop_counts
        fl = flop_counts(cfg, (b["ids"], b["am"], b["adv"], b["old"]))
    except Exception as e:  # noqa: BLE001
        log(f"# FLOP model unavailable: {type(e).__name__}: {e}")
        fl = None

    def flops_of(name):
        if fl is None or name is None:
            return None
        if name.startswith("rows:"):
            return fl["rows"]
        s = systems[name]
        return fl["padded_keep"] if s.padded == "eager_keep" else fl["padded_full"]

    # the table
    head = ("| form | eager s | eager best s (which) | replay s | replay vs eager | replay vs best | FLOP ideal "
            "(vs eager / vs best) | loss rel vs eager | worst grad rel | exact | applied | lm_head_chunked | "
            "tokens computed / in | other stats |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    rows = []
    for f in args.forms:
        p = plan[f]
        med = lambda n: results.get(n, {}).get("median_s")  # noqa: E731
        eager_s = med(p["eager"])
        bests = [(med(n), n) for n in p["best"] if med(n) is not None]
        best_s, best_n = min(bests) if bests else (None, None)
        # the exactness reference: the form's eager as written, else its best (same semantics)
        ref = p["eager"] if p["eager"] in losses else best_n
        for rn in p["replays"]:
            r = results.get(rn, {})
            rs = r.get("median_s")
            chk = {}
            if ref is not None and rn in losses:
                chk = lc.compare(grads[rn], grads[ref], losses[rn], losses[ref])
            st = r.get("stats") or {}
            label = f + ("" if rn == f"replay:{f}" else " " + rn.split(" ", 1)[1])
            fe, fb = flops_of(p["eager"] if p["eager"] in results else None), flops_of(best_n)
            ideal = fl["ideal"] if fl else None
            flop_txt = (f"{fe / ideal:.2f}x" if fe and ideal else "-") + " / " + \
                (f"{fb / ideal:.2f}x" if fb and ideal else "-")
            exact = (chk.get("loss_rel", 1) <= LOSS_TOL and chk.get("grad_rel_worst", 1) <= GRAD_TOL) if chk else None
            which = "-" if best_n is None else "rows" if best_n.startswith("rows:") else \
                "keep " + best_n.split(":", 1)[1]
            eager_txt = fmt_s(eager_s) if p["eager"] not in skipped else "(cap)"
            if "error" in results.get(p["eager"], {}):
                eager_txt = "error"
            rtxt = fmt_s(rs) if "error" not in r else "error"
            if r.get("unpacked_reps"):
                rtxt += f" ({r['unpacked_reps']} unpacked)"
            other = st.get("other") or {}
            row = dict(form=label, eager_s=eager_s, best_s=best_s, best=best_n, replay_s=rs,
                       vs_eager=(eager_s / rs) if eager_s and rs else None,
                       vs_best=(best_s / rs) if best_s and rs else None,
                       flop_ideal_vs_eager=(fe / ideal) if fe and ideal else None,
                       flop_ideal_vs_best=(fb / ideal) if fb and ideal else None,
                       reference=ref, exact=exact, stats=st, counters=r.get("counters"), **chk)
            rows.append(row)
            lines.append(
                f"| {label} | {eager_txt} | {fmt_s(best_s)} ({which}) | {rtxt} | {fmt_x(row['vs_eager'])} | "
                f"{fmt_x(row['vs_best'])} | {flop_txt} | {fmt_e(chk.get('loss_rel'))} | "
                f"{fmt_e(chk.get('grad_rel_worst'))} | {'-' if exact is None else 'yes' if exact else 'NO'}"
                f"{'' if ref in (None, p['eager']) else ' (vs ' + ref.split(':')[0] + ')'} | "
                f"{st.get('applied', '-')} | {st.get('lm_head_chunked', '-')} | "
                f"{st.get('tokens_computed', '-')} / {st.get('tokens_in', '-')} | "
                f"{', '.join(f'{k}={v}' for k, v in other.items()) or '-'} |")
    notes = [
        "",
        f"Qwen3-shaped {mcfg}, fp32, G={G}, prompt {P}, completions {cmin}-{cmax} (T={b['ids'].shape[1]}); "
        f"replay inner={args.inner}; medians of {args.reps} interleaved reps after a warm-up round (replay: "
        f"{args.reps} + {args.replay_reps} more rounds of the replay systems alone); "
        f"torch {torch.__version__}, {torch.get_num_threads()} threads.",
        "eager best: the form with logits_to_keep=C+1 (keep; forms a and c: form b) and/or eager row by row "
        "(rows), the faster; loss/grad rel: replay against the form's eager as written (its best where eager is "
        "capped); exact: loss rel <= 1e-5 and worst parameter grad rel <= 1e-4. Forms d, g, h have objectives of "
        "their own. FLOP ideal: bench/harness.py's flop_counts (distinct tokens, the head on the distinct "
        "completion rows) against the padded/kept/rows step.",
    ]
    if fl:
        notes.append(f"tokens in {fl['tokens_in']}, distinct {fl['tokens_unique']}, distinct completion head rows "
                     f"{fl['head_rows']}.")
    for n, why in skipped.items():
        notes.append(f"{n}: skipped ({why}).")
    for n in run:
        if "error" in results[n]:
            notes.append(f"{n}: error in the warm-up step: {results[n]['error']}")
    fallbacks = [r for r in rows if r["stats"] and r["stats"].get("applied") is False]
    for r in fallbacks:
        notes.append(f"replay {r['form']} fell back: {r['stats'].get('fallback_reason')}")
    table = "\n".join(lines + notes + [""] + target_lines(rows, P))
    log("")
    log(table)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"loss_forms_{tag}.md").write_text(table + "\n")
    res = dict(config=mcfg, group=G, prompt=P, cmin=cmin, cmax=cmax, T=int(b["ids"].shape[1]), inner=args.inner,
               reps=args.reps, best=args.best, torch=torch.__version__, flops=fl, rows=rows,
               systems={n: {k: v for k, v in r.items()} for n, r in results.items()}, skipped=skipped,
               wall_s=time.perf_counter() - t_start)
    (out / f"loss_forms_{tag}.json").write_text(json.dumps(res, indent=1, default=str))
    log(f"# wrote {out / f'loss_forms_{tag}.md'} and .json; total {res['wall_s'] / 60:.1f} min")
    return 0


def target_lines(rows: list, prompt: int) -> list:
    """Issue 29's targets, each as a line with its figures: MET / NOT MET / not measured."""
    out = ["Targets (issue 29):"]
    by = {r["form"]: r for r in rows}
    defaults = [r for r in rows if " " not in r["form"] and r.get("replay_s")]

    def line(desc, ok, figures):
        state = "not measured" if ok is None else "MET" if ok else "NOT MET"
        out.append(f"- {desc}: {figures} -> {state}")
    if defaults:
        fastest = min(defaults, key=lambda r: r["replay_s"])
        for r in defaults:
            ratio = r["replay_s"] / fastest["replay_s"]
            line(f"form {r['form']} within 15% of the fastest form's replay time ({fastest['form']}, "
                 f"{fastest['replay_s']:.3f} s)", ratio <= 1.15, f"{r['replay_s']:.3f} s, {ratio:.2f}x")
    for f in sorted({r["form"].split(" ")[0] for r in rows}):
        opts = [r for r in rows if r["form"].startswith(f + " ") and r.get("replay_s")]
        if f in by and by[f].get("replay_s") and opts:
            best_opt = min(opts, key=lambda r: r["replay_s"])
            line(f"form {f} with the defaults no slower than with any option ({best_opt['form']})",
                 by[f]["replay_s"] <= best_opt["replay_s"] * 1.05,
                 f"{by[f]['replay_s']:.3f} s vs {best_opt['replay_s']:.3f} s (5% noise allowance)")
    c = by.get("c")
    if prompt < 8192 and c:
        line("reference step, mask-multiplied loss (form c): >= 10x eager as written",
             None if c.get("vs_eager") is None else c["vs_eager"] >= 10, fmt_x(c.get("vs_eager")))
        keep = c["best_s"] / c["replay_s"] if c.get("best_s") and c.get("replay_s") and \
            str(c.get("best")).startswith("eager") else None
        line("reference step, mask-multiplied loss (form c): >= 3.5x eager logits_to_keep",
             None if keep is None else keep >= 3.5, fmt_x(keep))
    if prompt >= 8192:
        for f in ("c", "d"):
            r = by.get(f)
            if r is None:
                continue
            rows_best = str(r.get("best") or "").startswith("rows:")
            v = r.get("vs_best") if rows_best else None
            line(f"{prompt // 1024}K prompt, form {f}: >= 5x eager row by row with logits_to_keep, exact",
                 None if v is None else (v >= 5 and bool(r.get("exact"))), f"{fmt_x(v)}, exact={r.get('exact')}")
    bad = [r["form"] for r in rows if r.get("exact") is False]
    line("loss and every gradient equal eager's in every form (fp32 rel 1e-5 / 1e-4)",
         None if not rows else not bad, "not exact: " + ", ".join(bad) if bad else f"{len(rows)} rows exact")
    return out


def report(path: str) -> int:
    """Print the targets of a saved run (its json)."""
    res = json.loads(pathlib.Path(path).read_text())
    print("\n".join(target_lines(res["rows"], res["prompt"])))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        sys.exit(report(sys.argv[2]))
    sys.exit(main())

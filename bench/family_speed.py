"""The GRPO reference step on the 2026 families that need more than the classic rules (issue 30's speed lines):
Qwen3.5 (Gated DeltaNet hybrid), DeepSeek-V3 (MLA + group-limited MoE), Nemotron-H (Mamba-2 hybrid) and GLM-4.5
(group-limited MoE), each at the reference shape (hidden 256, 4 layers, vocab 32000, G=8 rows of a 1024-token
prompt, 64-128-token completions; common.reference_config), the family's own layer kinds scaled to it.

Per family, in one process, interleaved, medians of ``--reps``: eager as written (full logits, then the completion
positions), eager ``logits_to_keep`` (the strongest eager baseline: TRL's), and ``torch.compile(step,
backend="replay")`` with no options (inner inductor). Exactness of replay against eager as written: the loss and
the worst relative gradient error over the parameters. The stats line says what ran packed (layers per row, on
the prefix tree) and the tokens computed against the tokens in.

    python bench/family_speed.py                      # the four families
    python bench/family_speed.py --families qwen3_5_text --reps 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import replaycompile  # noqa: E402
from common import build_variants, make_batch, reference_config, with_old_logprobs  # noqa: E402

KEEP = "eager logits_to_keep (TRL baseline)"
EAGER = "eager (full logits, as written)"
REPLAY = "replay (defaults)"


def family_config(family: str, base: dict) -> dict:
    """The reference shape (``base``: hidden 256, 4 layers, 4 heads / 2 KV heads of 64, MLP 768) in ``family``'s
    own layer kinds: released ratios of recurrent to attention layers, 8 experts top-2 half as wide (a token's
    active MLP FLOPs equal the dense model's), MLA's latent and rope sizes in the released proportions."""
    moe = dict(n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=base["intermediate_size"] // 2,
               n_group=2, topk_group=1, first_k_dense_replace=1, n_shared_experts=1, norm_topk_prob=True)
    if family == "qwen3_5_text":  # 3 Gated DeltaNet : 1 attention, as released
        return dict(base, num_hidden_layers=4, layer_types=["linear_attention"] * 3 + ["full_attention"],
                    linear_conv_kernel_dim=4,
                    linear_key_head_dim=64, linear_value_head_dim=64, linear_num_key_heads=2,
                    linear_num_value_heads=4)
    if family == "deepseek_v3":  # MLA in every layer, the first dense, the rest group-limited MoE
        return dict(base, **moe, num_key_value_heads=base["num_attention_heads"], q_lora_rank=128,
                    kv_lora_rank=128, qk_rope_head_dim=32, qk_nope_head_dim=32, v_head_dim=64, head_dim=32)
    if family == "glm4_moe":
        return dict(base, **moe)
    if family == "nemotron_h":  # Mamba-2, attention, Mamba-2, MLP
        return dict(base, num_hidden_layers=4, hybrid_override_pattern="M*M-", mamba_num_heads=8, mamba_head_dim=64,
                    ssm_state_size=64, n_groups=1, chunk_size=128, conv_kernel=4)
    raise ValueError(f"unknown family {family!r}; choose from {FAMILIES}")


FAMILIES = ("qwen3_5_text", "deepseek_v3", "nemotron_h", "glm4_moe")


def build(family: str, cfg: dict):
    from transformers import AutoConfig, AutoModelForCausalLM

    c = AutoConfig.for_model(family, **cfg, max_position_embeddings=4096, pad_token_id=0, bos_token_id=1,
                             eos_token_id=2)
    c._attn_implementation = "sdpa"
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(c).float().train()


def step(fn, model, batch):
    for p in model.parameters():
        p.grad = None
    loss = fn(model, *batch)
    loss.backward()
    return loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}


def run_family(family: str, reps: int, quick: bool) -> dict:
    base, (G, P, cmin, cmax) = reference_config(quick)
    model = build(family, family_config(family, base))
    batch = with_old_logprobs(model, make_batch(G, P, cmin, cmax, base["vocab_size"], share=True), P)
    variants = build_variants(model, P, batch[0].shape[1] - P)
    systems = {EAGER: variants[EAGER], KEEP: variants[KEEP],
               REPLAY: torch.compile(variants[EAGER], backend="replay")}
    print(f"[{family}] compiling and checking ...", file=sys.stderr, flush=True)
    ref = step(systems[EAGER], model, batch)
    t0 = time.perf_counter()
    got = step(systems[REPLAY], model, batch)  # the first call compiles
    compile_s = time.perf_counter() - t0
    st = replaycompile.last_stats() or {}
    loss_err = abs(float(got[0]) - float(ref[0])) / max(abs(float(ref[0])), 1e-12)
    errs = {k: float((got[1][k] - ref[1][k]).norm() / ref[1][k].norm().clamp_min(1e-12)) for k in ref[1]}
    worst = max(errs, key=errs.get)
    grad_err = errs[worst]
    noise = None
    if grad_err > 1e-4:
        # the layer's own rounding: plain inductor (no replay) against eager, on the same parameter
        plain = step(torch.compile(variants[EAGER]), model, batch)
        noise = float((plain[1][worst] - ref[1][worst]).norm() / ref[1][worst].norm().clamp_min(1e-12))
    times = {name: [] for name in systems}
    for r in range(reps):
        for name, fn in systems.items():  # interleaved
            t0 = time.perf_counter()
            step(fn, model, batch)
            times[name].append(time.perf_counter() - t0)
        print(f"[{family}] rep {r + 1}/{reps}: " + ", ".join(f"{k.split(' (')[0]} {v[-1]:.2f}s"
                                                              for k, v in times.items()), file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    return dict(family=family, med=med, compile_s=compile_s, loss_err=loss_err, grad_err=grad_err, worst=worst,
                noise=noise,
                applied=st.get("applied"), reason=st.get("fallback_reason"),
                per_row=st.get("recurrent_per_row"), tree_scan=st.get("recurrent_tree_scan"),
                tokens=(st.get("tokens_computed"), st.get("tokens_in")), rows=G * batch[0].shape[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the quick reference shape (smoke runs)")
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    rows = [run_family(f, args.reps, args.quick) for f in args.families.split(",")]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, medians of {args.reps} interleaved reps")
    print(f"| family | eager as written s | eager keep s | replay s | vs eager | vs keep | loss rel | worst grad rel "
          f"| packed | tokens computed/in | per row | prefix tree |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = []
    for r in rows:
        m = r["med"]
        xe, xk = m[EAGER] / m[REPLAY], m[KEEP] / m[REPLAY]
        print(f"| {r['family']} | {m[EAGER]:.3f} | {m[KEEP]:.3f} | {m[REPLAY]:.3f} | {xe:.2f}x | {xk:.2f}x | "
              f"{r['loss_err']:.1e} | {r['grad_err']:.1e} | {r['applied']} | {r['tokens'][0]}/{r['tokens'][1]} | "
              f"{', '.join(r['per_row'] or []) or '-'} | {', '.join(r['tree_scan'] or []) or '-'} |")
        # exact: every gradient within 1e-4, or within the parameter's own eager-vs-inductor noise (x2)
        exact = r["loss_err"] <= 1e-4 and (r["grad_err"] <= 1e-4 or (r["noise"] is not None
                                                                     and r["grad_err"] <= 2 * r["noise"]))
        ok = xe >= 4 and xk > 1 and r["applied"] and exact
        if r["noise"] is not None:
            lines.append(f"- {r['family']}: worst gradient `{r['worst']}` {r['grad_err']:.1e} against eager; plain "
                         f"inductor (no replay) against eager on it: {r['noise']:.1e}")
        lines.append(f"- {r['family']}: >= 4x eager as written and faster than eager logits_to_keep, exact: "
                     f"{xe:.2f}x / {xk:.2f}x, loss {r['loss_err']:.1e}, grad {r['grad_err']:.1e} -> "
                     f"{'MET' if ok else 'NOT MET'}" + ("" if r["applied"] else f" (not packed: {r['reason']})"))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

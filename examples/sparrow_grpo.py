"""An end-to-end GRPO run with Sparrow rollouts and a replay-compiled training step, on a recall task a tiny model
learns on a CPU in minutes.

    python examples/sparrow_grpo.py                     # ~40 steps, a few minutes on 2 cores; plots in the out dir
    python examples/sparrow_grpo.py --steps 3 --quick   # what the test suite runs

The task (``replaycompile.retrieval``): a context of filler tokens with (key, value) pairs planted in it ends with
a key; the completion must give its value, and every later key the policy emits must be followed by that key's
value. The reward is the share of those answers that are right (exact match, checkable).

The policy is the hand-set recall model with its value readout weakened (``--readout``): the circuit that finds
the answer exists, but the LM head barely trusts it, so at temperature 1 most answers are wrong. RL sharpens the
readout; the reward rises. This is what RL post-training does to a pretrained model's latent skill, in small.

Each step:
  1. rollouts: G completions per prompt, decoded **sparsely** with the Sparrow schedule (``rollout.generate``);
  2. the training step: the TIS-corrected GRPO loss (``sparrow.tis_policy_loss``) over the batch, compiled with
     ``backend="replay"``: the G rows of a prompt share its context, so it is computed once (the stats say so);
  3. the acceptance monitor estimates per-bin p5 from the dense and rollout log-probs of the sampled tokens, and
     the schedule controller raises pages where a bin falls below the target and lowers them slowly where the
     margin is wide; a page change is graph data, no recompile;
  4. optionally (``--distill``) DistillSparse trains LoRA adapters that pull the sparse rollout policy toward the
     dense one.

Per step it logs reward, p5 per bin, pages per bin, rollout time, train time and tokens computed; at the end it
writes ``metrics.json`` and plots (``--out``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import pathlib
import sys
import time

import torch

import replaycompile
from replaycompile import rollout, sparrow
from replaycompile.retrieval import _ANS, KEYS, VALUES, recall_sequences, retrieval_model

log = logging.getLogger("sparrow_grpo")


def weakened_recall_model(readout: float, noise: float = 1.0, seed: int = 0):
    """The recall model with its value readout scaled by ``readout`` (<1: a weak, improvable skill)."""
    model = retrieval_model(noise=noise, seed=seed)
    with torch.no_grad():
        for v in VALUES:
            model.lm_head.weight[v, _ANS + v] *= readout
    return model


def recall_prompts(n: int, context: int, seed: int):
    """``n`` prompts of ``context + 1`` tokens ending in a planted key, and each prompt's key -> value map."""
    seqs, is_query = recall_sequences(n, context, window=16, seed=seed)
    assert bool(is_query[:, context].all())  # the window starts with a query: the prompt ends in a key
    prompts = seqs[:, :context + 1]
    pairs = []
    key_set, val_set = set(KEYS), set(VALUES)
    for row in prompts.tolist():
        planted = {}
        for a, b in zip(row[:-1], row[1:]):
            if a in key_set and b in val_set and a not in planted:
                planted[a] = b
        pairs.append(planted)
    return prompts, pairs


def recall_reward(completions: torch.Tensor, answers: torch.Tensor, pairs: list, group: int) -> torch.Tensor:
    """Per row, the share of right answers: the first completion token answers the prompt's last key
    (``answers``: its planted value, per prompt); every later emitted key that was planted must be followed by
    its value."""
    rows = []
    for i, row in enumerate(completions.tolist()):
        planted = pairs[i // group]
        right = int(row[0] == int(answers[i // group]))
        asked = 1
        for j in range(1, len(row)):
            if row[j - 1] in planted:
                asked += 1
                right += int(row[j] == planted[row[j - 1]])
        rows.append(right / asked)
    return torch.tensor(rows)


def completion_logprobs(model, sequences: torch.Tensor, prompt_len: int) -> torch.Tensor:
    logits = model(input_ids=sequences, use_cache=False).logits
    return logits[:, prompt_len - 1:-1].float().log_softmax(-1).gather(-1, sequences[:, prompt_len:, None])[..., 0]


def pages_per_bin(schedule, n_bins: int) -> list[int]:
    return [schedule.pages[min(b, len(schedule.pages) - 1)] for b in range(n_bins)]


def run(args) -> dict:
    torch.manual_seed(args.seed)
    model = weakened_recall_model(args.readout)
    model.train()
    n_bins = (max(args.contexts) + args.new_tokens) // args.bin_tokens + 1  # the bins the rollouts reach

    # the starting schedule: calibrated on recall sequences the run never trains on, or fixed
    if args.calibrate:
        # every bin the rollouts reach, 2 windows of 32 tokens per bin in 2 rows (128 tokens: enough for the p5's
        # lower bound at 0.9), and a third row held out
        # (queries planted in every window calibrate measures: a window of fillers alone measures nothing)
        n, first = n_bins * args.bin_tokens, 4 * 24 + 32  # recall_sequences plants 24 pairs before its windows
        wins = sparrow.calibration_windows(n, args.bin_tokens, 32, per_bin=2, min_start=first)
        cal_seqs, _ = recall_sequences(3, n - 32, window=32, windows=wins, seed=10_000 + args.seed)
        cal = sparrow.calibrate(model, cal_seqs, args.candidates, args.target, bin_tokens=args.bin_tokens,
                                window=32, windows_per_bin=2, min_start=first,
                                schedule=sparrow.SparrowSchedule(pages=(0,), bucket_tokens=args.bin_tokens),
                                holdout=1 / 3, progress=False)
        schedule = cal.schedule
        log.info("calibrated schedule: pages %s per %d-token bin; held out:\n  %s", list(schedule.pages),
                 args.bin_tokens, "\n  ".join(cal.held_out_rows()))
    else:
        schedule = sparrow.SparrowSchedule(pages=(args.start_pages,), bucket_tokens=args.bin_tokens)
    monitor = sparrow.AcceptanceMonitor(target=args.target, bin_tokens=args.bin_tokens)
    controller = sparrow.ScheduleController(schedule, target=args.target) \
        if hasattr(sparrow, "ScheduleController") else None
    distill = sparrow.DistillSparse(model, schedule) if args.distill else None
    policy = distill.model if distill else model
    opt = torch.optim.Adam([p for n, p in policy.named_parameters() if p.requires_grad and "lora_" not in n],
                           lr=args.lr)
    # the policy's log-probs are the compiled part (the model's forward and, through it, its backward); the
    # loss is a few elementwise ops on [B, L] (its float() diagnostics would break the graph anyway)
    logprobs_fn = torch.compile(completion_logprobs, backend="replay", options={"inner": args.inner})
    gen = torch.Generator().manual_seed(args.seed)
    history = []
    try:
        from tqdm import tqdm
        steps = tqdm(range(args.steps), desc="sparrow-grpo", file=sys.stderr, disable=args.no_progress)
    except ImportError:  # tqdm comes with transformers; a bare install still runs
        steps = range(args.steps)
    for step in steps:
        context = args.contexts[step % len(args.contexts)]
        prompts, pairs = recall_prompts(args.prompts, context, seed=args.seed * 100_003 + step)
        answers = torch.tensor([pairs[i][int(prompts[i, -1])] for i in range(args.prompts)])
        rows = prompts.repeat_interleave(args.group, 0)
        t0 = time.perf_counter()
        with (distill.sparse() if distill else contextlib.nullcontext()):
            r = rollout.generate(policy, rows, max_new_tokens=args.new_tokens, schedule=schedule,
                                 temperature=1.0, generator=gen, progress=False)
        t1 = time.perf_counter()
        p = r.prompt_length
        comp = r.sequences[:, p:]
        reward = recall_reward(comp, answers, pairs, args.group)
        grouped = reward.view(args.prompts, args.group)
        adv = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)).reshape(-1)
        mask = r.completion_mask.float()
        with (distill.dense() if distill else contextlib.nullcontext()):
            logp = logprobs_fn(policy, r.sequences, p)
            st = replaycompile.last_stats() or {}
            # one on-policy update per batch (TRL's num_iterations=1): the old policy is the current one
            dense_logp = logp.detach()
            loss, loss_stats = sparrow.tis_policy_loss(logp, dense_logp, r.logprobs, adv, mask)
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t2 = time.perf_counter()
        rows_acc = monitor.update(dense_logp, r.logprobs, mask, p)
        decisions = controller.update(rows_acc, step=step) if controller else []
        d_stats = distill.step(r.sequences, torch.ones_like(r.sequences), p, mask, adv, r.logprobs, dense_logp) \
            if distill else {}
        rec = dict(step=step, context=context, loss=float(loss.detach()), reward=float(reward.mean()),
                   p5={r_["bin_start"]: r_["p5"] for r_ in rows_acc},
                   p5_lower={r_["bin_start"]: r_.get("p5_lower") for r_ in rows_acc},
                   count={r_["bin_start"]: r_["count"] for r_ in rows_acc},
                   pages=pages_per_bin(schedule, n_bins), decisions=[d.to_dict() for d in decisions],
                   rollout_s=t1 - t0, train_s=t2 - t1, tokens_in=st.get("tokens_in"),
                   tokens_computed=st.get("tokens_computed"), packed=st.get("applied"), **loss_stats, **{f"distill_{k}": v
                                                                                             for k, v in d_stats.items()})
        history.append(rec)
        p5s = " ".join(f"{b}:{v:.3f}" for b, v in rec["p5"].items())
        msg = (f"step {step:3d} ctx {context}: reward {rec['reward']:.3f} p5 [{p5s}] pages {rec['pages']} "
               f"rollout {rec['rollout_s']:.1f}s train {rec['train_s']:.1f}s tokens {rec['tokens_computed']}/"
               f"{rec['tokens_in']}{'' if rec['packed'] else ' NOT PACKED: ' + str(st.get('fallback_reason'))}")
        if hasattr(steps, "write"):
            steps.write(msg, file=sys.stderr)
            steps.set_postfix(reward=f"{rec['reward']:.2f}")
        else:
            print(msg, file=sys.stderr)
    summary = summarise(history, args)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(dict(args=vars(args), summary=summary, history=history), indent=1,
                                                 default=str))
    summary["plots"] = plot(history, args, out)
    print(json.dumps(summary, indent=1), flush=True)
    return dict(summary=summary, history=history, schedule=schedule, controller=controller)


def summarise(history: list, args) -> dict:
    k = max(1, len(history) // 4)
    first = sum(h["reward"] for h in history[:k]) / k
    last = sum(h["reward"] for h in history[-k:]) / k
    below = [(h["step"], b, v) for h in history for b, v in h["p5"].items() if v < args.target]
    return dict(steps=len(history), reward_first_quarter=first, reward_last_quarter=last,
                reward_rise=last - first, min_p5=min((v for h in history for v in h["p5"].values()), default=None),
                steps_with_a_bin_below_target=len({s for s, _, _ in below}), target=args.target,
                final_pages=history[-1]["pages"] if history else None,
                packed_every_step=all(h["packed"] for h in history),
                rollout_s=sum(h["rollout_s"] for h in history), train_s=sum(h["train_s"] for h in history))


def plot(history: list, args, out: pathlib.Path) -> list[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed (pip install -e '.[bench]'): no plots written")
        return []
    steps = [h["step"] for h in history]
    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    ax[0].plot(steps, [h["reward"] for h in history])
    ax[0].set(title="reward (share of right answers)", xlabel="step")
    bins = sorted({b for h in history for b in h["p5"]})
    for b in bins:
        xs = [h["step"] for h in history if b in h["p5"]]
        ax[1].plot(xs, [h["p5"][b] for h in history if b in h["p5"]], marker=".", label=f"KV {b}+")
        ax[2].plot(steps, [h["pages"][b // args.bin_tokens] for h in history], label=f"KV {b}+")
    ax[1].axhline(args.target, color="k", ls="--", lw=0.8)
    ax[1].set(title="acceptance p5 per bin (monitor)", xlabel="step")
    ax[2].set(title="pages per bin (controller)", xlabel="step")
    ax[1].legend()
    ax[2].legend()
    fig.tight_layout()
    path = out / "sparrow_grpo.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [str(path)]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--prompts", type=int, default=4, help="prompts per step")
    ap.add_argument("--group", type=int, default=8, help="completions per prompt (G)")
    ap.add_argument("--contexts", type=int, nargs="+", default=[1024, 1536],
                    help="prompt lengths, cycled over steps (the bins the monitor and controller see)")
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--bin-tokens", type=int, default=512)
    ap.add_argument("--readout", type=float, default=0.25, help="scale of the value readout at the start")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--target", type=float, default=0.86)
    ap.add_argument("--candidates", type=int, nargs="+", default=[0, 2, 4, 8, 16, 32])
    ap.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                    help="start from a fixed budget (--start-pages) instead of sparrow.calibrate on unseen sequences")
    ap.add_argument("--start-pages", type=int, default=2, help="the fixed starting budget with --no-calibrate")
    ap.add_argument("--distill", action="store_true", help="train DistillSparse adapters on the rollouts")
    ap.add_argument("--inner", default="aot_eager", choices=["inductor", "aot_eager"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="bench/out/sparrow_grpo")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (the test suite)")
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.prompts, args.group, args.contexts, args.new_tokens = 2, 4, [256], 6
        args.bin_tokens, args.candidates = 128, [0, 2, 8]
    return args


def main(argv=None) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    return run(parse_args(argv))


if __name__ == "__main__":
    main()

"""Why the long-rollout p5 sat at 0.8076 in every bin: per-token acceptance against pages, by token kind.

Teacher-forced windows on recall sequences (the example's weakened policy, readout 0.25) at a small context,
decoded densely and with fixed page budgets. For every decoded token it records what was fed (filler, key,
value), alpha, and for a fed key (a retrieval: the next token is its value) whether layer 2's page selection
kept a page holding the answer, and the rank (by the page score selected with) of the best such page among the
non-reserved ones.

    python bench/sparrow_p5_diag.py --context 4096 --rows 4 --pages 4 16 64               # the bound score
    python bench/sparrow_p5_diag.py --context 4096 --rows 4 --pages 4 16 64 --score centroid

Prints, per budget, alpha by token kind, the retrieval hit rate and alpha of hits and misses, and the closed
form of a missed retrieval's alpha at this readout.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

import replaycompile.kernels.sparse_decode as sd
from replaycompile import sparrow
from replaycompile.retrieval import KEYS, VALUES, recall_sequences, weakened_recall_model
from replaycompile.rollout import DecodeSession


def missed_retrieval_alpha(model) -> float:
    """alpha between dense (the retrieved value's logit a, the other 63 at 0) and a sparse step that missed the
    answer page (every logit 0: the uniform distribution). a = readout weight x the final norm's gain on a
    residual with 4 unit entries (token, const, previous, answer)."""
    from replaycompile.retrieval import _ANS, HIDDEN

    w = float(model.lm_head.weight[VALUES[0], _ANS + VALUES[0]])
    g = float(model.model.norm.weight[0]) * math.sqrt(HIDDEN / 4)
    a = w * g
    v = model.config.vocab_size
    pd_hit, pd_other = math.exp(a) / (math.exp(a) + v - 1), 1 / (math.exp(a) + v - 1)
    return min(pd_hit, 1 / v) + (v - 1) * min(pd_other, 1 / v)


class Recorder:
    """Wraps ``select_pages``: for layer 2 (the retrieval head) keeps the kept page ids and the page scores (by
    the score the schedule selected with)."""

    def __init__(self, layer: int = 2):
        self.layer, self.calls, self.orig = layer, [], sd.select_pages

    def __enter__(self):
        def wrapped(q, k, visible, kv_len, topk, page_size, sink, local, state_key=-1, state=None,
                    page_score="bound"):
            pages = self.orig(q, k, visible, kv_len, topk, page_size, sink, local, state_key, state, page_score)
            if state_key == self.layer:
                st = (state or sd.current_state()).page_state(k, page_size, state_key)
                scores, _ = sd.page_scores(q, st, sd.cdiv(kv_len, page_size), page_score)
                self.calls.append(dict(kv_len=kv_len, pages=pages.clone(), scores=scores.clone(), sink=sink,
                                       local=local))
            return pages

        sd.select_pages = wrapped
        return self

    def __exit__(self, *exc):
        sd.select_pages = self.orig


@torch.no_grad()
def measure(model, seqs: torch.Tensor, starts: list, window: int, pages_list: list, bucket: int,
            score: str = "bound"):
    """Per budget, per decoded token: (alpha, kind of the fed token, retrieval hit or None, rank or None)."""
    rows = []
    b = seqs.shape[0]
    sess = DecodeSession(model, seqs[:, :starts[0]], torch.ones(b, starts[0], dtype=torch.long), seqs.shape[1] + 1)
    scheds = {p: sparrow.SparrowSchedule(pages=(p,), bucket_tokens=bucket, page_score=score) for p in pages_list}
    shared = sparrow.SparrowSchedule(pages=(pages_list[0],), bucket_tokens=bucket, page_score=score)
    for s0 in starts:
        if s0 > sess.position():
            sess.extend(seqs[:, sess.position():s0])
        feed = seqs[:, s0:s0 + window]
        dense = sess.clone()
        dense.set_schedule(None)
        dl = [dense.step(feed[:, i]).float() for i in range(window)]
        for p in pages_list:
            shared.set_pages(scheds[p].pages)
            c = sess.clone()
            c.set_schedule(shared, "eager")
            sl, calls = [], []
            with Recorder() as rec:
                for i in range(window):
                    n0 = len(rec.calls)
                    sl.append(c.step(feed[:, i]).float())
                    # no call: the budget covers every page and the op ran dense attention
                    calls.append(rec.calls[n0] if len(rec.calls) > n0 else None)
            for i in range(window):
                alpha = sparrow.acceptance(dl[i], sl[i])
                call = calls[i]
                pos = s0 + i  # the fed token's position; the prediction is of pos + 1
                for r in range(b):
                    tok = int(feed[r, i])
                    kind = "key" if tok in KEYS else "value" if tok in VALUES else "filler"
                    hit = rank = None
                    if kind == "key" and call is None:
                        hit, rank = True, 0
                    elif kind == "key":
                        # the answer: positions j < pos right after an earlier occurrence of this key
                        prev = seqs[r, :pos] == tok
                        ans = torch.nonzero(prev).reshape(-1) + 1
                        ans = ans[ans < pos]
                        need = set((ans // 16).tolist())
                        kept = set(call["pages"][r, 0].tolist())
                        hit = bool(need & kept)
                        n_pages = call["scores"].shape[-1]
                        reserved = {0} | set(range(n_pages - call["local"], n_pages))
                        sc = call["scores"][r, 0]
                        cand = [pg for pg in range(n_pages) if pg not in reserved]
                        order = sorted(cand, key=lambda pg: -float(sc[pg]))
                        far = [pg for pg in need if pg not in reserved]
                        rank = min(order.index(pg) for pg in far) if far else 0
                        if not far:
                            hit = True  # the answer sits in a reserved page
                    rows.append(dict(pages=p, kv=pos + 1, alpha=float(alpha[r]), kind=kind, hit=hit, rank=rank))
    return rows


def summarise(rows: list, pages_list: list, miss_alpha: float) -> None:
    print(f"closed form: a missed retrieval at this readout has alpha {miss_alpha:.4f}")
    for p in pages_list:
        rs = [r for r in rows if r["pages"] == p]
        a = torch.tensor([r["alpha"] for r in rs], dtype=torch.float64)
        p5 = float(torch.quantile(a, 0.05))
        print(f"pages {p:>4}: n {len(rs)}  p5 {p5:.4f}  mean {float(a.mean()):.4f}  min {float(a.min()):.4f}")
        for kind in ("filler", "key", "value"):
            ks = torch.tensor([r["alpha"] for r in rs if r["kind"] == kind], dtype=torch.float64)
            if ks.numel():
                print(f"    fed {kind:<6}: n {ks.numel():>5} ({ks.numel() / len(rs):.1%})  min {float(ks.min()):.4f}  "
                      f"mean {float(ks.mean()):.4f}  share < 0.99: {float((ks < 0.99).double().mean()):.3f}")
        keys = [r for r in rs if r["kind"] == "key"]
        hits = [r for r in keys if r["hit"]]
        miss = [r for r in keys if not r["hit"]]
        ranks = sorted(r["rank"] for r in keys)
        med = ranks[len(ranks) // 2] if ranks else None
        print(f"    retrievals: {len(keys)}, answer page kept {len(hits)} ({len(hits) / max(1, len(keys)):.1%}); "
              f"median rank of the answer page {med}, 90th pct {ranks[int(0.9 * (len(ranks) - 1))] if ranks else None}")
        if hits:
            print(f"      kept:   alpha min {min(r['alpha'] for r in hits):.4f} mean "
                  f"{sum(r['alpha'] for r in hits) / len(hits):.4f}")
        if miss:
            print(f"      missed: alpha min {min(r['alpha'] for r in miss):.4f} max "
                  f"{max(r['alpha'] for r in miss):.4f}")
        low = sum(1 for r in rs if r["alpha"] < 0.86)
        print(f"    tokens with alpha < 0.86: {low} ({low / len(rs):.1%}); of them missed retrievals: "
              f"{sum(1 for r in miss if r['alpha'] < 0.86)}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--windows", type=int, default=2, help="windows per sequence, spread over its second half")
    ap.add_argument("--pages", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--readout", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--score", choices=list(sd.PAGE_SCORES), default=sd.PAGE_SCORES[0],
                    help="the schedule's page score (kernels/sparse_decode.page_scores): the Quest-style upper "
                         "bound (the default) or the centroid")
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    model = weakened_recall_model(args.readout).eval()
    n = args.context
    starts = [n // 2 + j * (n // 2) // args.windows for j in range(args.windows)]
    seqs, _ = recall_sequences(args.rows, n, window=args.window, windows=starts, seed=args.seed)
    t0 = time.perf_counter()
    rows = measure(model, seqs, starts, args.window, args.pages, bucket=1 << 20, score=args.score)
    print(f"page score: {args.score}")
    print(f"{len(rows)} token records in {time.perf_counter() - t0:.0f} s")
    summarise(rows, args.pages, missed_retrieval_alpha(model))
    return rows


if __name__ == "__main__":
    main()

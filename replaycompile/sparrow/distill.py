"""DistillSparse: LoRA adapters that teach the sparse rollout policy to stay close to the dense one.

The adapters (``peft`` LoRA, all linear layers by default) are active only while rolling out sparsely. After each
dense update of the base model, ``DistillSparse.step`` trains them on the rollout batch with

    loss = sparse policy loss (PPO-clipped, TIS-weighted: ``sparrow.tis_policy_loss``)
           + kl_coef * KL(sparse || dense) on the sampled tokens (k3 estimator: r - 1 - log r, r = p_dense / p_sparse)

The sparse policy's log-probs need sparse attention *with a backward pass* over whole sequences. A decode step
selects pages per token; in training each block of ``page_size`` queries shares one selection, scored like the
decoder does (the schedule's ``page_score``, bound or centroid, against the block's mean query of the GQA
group), plus the sink page and the local pages up to the block, causal inside. It runs through
``replaycompile::block_sparse_attention`` (Triton on CUDA; a dense-mask PyTorch path on CPU), installed as a
transformers attention function for the duration of the step: the model's code is not touched.
"""

from __future__ import annotations

import contextlib
import contextvars

import torch
from torch import Tensor

from replaycompile.kernels.block_sparse import cdiv
from replaycompile.kernels.sparse_decode import score_pages
from .losses import tis_policy_loss
from .schedule import SparrowSchedule

__all__ = ["DistillSparse", "sparse_training_attention", "training_selection"]

ATTN_NAME = "replaycompile_sparrow"
# the schedule sparse_training_attention reads, set for the length of a ``sparse_attention`` block (a context
# variable, so nested blocks and threads each see their own)
_SCHEDULE: contextvars.ContextVar = contextvars.ContextVar("replaycompile_sparrow_training_schedule", default=None)


def training_selection(q: Tensor, k: Tensor, key_visible: Tensor, schedule: SparrowSchedule) -> Tensor:
    """bool [Hkv, nQB, nKB]: key pages (blocks of ``page_size``) each query block may use, for one row.

    q [Hq, T, D], k [Hkv, T, D] (after RoPE, as the cache holds them), key_visible [T].
    """
    hq, t, d = q.shape
    hkv = k.shape[0]
    p = schedule.page_size
    nb = cdiv(t, p)
    pad = nb * p - t
    vis = torch.nn.functional.pad(key_visible.float(), (0, pad))
    kp = torch.nn.functional.pad(k.float(), (0, 0, 0, pad)) * vis[None, :, None]
    cnt = vis.view(nb, p).sum(-1)
    qb = torch.nn.functional.pad(q.float(), (0, 0, 0, pad)).view(hkv, hq // hkv, nb, p, d).mean((1, 3))
    if schedule.page_score == "centroid":
        cent = kp.view(hkv, nb, p, d).sum(2) / cnt.clamp_min(1.0)[None, :, None]  # [Hkv, nKB, D]
        scores = score_pages(qb, cent, None, "centroid", "hnd,hmd->hmn")  # [Hkv, nQB, nKB]
    else:  # per-dimension maxima and minima of the visible keys (empty pages masked below)
        hidden = (vis == 0)[None, :, None]
        kb = torch.nn.functional.pad(k.float(), (0, 0, 0, pad))
        kmax = kb.masked_fill(hidden, float("-inf")).view(hkv, nb, p, d).amax(2)
        kmin = kb.masked_fill(hidden, float("inf")).view(hkv, nb, p, d).amin(2)
        scores = score_pages(qb, kmax, kmin, "bound", "hnd,hmd->hmn")
    m = torch.arange(nb)
    causal = m[None, :] <= m[:, None]
    has = cnt > 0
    first = int(torch.nonzero(has)[0]) if bool(has.any()) else 0
    sink = (m >= first) & (m < first + schedule.sink_pages)
    local = (m[None, :] > m[:, None] - schedule.local_pages) & causal
    reserved = (sink[None, :] & causal) | local
    kv_len = ((m + 1) * p).clamp(max=t)
    topk = torch.tensor([schedule.topk_pages(int(x)) for x in kv_len])
    scores = scores.masked_fill(~(causal & has[None, :])[None], float("-inf"))
    scores = scores.masked_fill(reserved[None], float("-inf"))
    rank = scores.argsort(-1, descending=True).argsort(-1)  # 0 = best
    chosen = (rank < topk[None, :, None]) & torch.isfinite(scores)
    return (chosen | reserved[None]) & causal[None]


def sparse_training_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling=None,
                              **kwargs):
    """A transformers attention function: Sparrow's page budget in training (see the module docstring)."""
    from replaycompile.kernels.block_sparse import BlockLayout, causal_block_mask, mask_visible

    sched = _SCHEDULE.get()
    layer = getattr(module, "layer_idx", None)
    if sched is None or layer in sched.dense_layers or query.shape[2] == 1:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    b, hq, t, d = query.shape
    scale = scaling if scaling is not None else d ** -0.5
    if attention_mask is None:
        key_vis = torch.ones(b, key.shape[2], dtype=torch.bool, device=query.device)
    else:  # the last query of a causal, left-padded row sees exactly the row's real keys
        m = attention_mask[:, 0, -1, :]
        key_vis = mask_visible(m)
    p = sched.page_size
    outs = []
    for i in range(b):
        sel = training_selection(query[i].detach(), key[i].detach(), key_vis[i], sched)
        lay = BlockLayout.from_block_masks(*causal_block_mask(t, t, p, p, sel), p, p, t, t).to(query.device)
        o, _ = torch.ops.replaycompile.block_sparse_attention(query[i:i + 1], key[i:i + 1], value[i:i + 1],
                                                              lay.tensors(), p, p, scale,
                                                              query.device.type == "cuda")
        outs.append(o)
    out = torch.cat(outs, 0)
    return out.transpose(1, 2).contiguous(), None


def _register():
    from transformers import AttentionInterface
    AttentionInterface.register(ATTN_NAME, sparse_training_attention)


@contextlib.contextmanager
def sparse_attention(model, schedule: SparrowSchedule):
    """Run ``model``'s full-sequence forwards with Sparrow's training-time sparse attention."""
    _register()
    cfg = model.config
    prev = cfg._attn_implementation
    token = _SCHEDULE.set(schedule)
    cfg._attn_implementation = ATTN_NAME
    try:
        yield
    finally:
        cfg._attn_implementation = prev
        _SCHEDULE.reset(token)


def _token_logprobs(model, sequences: Tensor, attention_mask: Tensor, prompt_len: int) -> Tensor:
    pos = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
    logits = model(input_ids=sequences, attention_mask=attention_mask, position_ids=pos, use_cache=False,
                   logits_to_keep=sequences.shape[1] - prompt_len + 1).logits[:, :-1]
    return logits.float().log_softmax(-1).gather(-1, sequences[:, prompt_len:, None]).squeeze(-1)


class DistillSparse:
    """LoRA adapters on the rollout policy, trained to pull the sparse policy toward the dense one.

    ``model`` is wrapped in place by peft (``self.model``, a PeftModel); its base weights keep their
    ``requires_grad`` so the RL trainer updates them as before, with ``dense()`` around its forwards. Roll out
    under ``sparse()``; call ``step(...)`` after each dense update.
    """

    def __init__(self, model, schedule: SparrowSchedule, *, r: int = 8, lora_alpha: int = 16,
                 target_modules="all-linear", lr: float = 1e-3, kl_coef: float = 1e-3, clip_low: float = 0.2,
                 tis_cap: float = 2.0, adapter_name: str = "sparrow"):
        from peft import LoraConfig, get_peft_model

        trainable = {n: p.requires_grad for n, p in model.named_parameters()}
        cfg = LoraConfig(r=r, lora_alpha=lora_alpha, target_modules=target_modules, lora_dropout=0.0,
                         bias="none")
        self.model = get_peft_model(model, cfg, adapter_name=adapter_name)
        for n, p in model.named_parameters():  # peft freezes the base: give the RL trainer its weights back
            base = n.replace(".base_layer", "")
            if "lora_" not in n and trainable.get(base, trainable.get(n, False)):
                p.requires_grad_(True)
        self.adapter = adapter_name
        self.lora_params = [p for n, p in self.model.named_parameters() if "lora_" in n]
        self.opt = torch.optim.Adam(self.lora_params, lr=lr)
        self.schedule = schedule
        self.kl_coef, self.clip_low, self.tis_cap = kl_coef, clip_low, tis_cap

    @contextlib.contextmanager
    def dense(self):
        """The dense policy (adapters off): the RL trainer's forwards and the training engine's log-probs."""
        with self.model.disable_adapter():
            yield self.model

    @contextlib.contextmanager
    def sparse(self):
        """The sparse rollout policy (adapters on)."""
        yield self.model

    def sparse_logprobs(self, sequences: Tensor, attention_mask: Tensor, prompt_len: int) -> Tensor:
        """Log-probs [B, L] of the completion tokens under the sparse policy (adapters on, sparse attention)."""
        with sparse_attention(self.model, self.schedule):
            return _token_logprobs(self.model, sequences, attention_mask, prompt_len)

    def dense_logprobs(self, sequences: Tensor, attention_mask: Tensor, prompt_len: int) -> Tensor:
        with torch.no_grad(), self.dense():
            return _token_logprobs(self.model, sequences, attention_mask, prompt_len)

    def step(self, sequences: Tensor, attention_mask: Tensor, prompt_len: int, completion_mask: Tensor,
             advantages: Tensor, rollout_logprobs: Tensor, dense_logprobs: Tensor | None = None) -> dict:
        """One LoRA update on a rollout batch; returns the loss terms (KL measured before the update)."""
        if dense_logprobs is None:
            dense_logprobs = self.dense_logprobs(sequences, attention_mask, prompt_len)
        logp = self.sparse_logprobs(sequences, attention_mask, prompt_len)
        mask = completion_mask.to(logp.dtype)
        pg, stats = tis_policy_loss(logp, rollout_logprobs, rollout_logprobs, advantages, mask,
                                    clip_low=self.clip_low, tis_cap=self.tis_cap)
        log_r = dense_logprobs.detach() - logp
        k3 = (torch.exp(log_r) - 1 - log_r) * mask
        kl = k3.sum() / mask.sum().clamp_min(1)
        loss = pg + self.kl_coef * kl
        grads = torch.autograd.grad(loss, self.lora_params, allow_unused=True)
        for p, g in zip(self.lora_params, grads):
            p.grad = g
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return dict(loss=float(loss.detach()), policy_loss=float(pg.detach()), kl=float(kl.detach()), **stats)

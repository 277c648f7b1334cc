"""The attention side of the vLLM plugin: vLLM's CPU attention backend with Sparrow decode, and the ops the graph
pass rewrites to. Loaded by vLLM through its backend registry (``register_backend``), never at import of
``replaycompile``.

Per step (``SparrowCPUMetadataBuilder.build``) the metadata carries what a layer needs; per layer the first sparse
call of a step makes the step's ``StepPlan`` from the page table (the graph's schedule node, or the schedule's own
in eager mode): which rows decode sparsely (one query token and a budget below the row's pages), the dense rest as a
sub-batch for vLLM's kernel, and the per-(row, KV head) attended lengths with their kernel scheduling. Then each
sparse layer selects pages per KV head (``kernels/paged_sparse_decode.py``) and attends with vLLM's own CPU kernel
on the per-head block table (the cache viewed as one block per block and head: no copy) or with the gathered SDPA
path (``sparrow_kernel="torch"``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import torch
from torch import Tensor
from vllm import _custom_ops as ops
from vllm import envs
from vllm.config import get_current_vllm_config
from vllm.utils.torch_utils import LayerNameType, _resolve_layer_name, direct_register_custom_op
from vllm.v1.attention.backends.cpu_attn import (
    CPUAttentionBackend,
    CPUAttentionBackendImpl,
    CPUAttentionMetadataBuilder,
)

from replaycompile.kernels.paged_sparse_decode import (
    VEC_LAYOUTS,
    attended_lengths,
    gathered_decode,
    new_page_bounds,
    page_budget,
    select_pages,
    update_page_bounds,
    virtual_cache,
)
from replaycompile.sparrow.schedule import MAX_BUCKETS

from . import KERNEL_SETTING, SETTING, layer_index, load_engine_schedule

log = logging.getLogger("replaycompile")

LOG_EVERY = 256  # steps between the workers' counter lines


# ------------------------------------------------------------------------------------------------ runtime state


class Runtime:
    """This process's schedule (loaded once from the engine's config) and its page table as a tensor."""

    def __init__(self, path: str, kernel: str):
        self.path = path
        self.kernel = kernel
        self.schedule = load_engine_schedule(path)
        self.table = self.schedule.table(padded=True)
        self.lock = threading.Lock()

    def set_pages(self, pages) -> None:
        with self.lock:
            self.schedule.set_pages(pages)
            self.table = self.schedule.table(padded=True)


_RUNTIMES: dict = {}
_CURRENT: list = [None]  # the runtime of the engine this process last built (a worker runs one engine)


def runtime(vllm_config=None) -> Runtime | None:
    """The Sparrow runtime of an engine's config (None without a schedule); without a config (inside a compiled
    graph, where vLLM sets none), the one of the engine this process built."""
    if vllm_config is None:
        return _CURRENT[0]
    extra = getattr(vllm_config, "additional_config", None) or {}
    path = extra.get(SETTING) if isinstance(extra, dict) else None
    if not path:
        return None
    key = (path, extra.get(KERNEL_SETTING, "vllm"))
    if key not in _RUNTIMES:
        _RUNTIMES[key] = Runtime(*key)
    _CURRENT[0] = _RUNTIMES[key]
    return _RUNTIMES[key]


@dataclass
class Stats:
    """Counters of this worker. ``steps``: forward steps with attention metadata; ``sparse_steps``: steps where
    some decode row read a budget; ``mixed_steps``: those that also held prefill rows; ``sparse_rows`` /
    ``dense_decode_rows``: decode rows read sparsely / densely (their budget covered every page); ``pages_read``
    / ``pages_dense``: pages (per KV head, summed over the sparse layers) the sparse rows read, against what dense
    decoding reads there; ``layer_calls``: sparse layer calls by path (``graph``: the op the graph pass rewrote
    to; ``eager``: the backend's forward)."""

    steps: int = 0
    sparse_steps: int = 0
    mixed_steps: int = 0
    sparse_rows: int = 0
    dense_decode_rows: int = 0
    pages_read: int = 0
    pages_dense: int = 0
    layer_calls: dict = field(default_factory=lambda: {"graph": 0, "eager": 0})
    row_heads: int = 0  # (sparse decode row, KV head) pairs over the sparse layer calls
    graph_rewrites: int = 0  # attention ops the post-grad pass rewrote (in this process's compiles)

    def as_dict(self) -> dict:
        d = dict(self.__dict__, layer_calls=dict(self.layer_calls))
        # per decoded token, layer and KV head: what a sparse row read, and what dense decoding reads there
        d["pages_read_per_token_head"] = self.pages_read / max(self.row_heads, 1)
        d["pages_dense_per_token_head"] = self.pages_dense / max(self.row_heads, 1)
        return d

    def maybe_log(self) -> None:
        if self.steps % LOG_EVERY == 0:
            log.info("replaycompile sparrow: %d steps, %d with sparse decode rows (%d mixed with prefill); decode "
                     "rows sparse %d, dense by budget %d; pages read %.3f of dense; sparse layer calls %s",
                     self.steps, self.sparse_steps, self.mixed_steps, self.sparse_rows, self.dense_decode_rows,
                     self.pages_read / max(self.pages_dense, 1), self.layer_calls)


STATS = Stats()


# ------------------------------------------------------------------------------------------------ step plan


@dataclass
class StepInfo:
    """What the builder knows that a layer's plan needs (vLLM's scheduling parameters of this cache group)."""

    num_heads: int
    num_kv_heads: int
    head_dim: int
    dtype: torch.dtype
    window: int
    isa: str
    kv_cache_dtype: str
    block_size: int
    plan_key: tuple | None = None
    plan: "StepPlan | None" = None
    counted: bool = False


@dataclass
class StepPlan:
    sparse_rows: Tensor  # int64 [n] request indices decoded sparsely
    sparse_tokens: Tensor  # int64 [n] their query tokens
    budget: Tensor  # int64 [n] pages each reads
    lengths: Tensor  # int32 [n * Hkv] attended length per (row, KV head)
    pseudo_qsl: Tensor  # int32 [n * Hkv + 1]
    pseudo_sched: Tensor  # vLLM kernel scheduling of the per-head pseudo-batch
    dense_tokens: Tensor | slice | None  # the dense rows' query tokens (a slice when contiguous)
    dense_qsl: Tensor | None
    dense_seq: Tensor | None
    dense_bt: Tensor | None
    dense_sched: Tensor | None
    pages_dense: int


def _scheduler_metadata(info: StepInfo, num_reqs, num_heads, num_kv_heads, seq_lens, qsl, causal, window):
    return ops.cpu_attn_get_scheduler_metadata(
        num_reqs=num_reqs, num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=info.head_dim,
        seq_lens=seq_lens, dtype=info.dtype, query_start_loc=qsl, causal=causal, sliding_window_size=window,
        isa=info.isa, enable_kv_split=envs.VLLM_CPU_ATTN_SPLIT_KV, dynamic_causal=None,
        kv_cache_dtype=info.kv_cache_dtype)


def step_plan(md, table: Tensor, rt: Runtime) -> StepPlan | None:
    """This step's plan for the page table ``table`` (memoised on the metadata); None: nothing decodes sparsely."""
    info: StepInfo = md.sparrow
    key = tuple(table.tolist())
    if info.plan_key == key:
        return info.plan
    s = rt.schedule
    n_req = md.seq_lens.shape[0]
    qsl = md.query_start_loc[: n_req + 1].to(torch.int64)
    qlen = qsl[1:] - qsl[:-1]
    seq = md.seq_lens.to(torch.int64)
    budget = page_budget(seq, table, s.bucket_tokens, s.page_size, s.sink_pages, s.local_pages)
    n_pages = (seq + s.page_size - 1) // s.page_size
    decode = qlen == 1
    sparse = decode & (budget < n_pages)
    plan = None
    if bool(sparse.any()):
        rows = torch.nonzero(sparse).flatten()
        hkv, g = info.num_kv_heads, info.num_heads // info.num_kv_heads
        lengths = attended_lengths(seq[rows], budget[rows], s.page_size).repeat_interleave(hkv).to(torch.int32)
        pseudo_qsl = torch.arange(lengths.shape[0] + 1, dtype=torch.int32)
        pseudo_sched = _scheduler_metadata(info, lengths.shape[0], g, 1, lengths, pseudo_qsl, True, -1)
        dense_rows = torch.nonzero(~sparse & (qlen > 0)).flatten()
        dense_tokens = dense_qsl = dense_seq = dense_bt = dense_sched = None
        if dense_rows.numel():
            starts, lens = qsl[dense_rows], qlen[dense_rows]
            first, last = int(starts[0]), int(starts[-1] + lens[-1])
            if last - first == int(lens.sum()):  # the dense rows' tokens are one contiguous range
                dense_tokens = slice(first, last)
            else:
                dense_tokens = torch.cat([torch.arange(int(a), int(a + n)) for a, n in zip(starts, lens)])
            dense_qsl = torch.zeros(dense_rows.numel() + 1, dtype=torch.int32)
            dense_qsl[1:] = torch.cumsum(lens, 0)
            dense_seq = md.seq_lens[dense_rows].contiguous()
            dense_bt = md.block_table[dense_rows].contiguous()
            dense_sched = _scheduler_metadata(info, dense_rows.numel(), info.num_heads, hkv, dense_seq, dense_qsl,
                                              md.causal, info.window)
        plan = StepPlan(rows, qsl[rows], budget[rows], lengths, pseudo_qsl, pseudo_sched, dense_tokens, dense_qsl,
                        dense_seq, dense_bt, dense_sched, int(n_pages[rows].sum()))
    if not info.counted:  # once per step, not per layer
        info.counted = True
        STATS.steps += 1
        STATS.dense_decode_rows += int((decode & ~sparse).sum())
        if plan is not None:
            STATS.sparse_steps += 1
            STATS.mixed_steps += int(bool((qlen > 1).any()))
            STATS.sparse_rows += int(sparse.sum())
        STATS.maybe_log()
    info.plan_key, info.plan = key, plan
    return plan


# ------------------------------------------------------------------------------------------------ backend


class SparrowCPUMetadataBuilder(CPUAttentionMetadataBuilder):
    def build(self, common_prefix_len, common_attn_metadata, fast_build: bool = False):
        md = super().build(common_prefix_len, common_attn_metadata, fast_build)
        md.sparrow = None
        rt = runtime(self.vllm_config)
        if rt is not None and self.block_size != rt.schedule.page_size:
            raise RuntimeError(
                f"replaycompile sparrow: this engine's KV block size is {self.block_size} but schedule {rt.path!r} "
                f"has page_size {rt.schedule.page_size}: the plugin did not configure the engine in the process "
                f"that created it (is 'replaycompile_sparrow' left out of VLLM_PLUGINS there?)")
        if rt is not None and common_attn_metadata.causal is True and not self.is_cross_attention:
            md.sparrow = StepInfo(self.num_heads, self.num_kv_heads, self.head_dim, self.dtype, self.window_size,
                                  self.isa, self.kv_cache_dtype, self.block_size)
        return md


class SparrowCPUAttentionImpl(CPUAttentionBackendImpl):
    """vLLM's CPU attention, with Sparrow decode on the schedule's sparse layers."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.runtime = runtime(get_current_vllm_config())  # impls are built inside the engine's config context
        self.bounds = None  # per-page key max/min [num_blocks, Hkv, 2, D], kept as the cache is written
        self._sparse: bool | None = None

    def sparse_layer(self, layer) -> bool:
        """Whether this layer decodes sparsely (decided once per layer; a dense one says why, once)."""
        if self._sparse is None:
            rt = self.runtime
            why = None
            index = layer_index(getattr(layer, "layer_name", ""))
            if rt is None:
                why = ""
            elif index is None:
                why = f"its name {getattr(layer, 'layer_name', '?')!r} carries no layer index"
            elif index in rt.schedule.dense_layers:
                why = ""  # the schedule keeps it dense
            elif self.attn_type != "decoder":
                why = f"its attention type is {self.attn_type}"
            elif self.sliding_window != -1 or self.alibi_slopes is not None or self.logits_soft_cap or \
                    self.sinks is not None:
                why = "it uses a sliding window, ALiBi, a logit soft cap or attention sinks"
            elif self.is_fp8_kv_cache:
                why = "its KV cache is fp8"
            elif rt.kernel == "torch" and layer.isa not in VEC_LAYOUTS:
                why = f"sparrow_kernel='torch' reads the vec cache layouts, and this layer's is {layer.isa!r}"
            self._sparse = why is None
            if why:
                log.warning("replaycompile sparrow: layer %s decodes densely: %s", layer.layer_name, why)
        return self._sparse

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping):
        super().do_kv_cache_update(layer, key, value, kv_cache, slot_mapping)
        if self.sparse_layer(layer):
            if self.bounds is None or self.bounds.shape[0] != kv_cache.shape[0]:
                self.bounds = new_page_bounds(kv_cache.shape[0], self.num_kv_heads, self.head_size)
            update_page_bounds(self.bounds, key, slot_mapping, kv_cache.shape[2])

    def forward(self, layer, query, key, value, kv_cache, attn_metadata, output, output_scale=None,
                output_block_scale=None):
        return self.sparrow_forward(layer, query, key, value, kv_cache, attn_metadata, output, output_scale,
                                    output_block_scale, table=None)

    def sparrow_forward(self, layer, query, key, value, kv_cache, md, output, output_scale, output_block_scale,
                        table: Tensor | None):
        dense = super().forward
        if md is None or getattr(md, "sparrow", None) is None or self.bounds is None or not self.sparse_layer(layer):
            return dense(layer, query, key, value, kv_cache, md, output, output_scale, output_block_scale)
        rt = self.runtime
        plan = step_plan(md, rt.table if table is None else table, rt)
        if plan is None:
            return dense(layer, query, key, value, kv_cache, md, output, output_scale, output_block_scale)
        STATS.layer_calls["eager" if table is None else "graph"] += 1
        out = output.view(output.shape[0], self.num_heads, self.head_size)
        info: StepInfo = md.sparrow
        # the dense rows (prefill, decode rows whose budget covers every page) through vLLM's kernel
        if plan.dense_tokens is not None:
            q_dense = query[plan.dense_tokens]
            o_dense = out[plan.dense_tokens] if isinstance(plan.dense_tokens, slice) else torch.empty_like(q_dense)
            nb, hkv, bs, _ = kv_cache.shape  # allocated [NB, Hkv, bs, 2D], read as [NB, Hkv, 2bs, D] (as vLLM's)
            key_cache, value_cache = kv_cache.view(nb, hkv, 2 * bs, -1).chunk(2, dim=2)
            ops.cpu_attention_with_kv_cache(
                query=q_dense, key_cache=key_cache, value_cache=value_cache, output=o_dense,
                query_start_loc=plan.dense_qsl, seq_lens=plan.dense_seq, scale=self.scale, causal=md.causal,
                alibi_slopes=None, sliding_window=self.sliding_window, block_table=plan.dense_bt, softcap=0,
                scheduler_metadata=plan.dense_sched, s_aux=None, dynamic_causal=None, k_scale=layer._k_scale_float,
                v_scale=layer._v_scale_float, kv_cache_dtype=self.kv_cache_dtype)
            if not isinstance(plan.dense_tokens, slice):
                out[plan.dense_tokens] = o_dense
        # the sparse decode rows: pages per KV head
        s = rt.schedule
        q = query[plan.sparse_tokens]
        blocks, _ = select_pages(q, self.bounds, md.block_table[plan.sparse_rows],
                                       md.seq_lens[plan.sparse_rows], plan.budget, s.page_size, s.sink_pages,
                                       s.local_pages)
        STATS.pages_read += int(plan.budget.sum()) * self.num_kv_heads
        STATS.pages_dense += plan.pages_dense * self.num_kv_heads
        STATS.row_heads += plan.sparse_rows.numel() * self.num_kv_heads
        n, hq, d = q.shape
        if rt.kernel == "torch":
            o = gathered_decode(q, kv_cache, blocks, plan.lengths, self.scale)
        else:
            g = hq // self.num_kv_heads
            o = torch.empty(n * self.num_kv_heads, g, d, dtype=query.dtype)
            key_cache, value_cache = virtual_cache(kv_cache)
            ops.cpu_attention_with_kv_cache(
                query=q.reshape(n * self.num_kv_heads, g, d), key_cache=key_cache, value_cache=value_cache,
                output=o, query_start_loc=plan.pseudo_qsl, seq_lens=plan.lengths, scale=self.scale, causal=True,
                alibi_slopes=None, sliding_window=-1, block_table=blocks, softcap=0,
                scheduler_metadata=plan.pseudo_sched, s_aux=None, dynamic_causal=None,
                k_scale=layer._k_scale_float, v_scale=layer._v_scale_float, kv_cache_dtype=self.kv_cache_dtype)
        out[plan.sparse_tokens] = o.reshape(n, hq, d).to(out.dtype)
        return output


class SparrowCPUAttentionBackend(CPUAttentionBackend):
    @staticmethod
    def get_impl_cls():
        return SparrowCPUAttentionImpl

    @staticmethod
    def get_builder_cls():
        return SparrowCPUMetadataBuilder


# ------------------------------------------------------------------------------------------------ graph ops


def sparrow_schedule_table() -> Tensor:
    """The schedule node of a rewritten graph: this process's page table, padded to MAX_BUCKETS (read every
    step, so a recalibrated table needs no recompile)."""
    rt = runtime()
    if rt is None:
        raise RuntimeError("replaycompile sparrow: a rewritten graph ran in an engine without a Sparrow schedule")
    return rt.table.clone()


def _sparrow_schedule_table_fake() -> Tensor:
    return torch.empty(MAX_BUCKETS, dtype=torch.int64)


def sparrow_attention_with_output(query: Tensor, key: Tensor, value: Tensor, output: Tensor,
                                  layer_name: LayerNameType, table: Tensor, output_scale: Tensor | None = None,
                                  output_block_scale: Tensor | None = None,
                                  kv_cache_dummy_dep: Tensor | None = None) -> None:
    """``vllm::unified_attention_with_output`` with the page table as an input: the rewrite's target."""
    from vllm.model_executor.layers.attention.attention import get_attention_context

    del kv_cache_dummy_dep
    attn_metadata, layer, kv_cache, _ = get_attention_context(_resolve_layer_name(layer_name))
    impl = layer.impl
    if not isinstance(impl, SparrowCPUAttentionImpl):
        raise RuntimeError(f"replaycompile sparrow: layer {layer_name!r} runs {type(impl).__name__}, not the plugin's "
                           f"attention")
    impl.sparrow_forward(layer, query, key, value, kv_cache, attn_metadata, output, output_scale,
                         output_block_scale, table=table)


_lib = torch.library.Library("replaycompile_vllm", "FRAGMENT")  # noqa: TOR901 (vLLM's registration helper below)
direct_register_custom_op("sparrow_schedule_table", sparrow_schedule_table, mutates_args=[],
                          fake_impl=_sparrow_schedule_table_fake, target_lib=_lib,
                          dispatch_key="CompositeExplicitAutograd")
direct_register_custom_op("sparrow_attention_with_output", sparrow_attention_with_output,
                          mutates_args=["output", "output_block_scale"], target_lib=_lib)

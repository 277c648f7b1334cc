"""Sparrow inside vLLM: a plugin that makes vLLM's CPU attention decode block-sparse by a Sparrow schedule.

Installed with the ``vllm`` extra; vLLM finds it through its ``vllm.general_plugins`` entry point (pyproject.toml)
and loads it in the driver, engine and worker processes. It does nothing until an engine is given a schedule:

    LLM(model=..., additional_config={"sparrow_schedule": "schedule.json"})     # vLLM's per-engine setting
    REPLAYCOMPILE_SPARROW_SCHEDULE=schedule.json python train.py                 # or the environment

``additional_config`` is vLLM's place for a plugin's per-engine options (it is part of the engine's config hash,
so a compiled graph made with one schedule is never reused without it); the variable is for frameworks that start
vLLM without exposing it. Then, at engine start (``check_and_update_config``, in the driver):

* the schedule file is read and checked (a missing file, another format or a schedule without a sink and a local
  page is refused with a message naming the file);
* vLLM's KV block size is set to the schedule's page size (a page is a cache block), or, if the user chose one,
  checked to equal it;
* where vLLM compiles the model, a post-grad pass (``graph.SparrowGraphPass``) rewrites every sparse layer's
  ``vllm::unified_attention_with_output`` into ``replaycompile_vllm::sparrow_attention_with_output``, whose page
  table comes from a ``replaycompile_vllm::sparrow_schedule_table`` node: the schedule is data in the graph, and
  ``set_schedule`` (a recalibration) takes effect at the next step without recompiling.

The attention backend (``attention.py``) replaces vLLM's ``CPU_ATTN`` through vLLM's backend registry; without a
schedule it is vLLM's own. With one, in every step the scheduler makes (prefill, decode, both mixed), each decode
row of a sparse layer reads the pages its KV length budgets, chosen per KV head from page summaries kept when the
cache is written; prefill rows, dense layers and decode rows whose budget covers every page run vLLM's kernel
unchanged. Counters per worker: ``llm.collective_rpc("sparrow_stats")`` (``SparrowWorkerExtension``) and a log line
every 256 steps.
"""

from __future__ import annotations

import logging
import os
import re

from replaycompile.sparrow.schedule import SparrowSchedule

__all__ = ["register", "schedule_path", "load_engine_schedule", "SETTING", "ENV_SCHEDULE", "KERNEL_SETTING",
           "SparrowWorkerExtension", "worker_stats", "set_worker_schedule"]

log = logging.getLogger("replaycompile")

SETTING = "sparrow_schedule"  # additional_config key: the schedule JSON's path
KERNEL_SETTING = "sparrow_kernel"  # additional_config key: "vllm" (its CPU kernel on per-head tables) or "torch"
ENV_SCHEDULE = "REPLAYCOMPILE_SPARROW_SCHEDULE"
KERNELS = ("vllm", "torch")

_registered = False
_LAYER_INDEX = re.compile(r"\.(\d+)\.")


def layer_index(layer_name: str) -> int | None:
    """The decoder layer a vLLM attention layer name belongs to (``model.layers.3.self_attn.attn`` -> 3), which
    the schedule's ``dense_layers`` refer to; None if the name carries none."""
    m = _LAYER_INDEX.search(layer_name + ".")
    return int(m.group(1)) if m else None


def register() -> None:
    """vLLM's general-plugin entry point: register the attention backend and the engine-start hook (idempotent).
    Off the CPU platform it registers nothing and says so once a schedule asks for it."""
    global _registered
    if _registered:
        return
    _registered = True
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        if os.environ.get(ENV_SCHEDULE):
            log.warning("replaycompile sparrow: the vLLM plugin runs on vLLM's CPU platform only; this is %s, so "
                        "%s is ignored and decoding stays dense", current_platform.device_name, ENV_SCHEDULE)
        return
    from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend

    register_backend(AttentionBackendEnum.CPU_ATTN, f"{__name__}.attention.SparrowCPUAttentionBackend")
    platform = type(current_platform)
    original = platform.check_and_update_config.__func__

    def check_and_update_config(cls, vllm_config):
        original(cls, vllm_config)
        configure_engine(vllm_config)

    platform.check_and_update_config = classmethod(check_and_update_config)


def schedule_path(vllm_config) -> str | None:
    """The schedule an engine was given: ``additional_config["sparrow_schedule"]``, else the environment."""
    extra = getattr(vllm_config, "additional_config", None) or {}
    path = extra.get(SETTING) if isinstance(extra, dict) else None
    return path or os.environ.get(ENV_SCHEDULE) or None


def load_engine_schedule(path) -> SparrowSchedule:
    """Read and check a schedule for an engine; every refusal names the file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"replaycompile sparrow: schedule file {path!r} does not exist ({SETTING} / {ENV_SCHEDULE})")
    try:
        schedule = SparrowSchedule.load(path)
    except ValueError as e:
        raise ValueError(f"replaycompile sparrow: schedule file {path!r} is not a usable Sparrow schedule: {e}") from e
    if schedule.page_score != "bound":
        raise ValueError(f"replaycompile sparrow: schedule file {path!r} scores pages by {schedule.page_score!r}; the "
                         f"vLLM plugin keeps per-page key bounds only, so it scores by 'bound'")
    if schedule.sink_pages < 1 or schedule.local_pages < 1:
        raise ValueError(f"replaycompile sparrow: schedule file {path!r} keeps {schedule.sink_pages} sink and "
                         f"{schedule.local_pages} local page(s): the floor in vLLM is one of each (the first page "
                         f"anchors the softmax, the last holds the current token)")
    return schedule


def configure_engine(vllm_config) -> None:
    """The engine-start hook (after the platform's own): check the schedule, align the block size, add the pass."""
    path = schedule_path(vllm_config)
    if not path:
        return
    schedule = load_engine_schedule(path)
    extra = vllm_config.additional_config if isinstance(vllm_config.additional_config, dict) else {}
    kernel = extra.get(KERNEL_SETTING, "vllm")
    if kernel not in KERNELS:
        raise ValueError(f"replaycompile sparrow: {KERNEL_SETTING}={kernel!r}; known kernels are {KERNELS}")
    cache = vllm_config.cache_config
    if schedule.page_size % 32:
        raise ValueError(f"replaycompile sparrow: schedule file {path!r} has page_size {schedule.page_size}; vLLM's "
                         f"CPU attention reads blocks of a multiple of 32 tokens (a page is a block)")
    if getattr(cache, "user_specified_block_size", False) and cache.block_size != schedule.page_size:
        raise ValueError(f"replaycompile sparrow: block_size={cache.block_size} but schedule file {path!r} has "
                         f"page_size {schedule.page_size}: a Sparrow page is one KV cache block, so leave block_size "
                         f"unset (the plugin sets it) or make them equal")
    cache.block_size = schedule.page_size
    if not vllm_config.parallel_config.worker_extension_cls:
        vllm_config.parallel_config.worker_extension_cls = f"{__name__}.SparrowWorkerExtension"
    # the workers read the setting from the config they are sent, whichever way the user gave it
    vllm_config.additional_config = {**extra, SETTING: os.path.abspath(path), KERNEL_SETTING: kernel}
    from .graph import install_graph_pass

    install_graph_pass(vllm_config, schedule)
    log.info("replaycompile sparrow: schedule %s (pages %s per %d tokens, page %d, sink %d, local %d, dense layers "
             "%s), kernel %s", path, list(schedule.pages)[:8], schedule.bucket_tokens, schedule.page_size,
             schedule.sink_pages, schedule.local_pages, list(schedule.dense_layers), kernel)


class SparrowWorkerExtension:
    """Methods vLLM adds to its workers (``worker_extension_cls``; the plugin sets it when the engine has none), so
    the driver reaches the counters and the page table by name: ``llm.collective_rpc("sparrow_stats")`` returns one
    dict per worker, ``llm.collective_rpc("sparrow_set_pages", args=(pages,))`` recalibrates (the compiled graphs
    read the new table at the next step). An engine with its own extension class can pass the module functions
    below to ``collective_rpc`` instead (vLLM then needs ``VLLM_ALLOW_INSECURE_SERIALIZATION=1`` to send them)."""

    def sparrow_stats(self) -> dict:
        return worker_stats()

    def sparrow_set_pages(self, pages) -> None:
        set_worker_schedule(None, pages)


def worker_stats(worker=None) -> dict:
    """This worker's Sparrow counters (``attention.Stats``)."""
    from .attention import STATS

    return STATS.as_dict()


def set_worker_schedule(worker, pages) -> None:
    """Replace this worker's page table (validated as ``SparrowSchedule.set_pages`` does)."""
    from .attention import runtime

    rt = runtime()
    if rt is None:
        raise RuntimeError("replaycompile sparrow: this engine runs without a Sparrow schedule")
    rt.set_pages(pages)

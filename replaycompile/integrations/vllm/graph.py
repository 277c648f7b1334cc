"""The post-grad pass of the vLLM plugin: in the graph vLLM compiles, every sparse layer's
``vllm::unified_attention_with_output`` becomes ``replaycompile_vllm::sparrow_attention_with_output`` with one
``replaycompile_vllm::sparrow_schedule_table`` node's output as its page table. vLLM reaches Inductor's
``post_grad_custom_post_pass`` hook with it (``install_graph_pass``); the graph is functionalized there, so the
attention appears inside ``auto_functionalized`` (or, where vLLM has lowered that, as the op itself)."""

from __future__ import annotations

import logging

import torch
from torch import fx
from vllm.compilation.passes.inductor_pass import InductorPass

from . import layer_index

log = logging.getLogger("replaycompile")

def _layer_str(name) -> str:
    from vllm.utils.torch_utils import _resolve_layer_name

    if hasattr(name, "real_obj"):  # a FakeScriptObject standing for a LayerName
        name = name.real_obj
    return _resolve_layer_name(name)


def _fake_mode(graph: fx.Graph):
    """The graph's fake mode (from its nodes' values), to give the new schedule node a value of the same kind."""
    from torch._subclasses.fake_tensor import FakeTensor

    for n in graph.nodes:
        if isinstance(n.meta.get("val"), FakeTensor):
            return n.meta["val"].fake_mode
    raise RuntimeError("replaycompile sparrow: the post-grad graph carries no fake values to type the schedule node")


class SparrowGraphPass(InductorPass):
    """Rewrite the sparse layers' attention to the Sparrow op, reading the table from one schedule node."""

    def __init__(self, dense_layers=(), then=None):
        self.dense_layers = tuple(dense_layers)
        self.then = then  # a post-grad pass the user had configured: it runs after this one

    def __call__(self, graph: fx.Graph) -> None:
        from . import attention

        unified = torch.ops.vllm.unified_attention_with_output.default
        target = torch.ops.replaycompile_vllm.sparrow_attention_with_output.default
        hop = torch.ops.higher_order.auto_functionalized
        table = None
        rewritten = 0
        for node in list(graph.nodes):
            wrapped = node.target is hop and node.args and node.args[0] is unified
            if not (wrapped or node.target is unified):
                continue
            kwargs = dict(node.kwargs)
            name = kwargs.get("layer_name", node.args[4] if not wrapped and len(node.args) > 4 else None)
            layer = _layer_str(name.meta.get("val", name) if isinstance(name, fx.Node) else name)
            index = layer_index(layer)
            if index is None or index in self.dense_layers:
                continue
            if table is None:
                first = next(n for n in graph.nodes if n.op != "placeholder")
                with graph.inserting_before(first):
                    table = graph.call_function(torch.ops.replaycompile_vllm.sparrow_schedule_table.default, ())
                    with _fake_mode(graph):
                        table.meta["val"] = attention._sparrow_schedule_table_fake()
            if wrapped:
                node.args = (target,) + tuple(node.args[1:])
                node.kwargs = {**kwargs, "table": table}
            else:
                args = list(node.args)
                node.args = tuple(args[:5])
                rest = dict(zip(("output_scale", "output_block_scale", "kv_cache_dummy_dep"), args[5:]))
                node.kwargs = {**rest, **kwargs, "table": table}
                node.target = target
            # Inductor re-traces auto_functionalized from the inputs' eager values: they must match the new call
            eager = node.meta.get("eager_input_vals")
            if eager is not None:
                vals, kwvals = eager
                if wrapped:
                    vals = (target,) + tuple(vals[1:])
                node.meta["eager_input_vals"] = (vals, {**kwvals, "table": table.meta["val"]})
            rewritten += 1
        attention.STATS.graph_rewrites += rewritten
        log.info("replaycompile sparrow: the post-grad pass rewrote %d attention op(s) to Sparrow's", rewritten)
        if self.then is not None:
            self.then(graph)

    def uuid(self):
        return InductorPass.hash_source(self, f"dense_layers={self.dense_layers}",
                                        self.then.uuid() if self.then is not None else "")


def install_graph_pass(vllm_config, schedule) -> None:
    """Add the pass where vLLM compiles (any compilation mode but none), ahead of a pass the user configured."""
    from vllm.config import CompilationMode

    cc = vllm_config.compilation_config
    if cc.mode == CompilationMode.NONE or getattr(vllm_config.model_config, "enforce_eager", False):
        return
    key = "post_grad_custom_post_pass"
    user = cc.inductor_compile_config.get(key)
    if isinstance(user, SparrowGraphPass):
        user = user.then
    cc.inductor_compile_config[key] = SparrowGraphPass(schedule.dense_layers, then=user)

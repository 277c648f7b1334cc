"""The inner compilers a backend hands its (rewritten) graph to (``"inductor"``, ``"aot_eager"`` or ``"eager"``), and
``own_code``, which gives each function compiled on our behalf a Dynamo cache of its own.

Shared by the replay backend, Sparrow's decode graphs and the integrations; imports nothing of the project.
"""

from __future__ import annotations

import itertools
import types

__all__ = ["INNER_COMPILERS", "inner_backend", "own_code"]

INNER_COMPILERS = ("inductor", "aot_eager", "eager")


def _run_graph_as_is(gm, example_inputs):
    return gm.forward


def inner_backend(name: str):
    """The compiler function ``(gm, example_inputs) -> callable`` for ``name``."""
    # "eager" runs the graph as it is: no functionalization, so a decode step's in-place cache writes stay in
    # place (aot_eager would copy every KV cache on every step)
    if name == "eager":
        return _run_graph_as_is
    if name == "inductor":
        from torch._inductor.compile_fx import compile_fx
        return compile_fx
    if name == "aot_eager":
        from torch._dynamo.backends.debugging import aot_eager
        return aot_eager
    raise ValueError(f"inner compiler must be one of {INNER_COMPILERS}, got {name!r}")


_code_ids = itertools.count()


def own_code(fn, name: str):
    """``fn`` with a code object of its own (named ``name_<n>``). Dynamo caches compiled code per code object:
    wrappers that shared one would evict each other (and count as recompiles) once a process holds several."""
    code = fn.__code__.replace(co_name=f"{name}_{next(_code_ids)}")
    return types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)

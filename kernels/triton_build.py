"""The Triton side every kernel module shares: Triton imported on first use, a kernel built for its device, and
the device functions the kernels call (masked tile loads, the block-sparse kernels' query-block prologue and
block-list range, one step of the online softmax).

Triton is imported when a kernel is first built, never with a module: ``attention="torch"`` and the ops' CPU
paths must import and run where Triton is not installed. A kernel module declares ``triton = tl = None`` and its
kernel sources read ``tl`` from their module's globals only when Triton compiles or interprets them; their
``tl.constexpr`` annotations stay strings (``from __future__ import annotations``), so ``build`` binds ``tl``
there late. Pure Python until then: importing this module imports no Triton.

The same Python functions become ``triton.jit`` kernels for CUDA tensors and Triton interpreter kernels for CPU
tensors, so the CPU suite runs the very source a GPU runs. Two rules follow from the interpreter, stated here
once for all the kernels:

* the kernels call only Triton builtins (``tl.full``, ``tl.reduce`` with the standard combine functions), never
  the library's ``@triton.jit`` helpers (``tl.zeros``, ``tl.max``): those are plain JIT functions, which an
  interpreted kernel cannot call, unless ``TRITON_INTERPRET=1`` was set before Triton was imported, and
  ``torch.compile`` imports Triton early. The device functions here are made callable from both
  (``_DeviceFunction``), so shared code is written once;
* the interpreter mishandles bfloat16 arithmetic, so there (only) inputs are upcast to float32 right after
  loading (``UPCAST``).
"""

from __future__ import annotations

import functools

__all__ = ["load", "bind", "build", "load_tile", "load_tile_t", "query_block", "block_list", "online_softmax"]

triton = tl = None
# the device functions, made by load() (each is the function of the same name with a leading underscore)
load_tile = load_tile_t = query_block = block_list = online_softmax = None


def load():
    """Import Triton (once) and make the device functions; returns the ``triton`` module."""
    global triton, tl, load_tile, load_tile_t, query_block, block_list, online_softmax
    if online_softmax is None:  # the last thing made: a failed first load is tried again
        import triton as _triton
        import triton.language as _tl
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        class _DeviceFunction(JITFunction):
            """A ``@triton.jit`` device function that interpreted kernels can call too: a compiled kernel
            inlines it, an interpreted kernel runs it as Python (what ``triton.jit`` returns under
            ``TRITON_INTERPRET=1``)."""

            def __init__(self, fn):
                super().__init__(fn)
                self._interpreted = InterpretedFunction(fn)

            def __call__(self, *args, **kwargs):  # only an interpreted kernel calls it from Python
                return self._interpreted(*args, **kwargs)

        triton, tl = _triton, _tl
        load_tile = _DeviceFunction(_load_tile)
        load_tile_t = _DeviceFunction(_load_tile_t)
        query_block = _DeviceFunction(_query_block)
        block_list = _DeviceFunction(_block_list)
        online_softmax = _DeviceFunction(_online_softmax)
    return triton


def bind(fn) -> None:
    """Bind ``triton`` and ``tl`` in the globals of ``fn``'s module (its kernel sources read them there)."""
    load()
    g = fn.__globals__
    if g.get("tl") is None:
        g["triton"], g["tl"] = triton, tl


@functools.lru_cache(maxsize=None)
def build(fn, interpret: bool, autotune_configs=None, autotune_key=None):
    """``fn`` as a kernel: a Triton interpreter kernel for CPU tensors (``interpret``), else ``triton.jit``,
    autotuned over ``autotune_configs()`` keyed by the argument names ``autotune_key`` when given."""
    bind(fn)
    if interpret:
        from triton.runtime.interpreter import InterpretedFunction
        return InterpretedFunction(fn)
    from triton.runtime.jit import JITFunction
    kernel = JITFunction(fn)
    if autotune_configs is not None:
        kernel = triton.autotune(configs=autotune_configs(), key=list(autotune_key))(kernel)
    return kernel


# ------------------------------------------------------------------------------------------------ device code


def _load_tile(ptr, rows, cols, s_rows, s_cols, rows_ok, cols_ok, UPCAST: tl.constexpr):
    """The [rows, cols] tile at ``ptr`` (0 outside ``rows_ok`` x ``cols_ok``), upcast to float32 if ``UPCAST``."""
    x = tl.load(ptr + rows[:, None] * s_rows + cols[None, :] * s_cols, mask=rows_ok[:, None] & cols_ok[None, :],
                other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


def _load_tile_t(ptr, rows, cols, s_rows, s_cols, rows_ok, cols_ok, UPCAST: tl.constexpr):
    """The transpose of ``_load_tile(ptr, rows, cols, ...)``: a [cols, rows] tile (K^T for ``q @ K^T``)."""
    x = tl.load(ptr + rows[None, :] * s_rows + cols[:, None] * s_cols, mask=rows_ok[None, :] & cols_ok[:, None],
                other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    return x


def _query_block(n_q, GROUP: tl.constexpr, PER_HEAD: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                 BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr):
    """The prologue of a block-sparse program over (query block, query head): the head, its KV head, the number of
    query blocks (grid axis 0), and the query, head-dim and key offsets with their bounds."""
    pid_m = tl.program_id(0)
    pid_h = tl.program_id(1)
    n_qb = tl.num_programs(0)
    kvh = pid_h // GROUP
    offs_m = pid_m * BLOCK_Q + tl.arange(0, BLOCK_Q)
    offs_d = tl.arange(0, BLOCK_D)
    offs_kn = tl.arange(0, BLOCK_K)
    m_valid = offs_m < n_q
    d_valid = offs_d < HEAD_DIM
    return pid_h, kvh, n_qb, offs_m, offs_d, offs_kn, m_valid, d_valid


def _block_list(PTR, n_blocks, kvh, PER_HEAD: tl.constexpr):
    """(start, end) of this program's list in CSR block lists ``PTR`` (``BlockLayout``): program axis 0 walks
    the ``n_blocks`` blocks, KV head ``kvh`` picks the lists of a per-head layout. (The kernels read
    ``n_blocks`` in their first lines, as they did before this was shared: the PTX stays the same.)"""
    pid = tl.program_id(0)
    lh = kvh if PER_HEAD else 0
    row = lh * (n_blocks + 1) + pid
    start = tl.load(PTR + row)
    end = tl.load(PTR + row + 1)
    return start, end


def _online_softmax(s, m_i, l_i, acc, v, PRECISION: tl.constexpr):
    """One block of keys into a running softmax: scores ``s`` [M, N] in log2 units (-inf where hidden), values
    ``v`` [N, D]; returns the new (row max, row sum, unnormalised output). ``PRECISION``: ``tl.dot``'s input
    precision (None: Triton's default)."""
    m_new = tl.maximum(m_i, tl.reduce(s, 1, tl.standard._elementwise_max))
    m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # rows with nothing visible yet
    p = tl.math.exp2(s - m_safe[:, None])
    alpha = tl.math.exp2(m_i - m_safe)
    l_i = l_i * alpha + tl.reduce(p, 1, tl.standard._sum_combine)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return m_new, l_i, acc

"""The Triton kernels' PTX for sm_90, compiled on any machine (Triton ships ptxas; no GPU needed), so a change to
the kernel sources can be checked to leave the GPU code as it was.

    python bench/kernel_ptx.py OUT_DIR                 # each kernel's instructions (registers renumbered)
    python bench/kernel_ptx.py --compare DIR_A DIR_B   # which kernels differ, and in which instructions

Typical use: ``git stash; python bench/kernel_ptx.py /tmp/a; git stash pop; python bench/kernel_ptx.py /tmp/b;
python bench/kernel_ptx.py --compare /tmp/a /tmp/b``. About 15-30 s per kernel on a CPU.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import inspect
import os
import re


def _instructions(ptx: str) -> list[str]:
    """The code's instructions with register numbers and labels dropped (they renumber when code moves) and the
    debug sections left out."""
    out = []
    for line in ptx.splitlines():
        line = line.strip()
        if line.startswith(".section"):
            break  # the debug sections follow the code
        if not line or line.startswith((".", "//", "ld.param")) or line.endswith(":") or line in "{}()":
            continue
        line = re.sub(r"%(r|rd|rs|f|p|fd|h|hh|b)\d+", r"%\1", line)
        out.append(re.sub(r"\$L__\w+", "L", line))
    return out


def _cases():
    from replaycompile.kernels import block_sparse_attention as bsa
    from replaycompile.kernels import sparse_decode as sd

    for dt in ("bf16", "fp32"):
        ptrs = dict(Q=dt, K=dt, V=dt, O=dt, DO=dt, DK=dt, DV=dt, DQ=dt, LSE="fp32", DELTA="fp32", SE="i32",
                    QPTR="i32", QIDX="i32", QFULL="i8", KVPTR="i32", KVIDX="i32", KVFULL="i8")
        for tree in (True, False):  # a packed tree (one layout), a per-KV-head budget
            meta = dict(GROUP=2, PER_HEAD=not tree, TREE=tree, UPCAST=False, PRECISION="ieee", HEAD_DIM=128,
                        BLOCK_D=128, BLOCK_Q=64, BLOCK_K=64)
            for name, fn in (("fwd", bsa._fwd_kernel), ("dkdv", bsa._bwd_dkdv_kernel), ("dq", bsa._bwd_dq_kernel)):
                yield f"{name}_{dt}_{'tree' if tree else 'budget'}", fn, ptrs, meta
        meta = dict(GROUP=4, BLOCK_G=16, HEAD_DIM=128, BLOCK_D=128, PAGE=16, PAGES_PER_ITER=4, N_SPLIT=8, UPCAST=False)
        ptrs = dict(Q=dt, K=dt, V=dt, VIS="i8", PAGES="i32", O_ACC="fp32", O_M="fp32", O_L="fp32")
        yield f"decode_{dt}", sd._decode_kernel, ptrs, meta


def write(out_dir: str) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    os.makedirs(out_dir, exist_ok=True)
    for name, fn, ptrs, meta in _cases():
        try:
            from replaycompile.kernels import triton_build
            triton_build.bind(fn)
        except ImportError:  # sources from before kernels/triton_build.py
            getattr(inspect.getmodule(fn), "_load_triton", lambda: None)()
        params = list(inspect.signature(fn).parameters)
        sig = {p: "constexpr" if p in meta else "*" + ptrs[p] if p in ptrs else
               "fp32" if p in ("scale", "scale_log2") else "i32" for p in params}
        consts = {(params.index(p),): v for p, v in meta.items()}
        k = triton.compile(ASTSource(fn=JITFunction(fn), signature=sig, constexprs=consts),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 2})
        code = _instructions(k.asm["ptx"])
        with open(os.path.join(out_dir, name + ".txt"), "w") as f:
            f.write("\n".join(code) + "\n")
        print(f"{name}: {len(code)} instructions", flush=True)


def compare(a_dir: str, b_dir: str) -> None:
    for name in sorted(os.listdir(b_dir)):
        if not os.path.exists(os.path.join(a_dir, name)):
            continue
        a = open(os.path.join(a_dir, name)).read().splitlines()
        b = open(os.path.join(b_dir, name)).read().splitlines()
        if a == b:
            print(f"{name}: the same instruction sequence ({len(a)})")
            continue
        moved = sorted({d[1:] for d in difflib.unified_diff(a, b, lineterm="", n=0)
                        if d[:1] in "+-" and not d.startswith(("+++", "---"))})
        same_multiset = collections.Counter(a) == collections.Counter(b)
        print(f"{name}: {'the same instructions, reordered' if same_multiset else 'DIFFERENT instructions'} "
              f"({len(a)} vs {len(b)}); lines that differ: {moved[:8]}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    compare(*args.dirs) if args.compare else write(args.dirs[0])

"""Where Triton is not installed the package imports and its PyTorch paths run: the kernels import Triton only on
the paths that launch a Triton kernel (issue 12)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    sys.modules["triton"] = None  # `import triton` now raises ImportError, as where it is not installed

    import torch
    import replaycompile
    import replaycompile.backend
    from replaycompile import sparrow  # noqa: F401 - the whole package imports
    from replaycompile.sparrow import rollout  # noqa: F401
    from replaycompile.kernels import block_sparse_attention as bsa, sparse_decode as sd, tree_attention  # noqa: F401
    from replaycompile.kernels.block_sparse import causal_block_mask, BlockLayout
    from replaycompile.testing.models import tiny_model
    from replaycompile.sparrow.schedule import SparrowSchedule  # noqa: F401

    torch.manual_seed(0)
    # the replay backend with the PyTorch tree attention: a batch sharing a prompt, forward and backward
    model = tiny_model("qwen3", "sdpa", num_hidden_layers=2)
    ids = torch.randint(6, 128, (4, 24))
    ids[:, :16] = ids[0, :16]
    am = torch.ones_like(ids)
    compiled = torch.compile(model, backend="replay", options={"attention": "torch", "inner": "eager"})
    compiled(input_ids=ids, attention_mask=am, use_cache=False).logits.square().mean().backward()
    st = replaycompile.last_stats()
    assert st["applied"] and st["tokens_computed"] < st["tokens_in"], st

    # the budget op's PyTorch path, forward and backward
    q, k, v = (torch.randn(1, 2, 32, 16, requires_grad=True) for _ in range(3))
    lay = BlockLayout.from_block_masks(*causal_block_mask(32, 32, 16, 16), 16, 16, 32, 32)
    out, _ = bsa.block_sparse_attention(q, k, v, list(lay.tensors()), 16, 16, 0.25, False)
    out.sum().backward()

    # the sparse decode op's CPU path (what a Sparrow rollout runs on CPU); its Triton kernel says ImportError
    q, k, v = torch.randn(2, 4, 1, 16), torch.randn(2, 2, 96, 16), torch.randn(2, 2, 96, 16)
    mask = torch.ones(2, 1, 1, 96, dtype=torch.bool)
    sd.sparse_decode(q, k, v, mask, torch.tensor([90, 1]), 0.25, 16, 1, 2, False, 0)
    sd.sparse_decode(q, k, v, mask, torch.tensor([90, 1]), 0.25, 16, 1, 2, False, 0, True)
    try:
        sd.triton_decode(torch.randn(1, 2, 1, 16), torch.randn(1, 1, 32, 16), torch.randn(1, 1, 32, 16),
                         torch.ones(1, 32, dtype=torch.bool), torch.arange(2).expand(1, 1, 2), 16, 0.25)
    except ImportError:
        pass
    else:
        raise AssertionError("triton_decode ran without Triton")
    assert sys.modules["triton"] is None
    print("ok")
""")


def test_the_torch_paths_run_without_triton():
    # PYTHONSAFEPATH: not the checkout's root first on sys.path (`-c` puts the working directory there), where our
    # kernels/ folder shadows Hugging Face's kernels package that transformers >= 5.25 imports
    # (an empty PYTHONPATH entry would mean the working directory too)
    paths = [os.path.dirname(__file__)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), PYTHONSAFEPATH="1")
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout[-3000:] + res.stderr[-3000:]

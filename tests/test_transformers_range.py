"""The transformers range pyproject.toml declares (issue 31): the family zoo on an older transformers, run by
CI in a venv of each version (``.ci/range``) with ``-m range``. The rotary families pack and are exact, flat
and as a two-level tree; the MoE families pack or decline with a reason; nothing is wrong or crashes."""

from __future__ import annotations

import pytest
from helpers import load_script

families = load_script("bench/families.py")

ROTARY = ["llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text", "phi3", "olmo", "olmo2"]
MOE = ["qwen3_moe", "mixtral"]


@pytest.mark.range
@pytest.mark.parametrize("layout", ["flat", "tree"])
@pytest.mark.parametrize("model_type", ROTARY + MOE)
def test_zoo_family_on_this_transformers(model_type, layout):
    import transformers

    r = families.run_family(model_type, layout, inner="aot_eager")
    # status and reason first: pytest cuts a long dict short, and the reason is what a failure needs
    said = f"transformers {transformers.__version__}: {r['status']}: {r['reason']} (run: {r})"
    assert r["status"] not in ("crashed", "wrong"), said
    if model_type in ROTARY:
        assert r["status"] == "packed", said
    else:
        assert r["status"] in ("packed", "declined") and (r["status"] == "packed" or r["reason"]), said
    print(f"transformers {transformers.__version__} {model_type} {layout}: {r['status']}"
          f"{' (' + r['reason'][:120] + ')' if r['reason'] else ''}")

"""Imports run one way (issues 12, 34): the backend's entry point loads no rollout or Sparrow layer above it, the
kernels import no pass, no backend and no Triton at module level, the schedule and stats modules are leaves, passes
import no runtime, the runtime only the passes' records, and Sparrow nothing of the replay runtime."""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _module_level_imports(path: pathlib.Path) -> set[str]:
    """Modules a file imports when it is imported (statements outside functions), relative ones as '.name'."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names |= {base} if node.module else {base + a.name for a in node.names}
    return names


def _all_imports(path: pathlib.Path, package: str) -> dict[str, set[str]]:
    """Every import in a file (function bodies too), as absolute module -> names imported from it."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                out.setdefault(a.name, set())
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            base = base[:len(base) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.setdefault(mod, set()).update(a.name for a in node.names)
    return out


def _project_imports(folder: str, package: str) -> dict[str, dict[str, set[str]]]:
    return {p.name: {m: n for m, n in _all_imports(p, package).items() if m.startswith("replaycompile")}
            for p in sorted((ROOT / folder).glob("*.py"))}


def test_passes_import_no_runtime():
    """Passes map graphs to graphs: they import kernels and each other, nothing of the backend, runtime, Sparrow,
    planning or stats (no call path reaches back into a pass from below, none from a pass up)."""
    for name, mods in _project_imports("passes", "replaycompile.passes").items():
        for m in mods:
            assert m.startswith(("replaycompile.passes", "replaycompile.kernels")), f"passes/{name} imports {m}"


FUSION_MODULES = ("fuse_lm_head.py", "fuse_log_softmax.py", "fuse_tree_scan.py", "selected_tokens.py",
                  "shared_chunks.py")


def test_fusion_passes_do_not_reach_back_into_the_core_rewrite():
    """The core packing step (``passes/rewrite.py``) wires the fusion passes; they import no rewrite (nor its
    record's builder), only the facts and records below them."""
    mods = _project_imports("passes", "replaycompile.passes")
    for name in FUSION_MODULES:
        assert "replaycompile.passes.rewrite" not in mods[name], f"passes/{name} imports the core rewrite"
    core = mods["rewrite.py"]
    for name in FUSION_MODULES:
        assert f"replaycompile.passes.{name[:-3]}" in core, f"passes/rewrite.py does not wire passes/{name}"


# what the runtime may read of the passes: the records they hand it and the evaluators of those records
RUNTIME_READS = {
    "replaycompile.passes.packed_graph": {"PackedGraph", "PLAN_INPUTS", "SPLIT_INPUTS", "PlanInputs", "LayoutInputs",
                                     "ShardInputs", "SliceInputs", "QuerySegmentInputs", "PairInputs"},
    "replaycompile.passes.loss_weights": {"keep_positions"},
    "replaycompile.passes": {"mask_probe"},
    "replaycompile.passes.nodes": {"count", "subgraph_module"},
    "replaycompile.passes.region": {"GraphAnalysis"},
}


def test_runtime_reads_only_the_passes_records():
    """The runtime executes: of the passes it reads the records they wrote (``PackedGraph``, the analysis) and
    their evaluators; it imports no backend and no Sparrow."""
    for name, mods in _project_imports("replaycompile/runtime", "replaycompile.runtime").items():
        for m, names in mods.items():
            assert not m.startswith(("replaycompile.backend", "replaycompile.sparrow")), f"runtime/{name}: {m}"
            if m.startswith("replaycompile.passes"):
                assert names <= RUNTIME_READS.get(m, set()), f"runtime/{name} imports {names} from {m}"


def test_sparrow_imports_nothing_of_the_replay_runtime():
    """Sparrow is its own product: kernels, its own pass (``sparrow_rewrite``), the stats record and the inner
    compilers; nothing of the replay backend, its runtime or its passes."""
    allowed = ("replaycompile.sparrow", "replaycompile.kernels", "replaycompile.passes.sparrow_rewrite",
               "replaycompile.stats", "replaycompile.inner")
    for name, mods in _project_imports("replaycompile/sparrow", "replaycompile.sparrow").items():
        for m in mods:
            assert m.startswith(allowed), f"sparrow/{name} imports {m}"


def test_kernels_import_only_torch_and_each_other():
    """Kernels know tensors: no pass, no backend, no rollout, and Triton only inside the paths that build a kernel
    (kernels/triton_build.py imports it on first use)."""
    for path in sorted((ROOT / "kernels").glob("*.py")):
        for name in _module_level_imports(path):
            assert not name.startswith(("replaycompile", "passes", "triton", "..")), f"{path.name} imports {name}"


def test_schedule_and_stats_are_leaves():
    assert _module_level_imports(ROOT / "replaycompile" / "stats.py") <= {
        "__future__", "dataclasses", "itertools", "logging", "threading", "typing"}
    project = {n for n in _module_level_imports(ROOT / "replaycompile" / "sparrow" / "schedule.py")
               if n.startswith(("replaycompile", "."))}
    assert project == {"replaycompile.kernels.block_sparse"}, project


def test_integrations_import_no_framework_at_module_level():
    """``import replaycompile.integrations.verl`` (or ``.trl``) works where the framework is not installed: a
    framework is imported inside the functions that need one (the default install imports none)."""
    frameworks = ("verl", "trl", "accelerate", "tensordict", "ray", "vllm", "openrlhf")
    # the vLLM plugin's attention backend and graph pass are modules vLLM itself loads (its backend registry, the
    # engine-start hook), in processes where vLLM is running: they import it at module level
    loaded_by_vllm = {"vllm/attention.py", "vllm/graph.py"}
    root = ROOT / "replaycompile" / "integrations"
    paths = [p for p in sorted(root.rglob("*.py")) if p.relative_to(root).as_posix() not in loaded_by_vllm]
    assert root / "vllm" / "__init__.py" in paths
    for path in paths:
        for name in _module_level_imports(path):
            assert name.split(".")[0] not in frameworks, f"{path.name} imports {name} at module level"


SCRIPT = textwrap.dedent("""
    import sys
    import replaycompile.backend  # what torch.compile(backend="replay") loads through the entry point
    # (the package replaycompile.sparrow is a lazy namespace: SparrowSchedule's module loads, nothing above it)
    above = ["replaycompile.sparrow." + m for m in ("rollout", "calibration", "acceptance_metric", "controller", "losses",
                                                    "distill", "retrieval", "graph")]
    assert not [m for m in above if m in sys.modules], [m for m in above if m in sys.modules]
    assert "triton" not in sys.modules  # nothing built a Triton kernel yet
    import replaycompile
    replaycompile.sparrow.calibrate  # the lazy names load the layer above on first use
    assert "replaycompile.sparrow.rollout" in sys.modules and "replaycompile.sparrow.calibration" in sys.modules
    print("ok")
""")


def test_the_entry_point_loads_no_rollout_layer():
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONSAFEPATH="1"),
                         timeout=600)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stdout[-3000:] + res.stderr[-3000:]


def test_the_checkouts_top_level_folders_shadow_no_package_of_their_name():
    """``kernels`` is also Hugging Face's kernel-hub package, which transformers >= 5.25 imports: from the
    checkout's root our ``kernels/`` folder was found first and transformers failed to build GPT-2
    (``cannot import name 'CUDAProperties' from 'kernels'``). Under pytest the root is off sys.path, and the
    project's folders import only as ``replaycompile.kernels`` / ``replaycompile.passes``."""
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    for name in ("kernels", "passes"):
        spec = importlib.util.find_spec(name)
        # (a package of that name installed in a venv inside the checkout is not the folder)
        assert spec is None or pathlib.Path(spec.origin or "").resolve().parent != root / name, (name, spec)
    import replaycompile.kernels as ours

    assert pathlib.Path(ours.__file__).resolve().parent == root / "kernels"


def test_sparrow_public_names_are_not_shadowed_by_its_modules():
    """``replaycompile.sparrow`` loads its names lazily: a submodule named like a public name would replace it as
    the package's attribute once imported (``sparrow.acceptance(...)`` then called a module). Every public name
    is what its module defines, after every submodule is imported."""
    import importlib
    import pkgutil
    import types

    import replaycompile.sparrow as sparrow

    for m in pkgutil.iter_modules(sparrow.__path__):
        importlib.import_module(f"replaycompile.sparrow.{m.name}")
    for name in sparrow.__all__:
        assert not isinstance(getattr(sparrow, name), types.ModuleType), name

"""`replaycompile bench --quick` end to end at tiny shapes: it writes its JSON, markdown and plots, every system
computes eager's loss and gradients, and a rerun resumes (skips the cells already in results.jsonl)."""
import importlib.util
import json

import pytest

pytest.importorskip("tqdm")
pytest.importorskip("matplotlib")

from replaycompile.cli import main  # noqa: E402

EXACT = 1e-5
HAVE_PG = importlib.util.find_spec("prefix_grouper") is not None  # the [bench] extra; CI installs [test]


def _run(out, systems, workloads, extra=()):
    return main(["bench", "--quick", "--out", str(out), "--reps", "1", "--workloads", *workloads,
                 "--systems", *systems, *extra])


def _check(out, systems, workloads, capsys):
    records = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["workload"], r["system"]) for r in records} == {(w, s) for w in workloads for s in systems}
    for name in ("bench.md", "bench.json", "speedup_vs_sharing.png", "step_time_vs_G.png", "efficiency.png"):
        assert (out / name).stat().st_size > 0, name
    for r in records:
        if r["system"] == "flex_tree":  # GPU only: skipped on CPU, and saying why
            assert "GPU" in r["skipped"] and "step_s" not in r
            continue
        if r["system"] == "prefix_grouper" and (r["workload"] == "nosharing" or not HAVE_PG):
            assert ("shares nothing" if HAVE_PG else "not installed") in r["skipped"]
            continue
        assert r["step_s"] > 0, r
        # the timed steps' kernel time and page faults, and the peak from its own (untimed) step
        assert r["kernel_cpu_s"] >= 0 and r["minor_faults"] >= 0 and r["peak_bytes_in_process"] >= 0, r
        assert r["loss_rel"] < EXACT, r
        if r["system"] != "replay_detach":  # an approximation of the gradient, by design
            assert r["grad_rel_worst"] < EXACT, r
        if r["system"] == "replay_exact" and r["workload"] != "nosharing":
            assert r["stats"]["applied"] and r["stats"]["tokens_computed"] < r["stats"]["tokens_in"], r
    md = (out / "bench.md").read_text()
    assert "FLOP ideal" in md and "kernel s (page faults)" in md and all(f"| {r['label']}" in md for r in records)
    # a rerun finds every cell done and runs none
    lines = (out / "results.jsonl").read_text()
    capsys.readouterr()
    assert _run(out, systems, workloads) == 0
    assert "0 cells run now" in capsys.readouterr().out
    assert (out / "results.jsonl").read_text() == lines
    return records


def test_tree_workloads_share_what_they_say():
    """"tree": rows 0..G/2-1 share a stem, the others' stems are their own; "tree2": each half shares its own."""
    from helpers import load_script

    h = load_script("bench/harness.py")
    for kind, halves_share in (("tree", (True, False)), ("tree2", (True, True))):
        w = h.Workload(kind, 8, 40, 4, 6, kind=kind, stem=12)
        ids, am, _, _ = w.batch(vocab=500, k=0)
        p = 40  # k=0: the prompt is not moved
        assert (ids[:, :p] == ids[:1, :p]).all()
        stems = ids[:, p:p + 12]
        for half, shared in zip((stems[:4], stems[4:]), halves_share):
            assert bool((half == half[:1]).all()) == shared, (kind, half)
        assert not (stems[0] == stems[4]).all()  # the two halves never share a stem


def test_prefix_grouper_flops_between_replay_and_rows():
    """Prefix Grouper's FLOP count (the prompt once, each completion on its own) is row by row's for one row, less
    than it and no less than replay's where rows share a prompt, and more than its prompt-only share on a tree."""
    from helpers import load_script

    h = load_script("bench/harness.py")
    _, cfg = h.build_model("qwen3", True, "cpu")
    one = h.flop_counts(cfg, h.Workload("one", 1, 40, 4, 8).batch(cfg.vocab_size, 0))
    assert one["prompt_shared"] == pytest.approx(one["rows"])
    for kind in ("prompt", "tree"):
        f = h.flop_counts(cfg, h.Workload(kind, 4, 40, 4, 8, kind=kind, stem=12).batch(cfg.vocab_size, 0))
        assert f["ideal"] <= f["prompt_shared"] < f["rows"], (kind, f)
        if kind == "tree":  # the shared stem is replay's alone to share
            assert f["prompt_shared"] > 1.1 * f["ideal"], f


def test_flop_model_counts_experts_and_windows():
    """The MoE model's routed experts cost what the dense MLP does (plus the router), and a sliding window caps
    the pairs of rows, Prefix Grouper and the ideal, not the padded baseline's."""
    from helpers import load_script

    h = load_script("bench/harness.py")
    batch = h.QUICK_WORKLOADS["tree"].batch(2000, 0)
    f = {m: h.flop_counts(h.build_model(m, True, "cpu")[1], batch) for m in ("qwen3", "qwen3_moe", "mistral_window")}
    _, moe = h.build_model("qwen3_moe", True, "cpu")
    router = 3 * 2 * moe.hidden_size * moe.num_experts * moe.num_hidden_layers  # fwd+bwd, per token
    assert f["qwen3_moe"]["rows"] - f["qwen3"]["rows"] == pytest.approx(router * batch[1].sum().item())
    assert f["mistral_window"]["padded_keep"] == f["qwen3"]["padded_keep"]
    for k in ("rows", "prompt_shared", "ideal"):
        assert f["mistral_window"][k] < f["qwen3"][k], k


@pytest.mark.skipif(not HAVE_PG, reason="prefix_grouper is the [bench] extra")
def test_peers_honour_the_sliding_window():
    """On the windowed model (a window of 12 tokens, prompts of 48), Prefix Grouper's adapter and the dense tree
    mask give eager's loss and gradients on a prompt group and a tree, and the window binds: without it the loss
    differs."""
    from helpers import load_script

    h = load_script("bench/harness.py")
    model, cfg = h.build_model("mistral_window", True, "cpu")
    assert cfg.sliding_window == 12
    systems = {n: h.SYSTEMS[n].build(None) for n in ("eager_keep", "prefix_grouper", "dense_tree_mask")}

    def run(name, batch):
        model.zero_grad(set_to_none=True)
        loss = systems[name](model, batch)
        return loss, h.lc.grads_of(model)

    for w in ("reference", "tree"):
        batch = h.QUICK_WORKLOADS[w].batch(cfg.vocab_size, 0)
        ref_loss, ref = run("eager_keep", batch)
        for name in ("prefix_grouper", "dense_tree_mask"):
            loss, grads = run(name, batch)
            c = h.lc.compare(grads, ref, loss, ref_loss)
            assert c["loss_rel"] < EXACT and c["grad_rel_worst"] < EXACT, (w, name, c)
        model.config.sliding_window = None
        try:
            unwindowed, _ = run("prefix_grouper", batch)
        finally:
            model.config.sliding_window = 12
        assert abs(unwindowed.item() - ref_loss.item()) > 1e-4 * abs(ref_loss.item()), (w, unwindowed, ref_loss)


def test_bench_quick_end_to_end(tmp_path, capsys):
    """The systems that run without compiling (the default suite's budget; the compiled ones are in the slow test
    below: compiling replay twice, for the two shapes of the warm-up, takes minutes on a loaded 2-core machine)."""
    systems = ["eager", "eager_keep", "prefix_grouper", "dense_tree_mask", "flex_tree"]
    workloads = ["reference", "tree"]
    assert _run(tmp_path, systems, workloads, ["--memory-systems"]) == 0
    records = _check(tmp_path, systems, workloads, capsys)
    ref = {r["system"]: r for r in records if r["workload"] == "reference"}
    # the ratios are the medians' quotient, and the sharing shows in the ideal
    assert ref["dense_tree_mask"]["vs_eager_keep"] == pytest.approx(ref["eager_keep"]["step_s"]
                                                                    / ref["dense_tree_mask"]["step_s"])
    assert ref["eager"]["token_ratio"] > 2 and ref["eager"]["flop_ideal_vs_keep"] > 1


@pytest.mark.slow
def test_bench_quick_every_system(tmp_path, capsys):
    """Every system (replay and plain inductor compiled with aot_eager), the no-sharing batch, and a peak measured
    in a subprocess."""
    systems = ["eager", "eager_keep", "eager_rows", "inductor", "replay_exact", "replay_detach", "prefix_grouper",
               "dense_tree_mask", "flex_tree"]
    workloads = ["reference", "tree", "nosharing"]
    assert _run(tmp_path, systems, workloads, ["--memory-systems", "eager_keep"]) == 0
    records = _check(tmp_path, [s for s in systems], workloads, capsys)
    keep = [r for r in records if r["system"] == "eager_keep" and r["workload"] == "reference"][0]
    assert keep["peak_bytes_subprocess"] > 0


def test_report_without_records_refuses(tmp_path):
    """`--report` on a folder with no records of the model says so instead of overwriting tables with empty ones."""
    (tmp_path / "bench.md").write_text("an earlier report")
    with pytest.raises(SystemExit, match="nothing to report"):
        main(["bench", "--quick", "--report", "--out", str(tmp_path)])
    assert (tmp_path / "bench.md").read_text() == "an earlier report"


def test_bench_outside_a_checkout_says_to_clone(tmp_path, monkeypatch, capsys):
    """An installed copy (site-packages: no bench/ beside the package) refuses plainly and names what to do: clone
    the repository, install it editable, run the same command from there."""
    import replaycompile.cli as cli

    monkeypatch.setattr(cli, "__file__", str(tmp_path / "site-packages" / "replaycompile" / "cli.py"))
    assert cli.source_checkout() is None
    assert main(["bench", "ops", "--reps", "1"]) == 2
    err = capsys.readouterr().err
    assert "needs a source checkout" in err and "git clone" in err and "pip install -e '.[bench]'" in err
    assert "replaycompile bench ops --reps 1" in err

"""bench/loss_forms.py's loss forms under backend="replay" (inner aot_eager) on a tiny model: every form's loss and
every parameter's gradient equal its own eager step's (fp32: loss rel 1e-5, worst parameter grad rel 1e-4), and
the backend packs it (last_stats()["applied"], printed: run with -s to see it and the fallback reason)."""
import pytest
import torch
from helpers import load_script

import replaycompile
from replaycompile.testing.models import tiny_model

lf = load_script("bench/loss_forms.py")

# forms the backend packs today (all of them, d and d2 included: HF's cross-entropy loss and F.cross_entropy
# over every position); a form that stops packing fails here, with the reason in the message
PACKS = {"a", "b", "c", "d", "d2", "e", "f", "g", "h"}
FAST = ("a", "c", "d", "d2", "e", "f", "g", "h")  # about 5 s each on 2 cores
SLOW = ("b",)  # the logits_to_keep form, covered by the rest of the suite


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    model = tiny_model("qwen3", "sdpa", hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=16, vocab_size=128)
    batch = lf.make_batch(model, group=4, prompt=16, cmin=4, cmax=8, seed=3)
    return model, batch


def _step(fn, model, batch, names):
    model.zero_grad(set_to_none=True)
    loss = fn(model, *[batch[k] for k in names])
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


def _check(form, setup):
    model, batch = setup
    fn, names = lf.FORMS[form][0], lf.FORMS[form][1]
    ref_loss, ref = _step(fn, model, batch, names)
    got_loss, got = _step(lf.compiled(form, "aot_eager"), model, batch, names)
    st = replaycompile.last_stats()
    print(f"form {form}: applied={st['applied']}, tokens {st['tokens_computed']}/{st['tokens_in']}, "
          f"reason={st['fallback_reason']!r}")
    c = lf.lc.compare(got, ref, got_loss, ref_loss)
    assert set(got) == set(ref)
    assert c["loss_rel"] <= lf.LOSS_TOL, (form, c)
    assert c["grad_rel_worst"] <= lf.GRAD_TOL, (form, c)
    if form in PACKS:
        assert st["applied"], (form, st["fallback_reason"], st["graphs"])
    # the best-by-hand step computes the same objective
    best, bnames = lf.FORMS[form][2], lf.FORMS[form][3]
    if best is not None:
        bl, bg = _step(best, model, batch, bnames)
        cb = lf.lc.compare(bg, ref, bl, ref_loss)
        assert cb["loss_rel"] <= lf.LOSS_TOL and cb["grad_rel_worst"] <= lf.GRAD_TOL, (form, "best", cb)


# TRL's selective_log_softmax calls an lru_cache-wrapped check, which Dynamo traces through (and warns about)
@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a `functools.lru_cache`")
@pytest.mark.parametrize("form", FAST)
def test_form_exact(form, setup):
    _check(form, setup)


@pytest.mark.slow
@pytest.mark.parametrize("form", SLOW)
def test_form_exact_slow(form, setup):
    _check(form, setup)


def test_semantics_agree(setup):
    """Forms a, b, c, d2, e, f compute one objective; g and h add their terms; the row-by-row step equals each."""
    model, batch = setup
    vals = {f: _step(lf.FORMS[f][0], model, batch, lf.FORMS[f][1])[0].item() for f in lf.FORMS}
    for f in ("b", "c", "d2", "e", "f"):
        assert vals[f] == pytest.approx(vals["a"], rel=1e-5), (f, vals)
    assert vals["g"] != pytest.approx(vals["a"], rel=1e-6) and vals["h"] != pytest.approx(vals["a"], rel=1e-6)
    for kind, f in (("grpo", "a"), ("nll", "d"), ("grpo_ent", "g"), ("grpo_kl", "h")):
        model.zero_grad(set_to_none=True)
        rows = lf.rows_step(model, kind, batch["ids"], batch["am"], batch["adv"], batch["old"], batch["cm"],
                            batch["ref"])
        assert rows.item() == pytest.approx(vals[f], rel=1e-5), (kind, rows.item(), vals[f])

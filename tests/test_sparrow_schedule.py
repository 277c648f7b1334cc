"""Sparrow's schedule (replaycompile/sparrow/schedule.py): budgets, validation, JSON, and the backend's schedule option."""

from __future__ import annotations

import json

import pytest

import replaycompile
from replaycompile.sparrow.schedule import SparrowSchedule


def test_schedule_budget_and_json_round_trip(tmp_path):
    s = SparrowSchedule(pages=(4, 8, 8, 16), bucket_tokens=64, dense_layers=(0,))
    assert s.topk_pages(1) == 4 and s.topk_pages(64) == 4 and s.topk_pages(65) == 8 and s.topk_pages(10_000) == 16
    assert s.budget(16) == 1  # one page exists
    assert s.budget(190) == 8 + 3 and s.budget_tokens(190) == 176 and s.budget(200) == 13  # all 13 pages
    path = tmp_path / "schedule.json"
    s.save(path)
    assert json.loads(path.read_text())["format"] == "replaycompile.sparrow_schedule"
    t = SparrowSchedule.load(path)
    assert t == s and t.to_json() == s.to_json()


@pytest.mark.parametrize("kwargs,match", [
    (dict(pages=(8, 4)), "must not decrease.*bucket 1 keeps 4"),
    (dict(pages=()), "empty"),
    (dict(pages=(4, -1)), r"pages\[1\]"),
    (dict(pages=(4,), page_size=12), "power of two"),
    (dict(pages=(4,), bucket_tokens=100), "multiple of page_size"),
    (dict(pages=(4,), local_pages=0), "local_pages"),
    (dict(pages=(4,), dense_layers=(1, 1)), "dense_layers"),
    (dict(pages=(1,) * 300), "at most 256"),
    (dict(pages=(4,), page_score="mean"), "page_score='mean'; known page scores are 'bound', 'centroid'"),
])
def test_schedule_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SparrowSchedule(**kwargs)


def test_schedule_json_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown field.*budget"):
        SparrowSchedule.from_dict({"pages": [1], "budget": 3})
    with pytest.raises(ValueError, match="not a Sparrow schedule"):
        SparrowSchedule.from_dict({"format": "other", "pages": [1]})
    with pytest.raises(ValueError, match="missing field 'pages'"):
        SparrowSchedule.from_dict({})
    bad = tmp_path / "bad.json"
    bad.write_text("{pages: 1")
    with pytest.raises(ValueError, match="not valid JSON"):
        SparrowSchedule.load(bad)


def test_page_score_round_trips_and_old_files_load_with_the_default(tmp_path):
    """``page_score`` is part of the JSON and of the compiled structure; a file written before the field existed
    (no ``page_score``) loads with the default, the bound score."""
    s = SparrowSchedule(pages=(4,), page_score="centroid")
    t = SparrowSchedule.from_json(s.to_json())
    assert t.page_score == "centroid" and t == s and t.structure()["page_score"] == "centroid"
    assert SparrowSchedule(pages=(4,)).page_score == "bound"
    old = s.to_dict()
    del old["page_score"]
    assert SparrowSchedule.from_dict(old).page_score == "bound"
    assert SparrowSchedule(pages=(4,)).structure() != s.structure()  # another score is another compiled graph


def test_set_pages_validates_first():
    s = SparrowSchedule(pages=(2, 4))
    with pytest.raises(ValueError, match="must not decrease"):
        s.set_pages((4, 2))
    assert s.pages == (2, 4)
    s.set_pages((1, 3, 9))
    assert s.pages == (1, 3, 9) and s.table(padded=True).shape == (256,) and int(s.table(padded=True)[-1]) == 9


def test_backend_accepts_schedule_paths_and_rejects_other_values(tmp_path):
    p = tmp_path / "s.json"
    SparrowSchedule(pages=(3,)).save(p)
    assert replaycompile.parse_options({"schedule": str(p)}).schedule.pages == (3,)
    with pytest.raises(ValueError, match="SparrowSchedule"):
        replaycompile.parse_options({"schedule": [3, 4]})

import os
import pathlib
import sys

# Compiled kernels land inside the checkout (CI's clean clone starts cold, later runs reuse them).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(pathlib.Path(__file__).resolve().parents[1] / ".torchinductor_cache"))
sys.path.insert(0, os.path.dirname(__file__))

import torch  # noqa: E402
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# HYPOTHESIS_PROFILE=no-shrink: report the first failing example at once (shrinking a failure of a
# compiled model can take minutes); used when checking that deliberate bugs are caught
settings.register_profile("no-shrink", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch: Dynamo remembers per function which inputs changed (automatic dynamic),
    which would let one test's shapes decide another's graphs."""
    torch._dynamo.reset()
    yield


@pytest.fixture
def replay_graphs(monkeypatch):
    """Every ReplayGraph the backend builds during the test."""
    import replaycompile.backend as backend
    from helpers import instances_of

    return instances_of(monkeypatch, backend.ReplayGraph)

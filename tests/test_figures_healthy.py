"""The committed results in figures/ hold no run past the divergence bound as healthy.

A run that passed the bound (sgd.DIVERGENCE_BOUND, the rule measure.rules.DIVERGENCE_RULE) stops
there, is flagged and is kept out of every mean, so no number any healthy run recorded lies beyond
the bound itself: a hinge loss is at most 1 + |F| <= 1 + the bound, and every other number (scores,
pattern terms, gates, counts) stays below it.  A step size whose run diverged is never the chosen
one.  If this fails, a JSON of figures/ was written before the bound or by code that lets a broken
run count."""
import json
from pathlib import Path

import pytest

from numpy_mamba.sgd import DIVERGENCE_BOUND

FIGURES = Path(__file__).resolve().parents[1] / "figures"


def numbers(obj, path=()):
    """(key path, number) for every number of a JSON document."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from numbers(v, path + (k,))
    elif isinstance(obj, list):
        for v in obj:
            yield from numbers(v, path)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


def selections(obj):
    """Every step-size record (a dict with "candidates" and "chosen") of a JSON document."""
    if isinstance(obj, dict):
        if "candidates" in obj and "chosen" in obj:
            yield obj
        for v in obj.values():
            yield from selections(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from selections(v)


@pytest.mark.parametrize("path", sorted(FIGURES.glob("*.json")), ids=lambda p: p.name)
def test_no_run_past_the_divergence_bound_counts_as_healthy(path):
    doc = json.loads(path.read_text())
    for keys, value in numbers(doc):
        assert abs(value) <= DIVERGENCE_BOUND, (f"{path.name}: {'/'.join(map(str, keys))} = {value:.3g}, beyond the "
                                                f"divergence bound {DIVERGENCE_BOUND:g}")
        if keys and "loss" in str(keys[-1]):
            assert value <= 1 + DIVERGENCE_BOUND, f"{path.name}: a loss of {value:.3g} at {'/'.join(map(str, keys))}"
    for record in selections(doc):
        chosen = [c for c in record["candidates"] if c["fields"] == record["chosen"]]
        assert record["chosen"] is None or (chosen and not chosen[0]["diverged"]), f"{path.name}: a diverged step size chosen"
    for run in doc.get("runs", []) if isinstance(doc.get("runs"), list) else []:
        if isinstance(run, dict) and run.get("diverged_at") is not None:
            assert all(int(t) < run["diverged_at"] for t in run.get("checkpoints", {})), \
                f"{path.name}: a diverged run measured after it diverged"


@pytest.mark.parametrize("doc", [{"scores": [1.0, 2e6]}, {"loss_curve": [0.5, 1 + 1.5e6]}], ids=["score", "loss"])
def test_a_number_past_the_bound_fails_the_check(doc, tmp_path):
    """If this fails, the check above cannot see a run that passed the divergence bound (a score of 2e6
    that must fail it, and 1e30 is not the bound)."""
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(AssertionError, match="divergence bound|a loss of"):
        test_no_run_past_the_divergence_bound_counts_as_healthy(path)

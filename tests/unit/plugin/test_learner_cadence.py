"""`Learner.refit_dirty` follows the refit cadence (policies/refit_cadence.py), new with
the simulator's speed aim (before, every dirty app was refitted). The store is a stand-in here:
tests/integration/test_learner.py runs the same rule against the real Redis."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

import plugin.learning.learner as learner_module
import predictor
from plugin.appkey import AppKey
from plugin.config import Config, LearnerConfig
from plugin.learning.learner import Learner, RefitOutcome
from plugin.store.curves import CurveRecord

NOW = 1_800_000_000.0


def _curve(sizes: tuple[int, ...]) -> predictor.Curve:
    runtimes = [100.0 * (0.1 + 0.9 / n) for n in sizes]
    fit = predictor.fit_observations(predictor.prepare(sizes, runtimes), method="adept")
    return predictor.Curve.from_fit(fit)


@dataclass
class _App:
    record: CurveRecord | None
    added: int = 0
    sizes: list[int] = field(default_factory=list)


class _Store:
    """The store calls refit_dirty makes, over a dict of apps (dirty, in this order)."""

    def __init__(self, apps: dict[AppKey, _App]) -> None:
        self.apps = apps
        self.asked: list[tuple[float | None, int | None]] = []

    def dirty_apps(
        self, ready_before: float | None = None, limit: int | None = None
    ) -> list[AppKey]:
        self.asked.append((ready_before, limit))
        return list(self.apps)[:limit]

    def curve_record(self, app: AppKey) -> CurveRecord | None:
        return self.apps[app].record

    def added_since(self, app: AppKey, added_total: int) -> tuple[int, list[int]]:
        state = self.apps[app]
        assert state.record is not None
        assert added_total == state.record.added_total
        return state.added, state.sizes


def _record(curve: predictor.Curve | None, n: int, age_s: float = 60.0) -> CurveRecord:
    return CurveRecord(curve, 1, 1, NOW - age_s, n, "adept", False, added_total=n)


@pytest.fixture
def refitted(monkeypatch: pytest.MonkeyPatch) -> list[AppKey]:
    out: list[AppKey] = []

    def fake_refit(store: Any, app: AppKey, method: str = "adept", **_: Any) -> RefitOutcome:
        out.append(app)
        return RefitOutcome(app, "written", 1, 0)

    monkeypatch.setattr(learner_module, "refit_app", fake_refit)
    return out


def _learner(store: _Store, **settings: Any) -> Learner:
    config = Config(learner=LearnerConfig(refit_debounce_s=0.0, **settings))
    return Learner(store, reader=None, config=config, clock=lambda: NOW)  # type: ignore[arg-type]


def test_only_the_apps_whose_refit_is_due_are_refitted_up_to_the_limit(
    refitted: list[AppKey],
) -> None:
    curve = _curve((1, 2, 4, 8))
    waiting = AppKey("waiting")  # 3 of ⌈0.5 · 8⌉ runs at known sizes: stays dirty
    grown, new_size, old = AppKey("grown"), AppKey("new-size"), AppKey("old")
    never, legacy, last = AppKey("never"), AppKey("legacy"), AppKey("last")
    apps = {
        waiting: _App(_record(curve, 8), 3, [1, 2, 4]),
        grown: _App(_record(curve, 8), 4, [1, 2, 4, 8]),
        new_size: _App(_record(curve, 8), 1, [16]),
        old: _App(_record(curve, 8, age_s=2 * 3600.0), 1, [4]),
        never: _App(None),  # no curve record yet
        legacy: _App(CurveRecord(curve, 1, 1, NOW, 8, "adept", False)),  # no added_total
        last: _App(_record(None, 8), 1, [4]),  # the last fit was refused
    }
    store = _Store(apps)
    learner = _learner(store, refit_growth=0.5, refit_max_age_h=1.0)
    outcomes = learner.refit_dirty(max_apps=5)
    assert refitted == [grown, new_size, old, never, legacy]  # `waiting` took no slot
    assert [o.app for o in outcomes] == refitted
    assert store.asked == [(NOW, None)]  # every ready app is looked at
    refitted.clear()
    learner.refit_dirty(max_apps=50)
    assert waiting not in refitted
    assert last in refitted


def test_g_zero_refits_every_dirty_app_as_before(refitted: list[AppKey]) -> None:
    curve = _curve((1, 2, 4, 8))
    apps = {AppKey(f"a{k}"): _App(_record(curve, 100), 1, [4]) for k in range(4)}
    store = _Store(apps)
    _learner(store, refit_growth=0.0).refit_dirty(max_apps=3)
    assert refitted == list(apps)[:3]
    assert store.asked == [(NOW, 3)]

"""A fitted speedup curve as a value: what the store keeps and the policies evaluate.

A Curve holds the fitted instance's parameters, the facts about its observations a policy or a
report needs (which sizes were observed, whether T(1) was), and the diagnostics. It evaluates
runtime, speedup and efficiency at any sizes and round-trips through a JSON-able dict, so the
plugin layer can store it without knowing the model.

When model selection (models/selection.py) chose another model than ADEPT's Downey curve,
`selected` holds it: runtime, speedup, efficiency, max_useful_n and pws_n then come from it,
while A, σ and the diagnostics still describe the Downey fit (the one interface the policies
use stays the same).

Efficiency is offered two ways because T(1) is often unknown: relative to the model's T(1)
(`efficiency`), and relative to the smallest observed size (`efficiency_vs_smallest`,
E(n) = n0·T(n0) / (n·T(n))), which uses only what was measured.

An unidentified curve carries `plausible`, the instances of its last phase that its
observations cannot tell from it (predictor/adept.py, "Plausible instances"): beyond the
largest observation they part, and `runtime_interval` reckons with them, so a decision that
reads the interval (the time limit reads its upper end) sees how little the data say there.

A curve whose runs show a shape the Downey model cannot express carries `speaker`
(shape.py): the model of the zoo that gives the runtime at the sizes it speaks for, with the
Downey curve's runtime there an alternative its interval reckons with, as `predict` does.

A curve fitted from heterogeneous runs (covariate.py, heterogeneous.py) carries `covariate`:
the exponent β of the requested time, the reference limit its T(1) is for, the noise level
estimated from repeated sizes and the lack-of-fit test of its shape against that noise.
`for_limit` gives the curve of one job, its runtimes scaled by (L/L_ref)^β; its shape (every
ratio a size rule reads) is the same.

Stored format. CURVE_FORMAT 2 adds "speaker", 3 "covariate"; a format-1 document (written
before the speaker) is read as a curve without one, and its interval is computed with today's
calibration from the fields it has (intervals.py); a format-2 one as a curve without a
covariate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from predictor.covariate import Covariate, scaled_segments
from predictor.diagnostics import Anomaly, Diagnostics, Pattern, ReliabilityProblem
from predictor.downey import FloatArray, relative_runtime
from predictor.fitting import Fit
from predictor.intervals import LEVEL, SPREAD, interval
from predictor.models import Choice, ModelFit
from predictor.segments import Segment, segment_of, segment_runtime
from predictor.shape import Speaker

CURVE_FORMAT = 3
#: Formats `from_dict` reads: 1 is a curve stored before `speaker` existed, 2 before
#: `covariate`.
READABLE_FORMATS = (1, 2, 3)


@dataclass(frozen=True)
class Curve:
    """A Downey curve in the observations' time unit (seconds for the CLI contract)."""

    A: float
    sigma: float
    t1: float
    t1_known: bool
    identified: bool
    method: str
    fit_error: float
    max_useful_n: int | None
    pws_n: int
    observed_n: tuple[int, ...]
    runs: int
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    segments: tuple[Segment, ...] = ()
    selected: ModelFit | None = None
    model: str = "downey"
    residual: float = 0.0
    plausible: tuple[Segment, ...] = ()
    speaker: Speaker | None = None
    covariate: Covariate | None = None

    def for_limit(self, limit_s: float | None, written_for: int | None = None) -> Curve:
        """The curve of a job that asks `limit_s` seconds for `written_for` nodes: with a
        covariate, T(1) and every phase's scaled by `Covariate.scale_for` (covariate.py);
        itself without one or without a limit."""
        if self.covariate is None or limit_s is None or not 0.0 < limit_s < np.inf:
            return self
        k = self.covariate.scale_for(limit_s, written_for)
        if not 0.0 < k < np.inf:
            return self
        return replace(
            self,
            t1=self.t1 * k,
            segments=scaled_segments(self.segments, k),
            plausible=scaled_segments(self.plausible, k),
        )

    @property
    def phases(self) -> tuple[Segment, ...]:
        """The instance of every phase; a single-phase curve is its (A, σ, T(1)) alone."""
        if self.segments:
            return self.segments
        return (Segment(self.observed_n, self.A, self.sigma, self.t1, self.identified),)

    @classmethod
    def from_fit(
        cls, fit: Fit, diagnostics: Diagnostics | None = None, choice: Choice | None = None
    ) -> Curve:
        """The curve of a fit; with a model choice that is not ADEPT, that model's curve."""
        obs = fit.observations
        chosen = choice.fit if choice is not None else None
        max_useful_n, pws_n = fit.max_useful_n, fit.pws_n
        if chosen is not None:
            max_useful_n = chosen.max_useful_n
            pws_n = chosen.pws_n if chosen.pws_n is not None else fit.pws_n
        return cls(
            A=fit.A,
            sigma=fit.sigma,
            # T(1): observed, else the chosen model's own (speedups stay consistent with it).
            t1=fit.t1 if chosen is None or fit.t1_known else float(chosen.runtime(1.0)),
            t1_known=fit.t1_known,
            identified=fit.identified,
            method=fit.method,
            # The error of the curve the scheduler will use: the chosen model's when there is one.
            fit_error=(
                fit.fit_error
                if chosen is None
                else float(np.max(np.abs(chosen.runtime(obs.n) / obs.runtime - 1.0)))
            ),
            max_useful_n=max_useful_n,
            pws_n=pws_n,
            observed_n=tuple(int(k) for k in obs.n),
            runs=int(obs.runs.sum()),
            diagnostics=diagnostics if diagnostics is not None else fit.diagnostics,
            segments=fit.segments if len(fit.segments) > 1 else (),
            selected=chosen,
            model=chosen.model if chosen is not None else "downey",
            residual=_residual(fit, chosen),
            # Alternatives to the Downey curve only: another model's runtime is not theirs.
            plausible=fit.plausible if chosen is None else (),
            speaker=fit.speaker if chosen is None else None,
        )

    @property
    def reliable(self) -> bool:
        """No reliability problem (an unidentified curve whose data already reach the sizes
        that matter is reliable: reliability.py)."""
        return self.diagnostics.reliable

    @property
    def smallest_observed(self) -> int:
        return self.observed_n[0]

    @property
    def largest_observed(self) -> int:
        return self.observed_n[-1]

    def runtime(self, n: ArrayLike) -> FloatArray:
        """Predicted runtime: the selected model's, else the Downey phase of the closest
        observation, or the speaker's where it speaks."""
        if self.selected is not None:
            return self.selected.runtime(n)
        downey = self._downey_runtime(n)
        if self.speaker is None:
            return downey
        return self.speaker.over(n, downey)

    def _downey_runtime(self, n: ArrayLike) -> FloatArray:
        """The Downey phase of the closest observation."""
        if not self.segments:  # one phase: segment_runtime's own formula, no Segment built
            one: FloatArray = self.t1 * relative_runtime(
                np.asarray(n, dtype=float), self.A, self.sigma
            )
            return one
        return segment_runtime(self.phases, n)

    def speedup(self, n: ArrayLike) -> FloatArray:
        """S(n) = T(1)/T(n), relative to the model's T(1) (the last phase's)."""
        out: FloatArray = self.t1 / self.runtime(n)
        return out

    def efficiency(self, n: ArrayLike) -> FloatArray:
        """S(n)/n, relative to the model's T(1)."""
        nv = np.asarray(n, dtype=float)
        out: FloatArray = self.speedup(nv) / nv
        return out

    def efficiency_vs_smallest(self, n: ArrayLike) -> FloatArray:
        """n0·T(n0) / (n·T(n)) with n0 the smallest observed size: 1 at n0."""
        nv = np.asarray(n, dtype=float)
        n0 = float(self.smallest_observed)
        out: FloatArray = (n0 * self.runtime(n0)) / (nv * self.runtime(nv))
        return out

    def runtime_interval(
        self, n: ArrayLike, level: float = LEVEL, runtime: FloatArray | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """(lower, upper) prediction interval of the runtime at sizes n (intervals.py):
        runtime·exp(∓q·s(n)), s(n) = sqrt(a² + r² + (b·d(n))² + m² + D(n)²), r = `residual`
        (the RMS log residual over the observations), d(n) the log distance outside the
        observed sizes, m the misfit term of a fit on 3 sizes or fewer (an exact model curve,
        the simulator's oracle, has none), D(n) the largest log distance to the alternatives:
        the `plausible` instances (at sizes whose closest observation is in the last phase)
        and, where the speaker speaks, the Downey curve's runtime; q the conformal multiplier
        between or beyond the observed sizes, as `predict` uses. `upper` is the pessimistic
        runtime. `runtime`: `self.runtime(n)` when the caller has it already (a decision's
        profile), so that the curve is not evaluated again."""
        nv = np.atleast_1d(np.asarray(n, dtype=float))
        at = self.runtime(nv) if runtime is None else np.asarray(runtime, dtype=float)
        plausible = None
        if self.plausible:
            phases = self.phases
            last = (
                segment_of(phases, nv) == len(phases) - 1
                if len(phases) > 1
                else np.ones(nv.shape, dtype=bool)
            )
            plausible = np.stack(
                [np.where(last, segment_runtime((p,), nv), at) for p in self.plausible], axis=-1
            )
        downey = None
        if self.speaker is not None and self.selected is None:
            downey = np.where(self.speaker.speaks(nv), self._downey_runtime(nv), at)[..., None]
        method = self.method if self.method in SPREAD else "adept"
        return interval(
            at,
            nv,
            np.full(nv.shape, self.residual),
            float(self.smallest_observed),
            float(self.largest_observed),
            method,
            level,
            sizes=len(set(self.observed_n)) if self.method in SPREAD else None,
            alternatives=downey,
            plausible=plausible,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (format CURVE_FORMAT) that `from_dict` reads back."""
        return {
            "format": CURVE_FORMAT,
            "model": self.model,
            "method": self.method,
            "A": self.A,
            "sigma": self.sigma,
            "t1": self.t1,
            "t1_known": self.t1_known,
            "identified": self.identified,
            "fit_error": self.fit_error,
            "max_useful_n": self.max_useful_n,
            "pws_n": self.pws_n,
            "observed_n": list(self.observed_n),
            "runs": self.runs,
            "segments": [s.to_dict() for s in self.segments],
            "selected_fit": self.selected.to_dict() if self.selected is not None else None,
            "residual": self.residual,
            "plausible": [s.to_dict() for s in self.plausible],
            "speaker": self.speaker.to_dict() if self.speaker is not None else None,
            "covariate": self.covariate.to_dict() if self.covariate is not None else None,
            **self.diagnostics.to_dict(),
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Curve:
        """Inverse of to_dict; raises ValueError for a document it cannot read."""
        try:
            selected_doc = doc.get("selected_fit")
            selected = ModelFit.from_dict(selected_doc) if selected_doc is not None else None
            expected = selected.model if selected is not None else "downey"
            if doc.get("format") not in READABLE_FORMATS or doc.get("model") != expected:
                raise ValueError(f"unknown curve format {doc.get('format')!r}/{doc.get('model')!r}")
            observed = tuple(int(k) for k in doc["observed_n"])
            if not observed:
                raise ValueError("a curve needs its observed sizes")
            diagnostics = Diagnostics(
                anomalies=tuple(Anomaly(**a) for a in doc.get("anomalies", [])),
                patterns=tuple(
                    Pattern(
                        kind=p["kind"],
                        phases=tuple(tuple(x) for x in p.get("phases", [])),
                        feasible=p.get("feasible"),
                    )
                    for p in doc.get("patterns", [])
                ),
                reliability=tuple(
                    ReliabilityProblem(
                        problem=r["problem"],
                        action=r["action"],
                        suggest_n=r.get("suggest_n"),
                        detail={
                            k: float(v)
                            for k, v in r.items()
                            if k not in ("problem", "action", "suggest_n")
                        },
                    )
                    for r in doc.get("reliability", [])
                ),
            )
            max_useful = doc["max_useful_n"]
            curve = cls(
                A=float(doc["A"]),
                sigma=float(doc["sigma"]),
                t1=float(doc["t1"]),
                t1_known=bool(doc["t1_known"]),
                identified=bool(doc["identified"]),
                method=str(doc["method"]),
                fit_error=float(doc["fit_error"]),
                max_useful_n=None if max_useful is None else int(max_useful),
                pws_n=int(doc["pws_n"]),
                observed_n=observed,
                runs=int(doc["runs"]),
                diagnostics=diagnostics,
                segments=tuple(Segment.from_dict(s) for s in doc.get("segments", [])),
                selected=selected,
                model=expected,
                residual=float(doc.get("residual", 0.0)),
                plausible=tuple(Segment.from_dict(s) for s in doc.get("plausible", [])),
                speaker=(
                    Speaker.from_dict(doc["speaker"]) if doc.get("speaker") is not None else None
                ),
                covariate=(
                    Covariate.from_dict(doc["covariate"])
                    if doc.get("covariate") is not None
                    else None
                ),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed curve document: {exc!r}") from exc
        if not (curve.A >= 1.0 and curve.sigma >= 0.0 and curve.t1 > 0.0) or not all(
            np.isfinite([curve.A, curve.sigma, curve.t1])
        ):
            raise ValueError("curve parameters out of range (A ≥ 1, σ ≥ 0, T(1) > 0, finite)")
        if not all(
            p.A >= 1.0 and p.sigma >= 0.0 and p.t1 > 0.0 and np.isfinite([p.A, p.sigma, p.t1]).all()
            for p in curve.plausible
        ):
            raise ValueError("plausible instance out of range (A ≥ 1, σ ≥ 0, T(1) > 0, finite)")
        if not (np.isfinite(curve.residual) and curve.residual >= 0.0):
            raise ValueError("curve residual must be finite and non-negative")
        if curve.speaker is not None:
            at = np.asarray(observed, dtype=float)
            with np.errstate(all="ignore"):
                spoken = curve.speaker.runtime(np.r_[at, 2.0 * at[-1]])
            if not (np.all(np.isfinite(spoken)) and np.all(spoken > 0.0)):
                raise ValueError("the curve's speaker gives no positive finite runtime")
        return curve


def _residual(fit: Fit, chosen: ModelFit | None) -> float:
    """RMS of log(T_curve(n)/t) over the fit's observations, for the curve that is used."""
    obs = fit.observations
    model = chosen.runtime(obs.n) if chosen is not None else fit.runtime(obs.n)
    return float(np.sqrt(np.mean(np.log(model / obs.runtime) ** 2)))

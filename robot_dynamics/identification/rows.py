"""Row classes: any choice of which rows a fit uses, as a sum of sums built once.

A fit leaves out, per joint, the rows slower than the joint's reversal velocity and, optionally, every
joint's rows near a joint's sticking (:mod:`.samples`, step 5; :func:`.spans.stick_band`). The reduction
(:func:`.spans.accumulate_parts`) adds every row once, to the class of its joint's speed band and its
sticking flag (:class:`Buckets`); the sums of any :class:`Selection` of rows are then the sums of the
classes it keeps, joint by joint (the normal equations are per joint). So candidates that differ only in
which rows count (:mod:`.choice`) cost no regressor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robot_dynamics.model import FloatArray

from .columns import ColumnSums
from .estimate import NormalEquations


@dataclass
class Part:
    """One chunk's sums: normal equations, the stock model's squared errors ``(n,)`` and the column
    families' sums (:class:`.columns.ColumnSums`, by shape) over the same rows; ``slow``: the same sums over
    the rows a row selection leaves out (held-out data, whose ``ne`` holds every row; else None)."""

    ne: NormalEquations
    sse: FloatArray
    families: dict[str, ColumnSums]
    slow: Part | None = None

    def __add__(self, other: Part) -> Part:
        families = {k: v + other.families[k] for k, v in self.families.items() if k in other.families}
        slow = None if self.slow is None or other.slow is None else self.slow + other.slow
        return Part(self.ne + other.ne, self.sse + other.sse, families, slow)

    def select(self, keep: NDArray[np.intp], fixed: FloatArray) -> Part:
        """The sums of the parameters ``keep`` alone, the others held at ``fixed`` (``NormalEquations.select``)."""
        families = {k: v.select(keep, fixed) for k, v in self.families.items()}
        slow = None if self.slow is None else self.slow.select(keep, fixed)
        return Part(self.ne.select(keep, fixed), self.sse, families, slow)

    def moving(self) -> Part:
        """The sums of the rows at or above the reversal velocity: all rows less the slow ones."""
        if self.slow is None:
            return self
        slow = self.slow
        families = {k: v - slow.families[k] for k, v in self.families.items() if k in slow.families}
        return Part(self.ne - slow.ne, self.sse - slow.sse, families)


def _masked(parts: Sequence[Part], include: NDArray[np.bool_]) -> Part:
    """Per joint ``j`` the sum of the parts ``b`` with ``include[b, j]`` (the sums are per joint, so every
    joint may take its own parts); ``count`` (states) is that of every part."""
    first = parts[0]
    n = first.ne.joints
    ata, atb = np.zeros_like(first.ne.ata_joint), np.zeros_like(first.ne.atb_joint)
    btb, rows, sse = np.zeros(n), np.zeros(n), np.zeros(n)
    families = {k: v.scaled(np.zeros(n)) for k, v in first.families.items()}
    count = 0
    for part, use in zip(parts, include, strict=True):
        count += part.ne.count
        if not use.any():
            continue
        w = use.astype(float)
        ata += w[:, None, None] * part.ne.ata_joint
        atb += w[:, None] * part.ne.atb_joint
        btb += w * part.ne.btb_joint
        rows += w * part.ne.rows
        sse += w * part.sse
        families = {k: v + part.families[k].scaled(w) for k, v in families.items() if k in part.families}
    return Part(NormalEquations(ata, atb, btb, count, rows=rows), sse, families)


@dataclass(frozen=True)
class Selection:
    """Which rows a fit uses: per joint the velocity below which its rows are left out (``reversal (n,)``,
    near its velocity reversals), and whether every joint's rows near a joint's sticking are left out
    too (``stick``, :func:`stick_band`)."""

    reversal: tuple[float, ...]
    stick: bool

    def label(self) -> str:
        values = sorted(set(self.reversal))
        cut = f"{values[0]:g}" if len(values) == 1 else "/".join(f"{v:g}" for v in self.reversal)
        return f"reversal {cut}, stick band {'on' if self.stick else 'off'}"


@dataclass(frozen=True)
class Buckets:
    """A part's sums cut by row class, so that any :class:`Selection` of its rows is a sum of classes
    (the regressor is built once; only which classes count changes). Class ``2 b + s``: a joint's rows
    whose speed lies in band ``b`` (``edges[b - 1] <= |qd_j| < edges[b]``, ``edges`` ascending, band 0
    from 0, the last band unbounded) and, ``s = 1``, near a joint's sticking (:func:`stick_band`)."""

    edges: tuple[float, ...]
    parts: tuple[Part, ...]

    def __add__(self, other: Buckets) -> Buckets:
        return Buckets(self.edges, tuple(a + b for a, b in zip(self.parts, other.parts, strict=True)))

    def include(self, selection: Selection) -> NDArray[np.bool_]:
        """``(classes, n)``: the classes each joint's rows take under ``selection``."""
        lower = np.concatenate([[0.0], self.edges])  # the band's lowest speed
        cut = np.asarray(selection.reversal, dtype=float)
        keep_band = lower[:, None] >= cut[None, :] - 1e-12  # (bands, n)
        out = np.repeat(keep_band, 2, axis=0)
        if selection.stick:
            out[1::2] = False
        return out

    def select(self, selection: Selection) -> Part:
        """The sums of the rows ``selection`` keeps."""
        return _masked(self.parts, self.include(selection))

    def total(self) -> Part:
        """The sums of every row."""
        return _masked(self.parts, np.ones((len(self.parts), self.parts[0].ne.joints), dtype=bool))

    def split(self, selection: Selection) -> Part:
        """Every row's sums, with those ``selection`` leaves out again on their own (``Part.slow``)."""
        inside = self.include(selection)
        whole = self.total()
        whole.slow = _masked(self.parts, ~inside)
        return whole

    def columns(self, keep: NDArray[np.intp], fixed: FloatArray) -> Buckets:
        """Every class's sums restricted to the parameters ``keep`` (:meth:`Part.select`)."""
        return Buckets(self.edges, tuple(part.select(keep, fixed) for part in self.parts))


def classes(edges: Sequence[float]) -> int:
    """The number of row classes of :class:`Buckets` with these band ``edges``."""
    return 2 * (len(edges) + 1)

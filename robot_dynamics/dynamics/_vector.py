"""3-vectors and 3x3 matrices over generic scalars (floats, arrays or traced :class:`~._trace.Sym`).

Just enough linear algebra for the recursive algorithms to read like their equations
(``w = R.T @ w_prev + axis * qd``), while every scalar operation goes through ``+``, ``-`` and ``*``
so the tracer can fold the model's constants.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ._trace import Scalar, cos, sin


def _sum(terms: Iterable[Any]) -> Any:
    total: Any = 0.0
    for term in terms:
        total = total + term
    return total


class Vec3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x: Scalar, y: Scalar, z: Scalar) -> None:
        self.x, self.y, self.z = x, y, z

    @staticmethod
    def of(values: Any) -> Vec3:
        return Vec3(float(values[0]), float(values[1]), float(values[2]))

    @staticmethod
    def zero() -> Vec3:
        return Vec3(0.0, 0.0, 0.0)

    def __iter__(self) -> Iterator[Scalar]:
        return iter((self.x, self.y, self.z))

    def __add__(self, o: Vec3) -> Vec3:
        return Vec3(self.x + o.x, self.y + o.y, self.z + o.z)

    def __sub__(self, o: Vec3) -> Vec3:
        return Vec3(self.x - o.x, self.y - o.y, self.z - o.z)

    def __neg__(self) -> Vec3:
        return Vec3(-self.x, -self.y, -self.z)

    def __mul__(self, s: Scalar) -> Vec3:
        return Vec3(self.x * s, self.y * s, self.z * s)

    __rmul__ = __mul__

    def dot(self, o: Vec3) -> Scalar:
        return _sum((self.x * o.x, self.y * o.y, self.z * o.z))

    def cross(self, o: Vec3) -> Vec3:
        return Vec3(
            self.y * o.z - self.z * o.y,
            self.z * o.x - self.x * o.z,
            self.x * o.y - self.y * o.x,
        )


class Mat3:
    """A 3x3 matrix stored by rows."""

    __slots__ = ("rows",)

    def __init__(self, rows: Sequence[Sequence[Scalar]]) -> None:
        self.rows = tuple(tuple(r) for r in rows)

    @staticmethod
    def of(values: Any) -> Mat3:
        return Mat3([[float(values[i][j]) for j in range(3)] for i in range(3)])

    @property
    def T(self) -> Mat3:
        return Mat3([[self.rows[j][i] for j in range(3)] for i in range(3)])

    def __add__(self, o: Mat3) -> Mat3:
        return Mat3([[a + b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(self.rows, o.rows, strict=True)])

    def __sub__(self, o: Mat3) -> Mat3:
        return Mat3([[a - b for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(self.rows, o.rows, strict=True)])

    def __mul__(self, s: Scalar) -> Mat3:
        return Mat3([[a * s for a in r] for r in self.rows])

    def __matmul__(self, o: Any) -> Any:
        if isinstance(o, Vec3):
            return Vec3(*(_sum(r[k] * v for k, v in enumerate(o)) for r in self.rows))
        cols = o.T.rows
        return Mat3([[_sum(a * b for a, b in zip(r, c, strict=True)) for c in cols] for r in self.rows])


def skew(v: Vec3) -> Mat3:
    """``[v]x`` with ``[v]x u = v x u``."""
    return Mat3([[0.0, -v.z, v.y], [v.z, 0.0, -v.x], [-v.y, v.x, 0.0]])


def congruence(R: Mat3, S: Mat3) -> Mat3:
    """``R S R^T`` for symmetric ``S``, computing the 6 distinct entries once."""
    M = S @ R.T
    r = R.rows
    upper = {(i, j): _sum(r[i][k] * M.rows[k][j] for k in range(3)) for i in range(3) for j in range(i, 3)}
    return Mat3([[upper[(min(i, j), max(i, j))] for j in range(3)] for i in range(3)])


def lambda_matrix(w: Vec3, wd: Vec3) -> Mat3:
    """``lambda = [wd]x + [w]x [w]x``, so that ``lambda r = wd x r + w x (w x r)`` (Dhanaraj (1990)
    eq. 2.27, Table 2.4; misprints corrected, see docs/references.md).

    With ``k_x = w_y w_z``, ``k_y = w_z w_x``, ``k_z = w_x w_y`` the products are shared with the
    gyroscopic moment of a link with principal axes (:func:`gyroscopic`).
    """
    kx, ky, kz = w.y * w.z, w.z * w.x, w.x * w.y
    xx, yy, zz = w.x * w.x, w.y * w.y, w.z * w.z
    return Mat3(
        [
            [-(yy + zz), kz - wd.z, ky + wd.y],
            [kz + wd.z, -(xx + zz), kx - wd.x],
            [ky - wd.y, kx + wd.x, -(xx + yy)],
        ]
    )


def gyroscopic(inertia: Mat3, w: Vec3) -> Vec3:
    """``w x (I w)``; for an inertia with principal axes along the frame's axes this is
    ``(D_x k_x, D_y k_y, D_z k_z)`` with ``D_x = I_zz - I_yy``, ``D_y = I_xx - I_zz``, ``D_z = I_yy - I_xx``
    (Dhanaraj (1990) eq. 2.43; Table 2.4's D_x is a misprint, see docs/references.md)."""
    r = inertia.rows
    if r[0][1] == r[0][2] == r[1][2] == 0.0 and all(isinstance(r[i][i], float) for i in range(3)):
        return Vec3(
            (r[2][2] - r[1][1]) * (w.y * w.z),
            (r[0][0] - r[2][2]) * (w.z * w.x),
            (r[1][1] - r[0][0]) * (w.x * w.y),
        )
    return w.cross(inertia @ w)


def outer(a: Vec3, b: Vec3) -> Mat3:
    return Mat3([[ai * bj for bj in b] for ai in a])


def identity() -> Mat3:
    return Mat3([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def rotation_about(axis: Vec3, angle: Scalar) -> Mat3:
    """``Rot(axis, angle)``; exact entries (0, ±1, ±sin, cos) for a coordinate axis."""
    s, c = sin(angle), cos(angle)
    a: tuple[float, float, float] = (float(axis.x), float(axis.y), float(axis.z))  # type: ignore[arg-type]
    nonzero = [k for k in range(3) if a[k] != 0.0]
    if len(nonzero) == 1:  # +-x, +-y or +-z: a plane rotation, nothing else to compute
        k = nonzero[0]
        i, j = (k + 1) % 3, (k + 2) % 3
        s = s if a[k] > 0.0 else -s
        r: list[list[Scalar]] = [[0.0] * 3 for _ in range(3)]
        r[k][k] = 1.0
        r[i][i], r[i][j], r[j][i], r[j][j] = c, -s, s, c
        return Mat3(r)
    # Rodrigues: c E + s [a]x + (1 - c) a a^T
    one_minus_c = 1.0 - c
    k_axis = skew(axis)
    return Mat3(
        [
            [c * (1.0 if i == j else 0.0) + s * k_axis.rows[i][j] + one_minus_c * (a[i] * a[j]) for j in range(3)]
            for i in range(3)
        ]
    )

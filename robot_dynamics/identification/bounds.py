"""Where a link's mass may be: one bounding ellipsoid per link, and the plausibility checks of a fit.

Wensing, Kim & Slotine, "Linear matrix inequalities for physically consistent inertial parameter
identification: a statistical perspective on the mass distribution" (IEEE RA-L 3(1), 2018, sections
III-IV): for an ellipsoid ``E = {x : (x - c)^T A (x - c) <= 1}`` the function
``f(x) = 1 - (x - c)^T A (x - c) = x~^T Q x~`` (``x~ = [x; 1]``) with

    Q = [[-A, A c], [c^T A, 1 - c^T A c]]

is non-negative exactly on ``E``, so a body whose mass lies in ``E`` has
``tr(Q J) = integral f(x) dm >= 0`` (``J`` the pseudo-inertia, :mod:`.consistent`). The condition is
linear in the 10 standard parameters, and since ``f`` is concave it also keeps the centre of mass in
``E`` (Jensen: ``f(c_m) >= integral f dm / m``). Together with ``J > 0`` it is the bounding-ellipsoid
LMI, added to the consistent fit as one more linear inequality per link.

The ellipsoid of link ``i`` (in its joint frame ``F_i``) encloses, with a margin, the points of its
geometry (:func:`robot_dynamics.models.link_geometry.link_points`: collision or visual shapes of
every URDF link it carries) or, where there is none, the joint frames it connects (the origin of
``F_i`` and of the next joint's frame, or the tool frame for the last link) thickened to at least
``MIN_RADIUS``; the stock model's centre of mass is always among the points. The points' principal
axes give the ellipsoid's axes; its semi-axes are ``sqrt(3)`` times the half extents along them (the
ellipsoid circumscribing that box) times ``1 + MARGIN``. Stock inertias are often larger than the
shapes allow (a UR arm's wrist links carry the inertia of a solid cylinder several times their
size), and a bound the stock body breaks would bias the fit: the ellipsoid is then enlarged about its
centre until the stock body uses at most ``STOCK_ROOM`` of it (``tr(Q J) >= (1 - STOCK_ROOM) m``,
i.e. ``E[(x - c)^T A (x - c)] <= STOCK_ROOM``), so a link may spread its mass up to ``1 / STOCK_ROOM``
times as far as the stock body, measured from the ellipsoid's centre.

:func:`plausibility` flags a fitted link whose mass is outside ``MASS_BAND`` times the stock mass or
whose centre of mass is outside its ellipsoid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from robot_dynamics.model import FloatArray, Inertial, RobotModel

from .consistent import pseudo_inertia_basis
from .parameters import link_parameters

MARGIN = 0.1  # ellipsoid semi-axes are this much larger than the geometry needs
MIN_RADIUS = 0.05  # m: no semi-axis is shorter (a link known only by its joint frames, a thin shape)
STOCK_ROOM = 0.5  # the stock body may use at most this much of its bound (module docstring)
MASS_BAND = (0.5, 2.0)  # a fitted mass outside this range times the stock mass is flagged


@dataclass(frozen=True, eq=False)
class Ellipsoid:
    """``{x : (x - centre)^T A (x - centre) <= 1}`` with ``A = R diag(1 / semi^2) R^T``; ``source``:
    "geometry" or "joint frames"."""

    centre: FloatArray
    rotation: FloatArray  # columns: the principal axes
    semi: FloatArray
    source: str
    scale: float = 1.0  # the factor by which the shapes' ellipsoid was enlarged to hold the stock body

    @property
    def shape(self) -> FloatArray:
        return (self.rotation / self.semi**2) @ self.rotation.T

    def q_matrix(self) -> FloatArray:
        """The 4x4 ``Q`` of the module docstring."""
        a, c = self.shape, self.centre
        q = np.empty((4, 4))
        q[:3, :3] = -a
        q[:3, 3] = q[3, :3] = a @ c
        q[3, 3] = 1.0 - c @ a @ c
        return q

    def row(self) -> FloatArray:
        """``(10,)``: ``tr(Q J(phi)) = row @ phi`` for the 10 standard parameters ``phi``."""
        return np.einsum("ab,kba->k", self.q_matrix(), pseudo_inertia_basis())

    def contains(self, point: ArrayLike) -> bool:
        d = np.asarray(point, dtype=float) - self.centre
        return bool(d @ self.shape @ d <= 1.0 + 1e-9)

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "scale": self.scale,
            "centre": self.centre.tolist(),
            "semi_axes": self.semi.tolist(),
            "axes": self.rotation.T.tolist(),
        }


def enclosing_ellipsoid(points: ArrayLike, source: str, margin: float = MARGIN) -> Ellipsoid:
    """The ellipsoid around ``points (K, 3)`` of the module docstring."""
    p = np.asarray(points, dtype=float).reshape(-1, 3)
    middle = p.mean(axis=0)
    _, _, vt = np.linalg.svd(p - middle, full_matrices=False)
    rotation = vt.T
    local = (p - middle) @ rotation
    low, high = local.min(axis=0), local.max(axis=0)
    centre = middle + rotation @ (0.5 * (low + high))
    semi = np.maximum(np.sqrt(3.0) * 0.5 * (high - low) * (1.0 + margin), MIN_RADIUS)
    return Ellipsoid(centre, rotation, semi, source)


def room(ellipsoid: Ellipsoid, phi: ArrayLike) -> float:
    """``E[(x - c)^T A (x - c)]`` over the body ``phi`` (10 parameters): 0 at the centre, 1 on average on
    the surface; ``1 - room`` is ``tr(Q J) / m``."""
    p = np.asarray(phi, dtype=float)
    return 1.0 - float(ellipsoid.row() @ p) / p[0]


def holding(ellipsoid: Ellipsoid, phi: ArrayLike) -> Ellipsoid:
    """``ellipsoid``, enlarged about its centre until the body ``phi`` uses at most ``STOCK_ROOM`` of it."""
    used = room(ellipsoid, phi)
    if used <= STOCK_ROOM:
        return ellipsoid
    factor = float(np.sqrt(used / STOCK_ROOM))
    return replace(ellipsoid, semi=ellipsoid.semi * factor, scale=ellipsoid.scale * factor)


def frame_points(model: RobotModel, i: int) -> FloatArray:
    """The joint frames link ``i`` connects, in ``F_i``: its origin and the next joint's (or the tool)."""
    after = model.joints[i + 1].origin if i + 1 < model.dof else model.tool
    return np.array([np.zeros(3), after[:3, 3]])


def link_ellipsoids(model: RobotModel, geometry: Sequence[FloatArray | None] | None = None) -> list[Ellipsoid]:
    """One ellipsoid per link (module docstring); ``geometry``: per link the points of its shapes in
    ``F_i`` (None: use the joint frames)."""
    out = []
    for i, joint in enumerate(model.joints):
        shape = None if geometry is None or i >= len(geometry) else geometry[i]
        source = "geometry" if shape is not None and len(shape) else "joint frames"
        points = shape if shape is not None and len(shape) else frame_points(model, i)
        if joint.link.mass > 0.0:
            points = np.vstack([points, joint.link.com])
        ellipsoid = enclosing_ellipsoid(points, source)
        out.append(holding(ellipsoid, link_parameters(joint.link)) if joint.link.mass > 0.0 else ellipsoid)
    return out


def inside_body(ellipsoid: Ellipsoid, mass: float) -> FloatArray:
    """The 10 parameters of a uniform ball of ``mass`` at the ellipsoid's centre, its radius half the
    shortest semi-axis: a rigid body strictly inside (the consistent fit's fallback start)."""
    m = mass if mass > 0.0 else 1.0
    radius = 0.5 * float(np.min(ellipsoid.semi))
    return link_parameters(Inertial(m, ellipsoid.centre, 0.4 * m * radius**2 * np.eye(3)))  # a solid ball


def density_bounds(model: RobotModel, ellipsoids: Sequence[Ellipsoid]) -> list[tuple[FloatArray, FloatArray]]:
    """Per link the consistent fit's density bound ``(row, inside)`` (:func:`.consistent.fit_consistent`)."""
    return [(e.row(), inside_body(e, j.link.mass)) for e, j in zip(ellipsoids, model.joints, strict=True)]


def plausibility(model: RobotModel, fitted: Sequence[ArrayLike], bounds: Sequence[Ellipsoid]) -> list[dict[str, Any]]:
    """Per link: the fitted mass against the stock one, the centre of mass against the ellipsoid, flags.

    ``fitted``: per link its 10 standard parameters (the stock link where it was not identified)."""
    rows = []
    for joint, phi, ellipsoid in zip(model.joints, fitted, bounds, strict=True):
        p = np.asarray(phi, dtype=float)
        mass, stock = float(p[0]), float(joint.link.mass)
        com = p[1:4] / mass if mass > 0.0 else None
        flags = []
        if stock > 0.0 and not MASS_BAND[0] * stock <= mass <= MASS_BAND[1] * stock:
            flags.append(f"mass {mass:.4g} kg is outside [{MASS_BAND[0]:g}, {MASS_BAND[1]:g}] x stock {stock:.4g} kg")
        if com is not None and not ellipsoid.contains(com):
            flags.append(
                f"centre of mass {np.round(com, 4).tolist()} m is outside the link's bound ({ellipsoid.source})"
            )
        rows.append(
            {
                "joint": joint.name,
                "link": joint.link_name,
                "mass": mass,
                "stock_mass": stock,
                "mass_ratio": mass / stock if stock > 0.0 else None,
                "com": None if com is None else com.tolist(),
                "stock_com": joint.link.com.tolist(),
                "bound": ellipsoid.summary(),
                "density_bound": float(ellipsoid.row() @ p) >= -1e-9 * max(abs(mass), 1e-12),
                "plausible": not flags,
                "flags": flags,
                "at_band_edge": stock > 0.0 and min(abs(mass / stock - edge) for edge in MASS_BAND) < 2e-3,
            }
        )
    return rows

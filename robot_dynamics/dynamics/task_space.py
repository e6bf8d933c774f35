"""Task-space quantities of any frame of the chain: pose, geometric Jacobian, ``Jdot qd``, ``Lambda``.

What a Cartesian impedance or operational-space controller needs next to D, h, c:

* :func:`link_pose` — the frame's pose in the base frame ``F_0`` (``base_link``) ``(..., 4, 4)``;
* :func:`link_jacobian` — its geometric Jacobian ``(..., 6, n)``, rows ``[v; w]``: the linear velocity
  of the frame's origin and the angular velocity (:mod:`.geometric_jacobian`);
* :func:`jacobian_dot_qdot` — ``Jdot qd`` ``(..., 6)``: the origin's (classical) acceleration and the
  angular acceleration at ``qdd = 0`` (:mod:`.frame_acceleration`);
* :func:`operational_space_inertia` — ``Lambda = (J D^-1 J^T)^-1`` of the task's rows ``(..., k, k)``,
  with D as :func:`~.coefficients.inertia_matrix` gives it (reflected motor inertia per the model),
  an error where it has no inverse unless a pseudo-inverse is asked for (:mod:`.task_inertia`,
  :mod:`.operational_space`);
* :func:`task_space` — all four at once (one compiled call).

**Frames** (``link``): ``None`` (default) or ``model.tip_link`` is the tool frame (``model.tool`` in
``F_n``, the frame of :func:`~.tool_jacobian.jacobian` and :func:`~.kinematics.forward_kinematics`);
``model.base_link`` (or ``0``) the base frame ``F_0``; a joint's link name (``model.joints[i].link_name``,
URDF child links, ``link1``..``linkn`` for DH robots) or its index ``i + 1`` the link's frame ``F_{i+1}``
of ``model.py`` — a URDF link's own frame, for DH robots the frame the exported URDF and its TF tree
give the link (on joint i+1's axis: for standard DH the DH frame i turned by ``theta_{i+1}``, for
modified DH the DH frame i+1). Links a URDF fixes to a chain link (``panda_link8``) are merged into
it and not frames of the model: name one of them as ``tip_link`` to reach it.

**Axes** (``axes``): ``"base"`` — the base frame's (Pinocchio's ``LOCAL_WORLD_ALIGNED`` with the base
as the world; ``model.base`` rotates them into the world), ``"link"`` — the frame's own (``LOCAL``):
``J_link = diag(R^T, R^T) J_base``, ``Jdot qd`` rotated the same way (the acceleration expressed in the
frame's axes, not the derivative of ``J_link``), ``Lambda_link = diag(R^T, R^T) Lambda diag(R, R)``
before the rows are chosen. Joint columns follow the model's joints; joints that do not move the
frame have zero columns.

Every function takes one state ``(n,)`` or a batch ``(N, n)`` (vectorised: one compiled call loops
over the samples) and ``backend`` as the rest of the engine (:mod:`._dispatch`). One compiled program
serves every frame: the frame is an input of it (weights over the chain's frames,
:mod:`.geometric_jacobian`), so the native library holds it once per model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..errors import StateError
from ..model import FloatArray, RobotModel
from ..models.validation import suggest
from . import _state
from ._dispatch import library, single, try_evaluate
from ._kernel_key import KernelKey
from ._kernels import ModelKernels, kernels
from .operational_space import RowsName, TaskInertia, check_rcond, invert_task_inertia, select_rows, task_rows

Axes = Literal["base", "link"]
LinkName = str | int | None

FRAME = KernelKey.frame()
TASK = {motor: KernelKey.task(motor) for motor in (False, True)}


@dataclass(frozen=True)
class ChainFrame:
    """A frame of the chain: its ``name``, ``index`` (0 the base, i the link of joint i, n + 1 the tool),
    the joints that move it (``moved_by``, the first ones) and its weights (the compiled program's input)."""

    name: str
    index: int
    moved_by: int
    weights: FloatArray
    weight_list: list[float]


def link_names(model: RobotModel) -> list[str]:
    """The frames a task may name, base first, tool last: ``base_link``, each joint's link, ``tip_link``."""
    names = [model.base_link, *(j.link_name for j in model.joints)]
    return names if model.tip_link in names[1:] else [*names, model.tip_link]


def chain_frame(model: RobotModel, link: LinkName = None) -> ChainFrame:
    """The frame ``link`` names (module doc); StateError for a name or index the chain does not have."""
    return _frame(kernels(model), model, link)


def _frame(K: ModelKernels, model: RobotModel, link: LinkName) -> ChainFrame:
    known = K.frames  # resolved once per model and name
    if type(link) is str or link is None:
        found: ChainFrame | None = known.get(link)
        if found is not None:
            return found
    n = model.dof
    if isinstance(link, (int, np.integer)) and not isinstance(link, bool):
        if not 0 <= int(link) <= n:
            raise StateError(f"link: robot {model.name!r} has links 0..{n} (0 the base), got {int(link)}")
        link = int(link)
        found = known.get(link)
        if found is not None:
            return found
    elif link is not None and not isinstance(link, str):
        raise StateError(f"link: expected a link name or an index 0..{n} of robot {model.name!r}, got {link!r}")
    if link is None or link == "" or link == model.tip_link:
        index, name = n + 1, model.tip_link
    elif isinstance(link, int):
        index, name = link, model.base_link if link == 0 else model.joints[link - 1].link_name
    else:
        names = {model.base_link: 0, **{j.link_name: i + 1 for i, j in enumerate(model.joints)}}
        if link not in names:
            listed = link_names(model)
            raise StateError(
                f"link: robot {model.name!r} has no link {link!r}{suggest(link, listed)}; the chain's frames: "
                f"{', '.join(listed)} (a link fixed to one of them is merged into it: load the model with it as "
                "tip_link or base_link to reach it)"
            )
        index, name = names[link], link
    weights = np.zeros(n + 2)
    weights[index] = 1.0
    weights.setflags(write=False)
    found = known[link] = ChainFrame(name, index, min(index, n), weights, weights.tolist())
    return found


def _check_axes(axes: str) -> Axes:
    if axes != "base" and axes != "link":
        raise StateError(f"axes: expected 'base' or 'link', got {axes!r}")
    return axes  # type: ignore[return-value]


_ZEROS: dict[int, FloatArray] = {}


def _outputs(
    K: ModelKernels,
    model: RobotModel,
    key: KernelKey,
    q: ArrayLike,
    qd: ArrayLike | None,
    frame: ChainFrame,
    backend: str | None,
) -> FloatArray:
    """The ``"frame"`` or ``"task"`` program (:class:`~._kernel_key.KernelKey`) on one state or a batch:
    ``(k,)`` or ``(N, k)`` outputs; ``qd`` ``None``: zero."""
    n = K.n
    if qd is None:
        qd = _ZEROS.get(n)
        if qd is None:
            qd = _ZEROS[n] = np.zeros(n)
            qd.setflags(write=False)
    out = single(model, K, backend, key, q, qd, frame.weights)  # one state on the native library
    if out is not None:
        return out
    native = library(model, K, backend)
    lists = _state.fast_single(n, q, qd) if native is None else None
    if lists is not None:  # one state on the Python float program
        try:
            program = K.program(key)
            if program is not None:
                return np.array(program.scalar(*lists, frame.weight_list))
        except (ValueError, ZeroDivisionError):  # a pivot of D that is not positive: reported below
            pass
    what = f"{n} joints of robot {model.name!r}"
    items = [("q", q, n, what), ("qd", qd, n, what), ("frame", frame.weights, n + 2, "frame weights")]
    batch, values = _state.validate(items)
    try:  # (a pivot of D that is a constant 0 fails while the program is built)
        with np.errstate(invalid="ignore", divide="ignore"):
            result = try_evaluate(K, native, key, batch, values)
    except (ValueError, ZeroDivisionError):
        result = None
    if result is None:
        raise _not_positive_definite(model)
    return result


def _not_positive_definite(model: RobotModel) -> StateError:
    return StateError(
        f"inertia matrix of robot {model.name!r} is not positive definite (a joint moves no mass and no motor inertia?)"
    )


def _block(out: FloatArray, start: int, shape: tuple[int, ...]) -> FloatArray:
    """Outputs ``start..`` as ``shape`` per state: a view for one state, contiguous for a batch."""
    stop = start + math.prod(shape)
    if out.ndim == 1:
        return out[start:stop].reshape(shape)
    return np.ascontiguousarray(out[:, start:stop]).reshape(-1, *shape)


def _in_axes(out: FloatArray, axes: Axes, start: int, columns: int) -> FloatArray:
    """The ``6 x columns`` block of the outputs from ``start`` (``J``: n columns, ``Jdot qd``: 1), in
    ``axes``: ``diag(R^T, R^T) X`` for the frame's own."""
    if axes == "base":
        return _block(out, start, (6, columns))
    lead = out.shape[:-1]
    Rt = np.swapaxes(out[..., :16].reshape(*lead, 4, 4)[..., :3, :3], -1, -2)
    block = out[..., start : start + 6 * columns].reshape(*lead, 2, 3, columns)
    return np.asarray(Rt[..., None, :, :] @ block).reshape(*lead, 6, columns)


def _task_inertia(
    model: RobotModel,
    out: FloatArray,
    n: int,
    frame: ChainFrame,
    axes: Axes,
    rows: tuple[int, ...],
    rcond: float | None,
) -> TaskInertia:
    """``Lambda`` of ``rows`` from the ``"task"`` outputs (:mod:`.operational_space`)."""
    lead = out.shape[:-1]
    A = out[..., 22 + 6 * n :].reshape(*lead, 6, 6)
    if not np.isfinite(A).all():
        raise _not_positive_definite(model)
    if axes == "link":  # diag(R^T, R^T) A diag(R, R), block by block
        R = out[..., :16].reshape(*lead, 4, 4)[..., :3, :3]
        blocks = np.swapaxes(A.reshape(*lead, 2, 3, 2, 3), -3, -2)  # [a, b]: the 3 x 3 block A_ab
        blocks = np.swapaxes(R, -1, -2)[..., None, None, :, :] @ blocks @ R[..., None, None, :, :]
        A = np.swapaxes(blocks, -3, -2).reshape(*lead, 6, 6)

    def describe() -> str:
        return f"link {frame.name!r} of robot {model.name!r} ({frame.moved_by} of {model.dof} joints move it)"

    return invert_task_inertia(select_rows(A, rows), rcond, describe)


@dataclass(frozen=True)
class TaskSpace:
    """The task-space quantities of one frame (:func:`task_space`); leading axes as the state's.

    ``pose`` ``(..., 4, 4)`` in ``F_0``; ``jacobian`` ``(..., 6, n)``; ``jdot_qdot`` ``(..., 6)``, both in
    ``axes``; ``inertia`` ``Lambda`` of ``rows`` ``(..., k, k)``, ``condition`` of ``J_S D^-1 J_S^T`` and
    ``rank`` (directions inverted) — ``None`` when not asked for."""

    link: str
    axes: str
    pose: FloatArray
    jacobian: FloatArray
    jdot_qdot: FloatArray
    inertia: FloatArray | None
    rows: tuple[int, ...]
    condition: FloatArray | None
    rank: np.ndarray | None


def _task_key(K: ModelKernels, motor_inertia: bool | None) -> KernelKey:
    return TASK[K.motor_inertia_in_d if motor_inertia is None else bool(motor_inertia)]


def task_space(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike | None = None,
    *,
    link: LinkName = None,
    axes: Axes = "base",
    inertia: bool = False,
    rows: RowsName | Sequence[int] | None = None,
    rcond: float | None = None,
    motor_inertia: bool | None = None,
    backend: str | None = None,
) -> TaskSpace:
    """Pose, Jacobian, ``Jdot qd`` (``qd`` ``None``: zero) and, with ``inertia``, ``Lambda`` of ``rows``
    (:func:`operational_space_inertia`: ``rows``, ``rcond``, ``motor_inertia``) of the frame ``link``
    (module doc), from one compiled call."""
    axes = _check_axes(axes)
    picked, cut = task_rows(rows), check_rcond(rcond)
    K = kernels(model)
    frame = _frame(K, model, link)
    n = K.n
    out = _outputs(K, model, _task_key(K, motor_inertia) if inertia else FRAME, q, qd, frame, backend)
    solved = _task_inertia(model, out, n, frame, axes, picked, cut) if inertia else None
    return TaskSpace(
        link=frame.name,
        axes=axes,
        pose=_block(out, 0, (4, 4)),
        jacobian=_in_axes(out, axes, 16, n),
        jdot_qdot=_in_axes(out, axes, 16 + 6 * n, 1)[..., 0],
        inertia=None if solved is None else solved.inertia,
        rows=picked,
        condition=None if solved is None else solved.condition,
        rank=None if solved is None else solved.rank,
    )


def link_pose(model: RobotModel, q: ArrayLike, *, link: LinkName = None, backend: str | None = None) -> FloatArray:
    """The pose ``(..., 4, 4)`` of the frame ``link`` (default the tool frame) in the base frame ``F_0``."""
    K = kernels(model)
    return _block(_outputs(K, model, FRAME, q, None, _frame(K, model, link), backend), 0, (4, 4))


def link_jacobian(
    model: RobotModel, q: ArrayLike, *, link: LinkName = None, axes: Axes = "base", backend: str | None = None
) -> FloatArray:
    """The geometric Jacobian ``(..., 6, n)`` of the frame ``link``: ``J qd = [v; w]``, in ``axes``."""
    axes = _check_axes(axes)
    K = kernels(model)
    return _in_axes(_outputs(K, model, FRAME, q, None, _frame(K, model, link), backend), axes, 16, K.n)


def jacobian_dot_qdot(
    model: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    *,
    link: LinkName = None,
    axes: Axes = "base",
    backend: str | None = None,
) -> FloatArray:
    """``Jdot qd`` ``(..., 6)`` of the frame ``link``: ``[a; alpha]`` at ``qdd = 0``, in ``axes``."""
    axes = _check_axes(axes)
    K = kernels(model)
    out = _outputs(K, model, FRAME, q, qd, _frame(K, model, link), backend)
    return _in_axes(out, axes, 16 + 6 * K.n, 1)[..., 0]


def operational_space_inertia(
    model: RobotModel,
    q: ArrayLike,
    *,
    link: LinkName = None,
    axes: Axes = "base",
    rows: RowsName | Sequence[int] | None = None,
    rcond: float | None = None,
    motor_inertia: bool | None = None,
    backend: str | None = None,
) -> FloatArray:
    """``Lambda = (J_S D^-1 J_S^T)^-1`` ``(..., k, k)`` of the frame ``link`` for the Jacobian rows ``rows``
    (``None``/"all", "linear", "angular" or indices 0..5, in ``axes``); D with ``G^2 Jm`` per
    ``motor_inertia`` (default the model's, as :func:`~.coefficients.inertia_matrix`). Where
    ``J_S D^-1 J_S^T`` is singular: a StateError, or the truncated pseudo-inverse with ``rcond``
    (:mod:`.operational_space`)."""
    axes = _check_axes(axes)
    picked, cut = task_rows(rows), check_rcond(rcond)
    K = kernels(model)
    frame = _frame(K, model, link)
    out = _outputs(K, model, _task_key(K, motor_inertia), q, None, frame, backend)
    return _task_inertia(model, out, K.n, frame, axes, picked, cut).inertia


__all__ = [
    "ChainFrame",
    "TaskSpace",
    "chain_frame",
    "jacobian_dot_qdot",
    "link_jacobian",
    "link_names",
    "link_pose",
    "operational_space_inertia",
    "task_space",
]

"""Engine vs Pinocchio (test-only reference) at 120 random states, to 1e-9 relative.

Robots: PUMA 560 (Pinocchio model built directly from the DH table with ``addJoint``) and four
URDF arms loaded by ``robot_dynamics.load_robot`` and by Pinocchio's own URDF parser. Compared:
``rnea``, ``crba``, ``nonLinearEffects``, ``computeGeneralizedGravity``, ``computeCoriolisMatrix``,
``aba``, and the momentum observer's ``p = D qd`` and ``dD/dt qd = (C + C^T) qd`` (our O(n)
recursion against Pinocchio's CRBA and Coriolis matrix) — with the batch (NumPy) path for all
states and the single-state path for some.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from engine_reference import (
    EXAMPLE_ROBOTS,
    URDF_ARMS,
    max_relative_error,
    pinocchio_from_model,
    pinocchio_puma560,
    pinocchio_urdf,
    puma560,
    random_states,
)

import robot_dynamics as rd
from robot_dynamics.dynamics.momentum_observer import momentum_terms
from robot_dynamics.model import RobotModel

pin = pytest.importorskip("pinocchio")

TOL = 1e-9
COUNT = 120
SINGLE = 10


def _load_urdf(name: str) -> RobotModel:
    path, tip, _ = URDF_ARMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # off-chain joints held at zero (panda's fingers)
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


def _pinocchio_results(pm, q, qd, qdd, tau):  # type: ignore[no-untyped-def]
    data = pm.createData()
    kinds = ("rnea", "crba", "nle", "gravity", "coriolis", "aba", "momentum")
    out: dict[str, list[np.ndarray]] = {k: [] for k in kinds}
    for a, b, c, t in zip(q, qd, qdd, tau, strict=True):
        out["rnea"].append(pin.rnea(pm, data, a, b, c).copy())
        M = pin.crba(pm, data, a).copy()
        out["crba"].append(np.triu(M) + np.triu(M, 1).T)  # Pinocchio fills the upper triangle
        out["nle"].append(pin.nonLinearEffects(pm, data, a, b).copy())
        out["gravity"].append(pin.computeGeneralizedGravity(pm, data, a).copy())
        out["coriolis"].append(pin.computeCoriolisMatrix(pm, data, a, b).copy())
        out["aba"].append(pin.aba(pm, data, a, b, t).copy())
        C = out["coriolis"][-1]  # dM/dt = C + C^T
        out["momentum"].append(np.concatenate([out["crba"][-1] @ b, (C + C.T) @ b]))
    return {k: np.array(v) for k, v in out.items()}


def _ours(model: RobotModel, q, qd, qdd, tau):  # type: ignore[no-untyped-def]
    return {
        "rnea": rd.inverse_dynamics(model, q, qd, qdd, friction=False),
        "crba": rd.inertia_matrix(model, q),
        "nle": rd.coriolis_centrifugal(model, q, qd) + rd.gravity_torques(model, q),
        "gravity": rd.gravity_torques(model, q),
        "coriolis": rd.coriolis_matrix(model, q, qd),
        "aba": rd.forward_dynamics(model, q, qd, tau, friction=False),
        "momentum": momentum_terms(model, q, qd),  # p = D qd, dD/dt qd
    }


def _compare(model: RobotModel, pm, seed: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    n = model.dof
    assert pm.nv == n
    q, qd, qdd = random_states(seed, n, COUNT)
    tau = np.random.default_rng(seed + 1).normal(0.0, 5.0, (COUNT, n))
    reference = _pinocchio_results(pm, q, qd, qdd, tau)
    ours = _ours(model, q, qd, qdd, tau)
    errors = {k: max_relative_error(ours[k], reference[k]) for k in reference}
    for s in range(SINGLE):  # the single-state (Python float) path
        single = _ours(model, q[s], qd[s], qdd[s], tau[s])
        for k in reference:
            errors[k] = max(errors[k], max_relative_error(single[k], reference[k][s]))
    bad = {k: e for k, e in errors.items() if not e < TOL}
    assert not bad, f"{model.name}: {bad}"
    return errors


def test_puma560_dh_against_pinocchio_built_from_dh() -> None:
    model = puma560()
    _compare(model, pinocchio_puma560(motor_inertia=True), seed=10)
    rigid = model.with_changes(motor_inertia_in_d=False)
    _compare(rigid, pinocchio_puma560(motor_inertia=False), seed=11)


def test_bundled_puma560_against_pinocchio() -> None:
    _compare(rd.load_robot("puma560"), pinocchio_puma560(motor_inertia=True), seed=12)


@pytest.mark.parametrize("name", sorted(URDF_ARMS))
def test_urdf_arm_against_pinocchio_urdf_parser(name: str) -> None:
    model = _load_urdf(name)
    assert model.dof in (6, 7)
    _compare(model, pinocchio_urdf(name), seed=20 + model.dof)


@pytest.mark.parametrize("name", ["stanford", "puma560_modified", "scara", "robmat_stanford_rrp"])
def test_bundled_models_with_prismatic_or_modified_dh(name: str) -> None:
    """Models with prismatic joints and modified DH, Pinocchio built from the model's joint frames."""
    model = rd.load_robot(name)
    _compare(model, pinocchio_from_model(model), seed=30)

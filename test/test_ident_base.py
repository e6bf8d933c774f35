"""Base parameters against the known closed-form groupings (Khalil & Dombre 2002, section 12.3;
Gautier & Khalil 1990): the planar 2R arm and the PUMA 560, plus the defining identity
``Y theta = Y_base (K theta)`` for random theta at fresh states on arms with prismatic joints."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS

import robot_dynamics as rd
from robot_dynamics.identification import ParameterSet, base_parameters, nominal_parameters, regressor
from robot_dynamics.identification.base import random_states
from robot_dynamics.model import RobotModel

INERTIAL = ParameterSet(armature=False, viscous=False, coulomb="none", offset=False)


def _row(base, name: str) -> dict[str, float]:  # type: ignore[no-untyped-def]
    r = base.names.index(name)
    return {p: float(base.K[r, k]) for k, p in enumerate(base.parameter_names) if base.K[r, k] != 0.0}


@pytest.mark.parametrize("name", ["fu_two_link", "schilling_two_link"])
def test_planar_two_link_base_parameters(name: str) -> None:
    """Planar 2R, gravity in the plane: ZZR1 = ZZ1 + a1^2 m2, MXR1 = MX1 + a1 m2, MY1, ZZ2, MX2, MY2
    (the masses, the first moments along the joint axes and the other inertia entries have no effect)."""
    model = rd.load_robot(name)
    assert model.dh is not None
    a1 = model.dh.rows[0].a
    base = base_parameters(model, INERTIAL)
    assert base.rank == 6
    assert set(base.names) == {"IzzR1", "mxR1", "my1", "Izz2", "mx2", "my2"}
    assert _row(base, "IzzR1") == pytest.approx({"Izz1": 1.0, "m2": a1**2}, rel=1e-10)
    assert _row(base, "mxR1") == pytest.approx({"mx1": 1.0, "m2": a1}, rel=1e-10)
    assert "IzzR1 = Izz1 + " in base.expressions[base.names.index("IzzR1")]
    assert set(base.unidentifiable) >= {"m1", "mz1", "mz2", "Ixx2", "Iyy2", "Ixy2"}
    # without gravity the first moments of link 1 drop out: 4 base parameters
    free = base_parameters(model.with_changes(gravity=np.zeros(3)), INERTIAL)
    assert set(free.names) == {"IzzR1", "Izz2", "mx2", "my2"}


def test_puma560_base_inertial_parameters() -> None:
    """36 base inertial parameters (the number commonly cited for the PUMA 560); link 1 keeps only
    ZZR1; Khalil & Dombre's grouping of link 2: XXR2 = XX2 - YY2 - a2^2 (m3 + ... + m6),
    MXR2 = MX2 + a2 (m3 + ... + m6), ZZR2 = ZZ2 + a2^2 (m3 + ... + m6)."""
    model = rd.load_robot("puma560")
    assert model.dh is not None
    a2 = model.dh.rows[1].a
    base = base_parameters(model, INERTIAL)
    assert base.rank == 36
    link1 = [n for n in base.names if n.endswith("1")]
    assert link1 == ["IzzR1"]
    assert set(base.unidentifiable) == {"m1", "mx1", "my1", "mz1", "Ixx1", "Ixy1", "Ixz1", "Iyy1", "Iyz1", "m2", "mz2"}
    heavy = {f"m{k}": a2**2 for k in (3, 4, 5, 6)}
    assert _row(base, "IxxR2") == pytest.approx({"Ixx2": 1.0, "Iyy2": -1.0, **{k: -v for k, v in heavy.items()}})
    assert _row(base, "IzzR2") == pytest.approx({"Izz2": 1.0, **heavy})
    assert _row(base, "mxR2") == pytest.approx({"mx2": 1.0, **{f"m{k}": a2 for k in (3, 4, 5, 6)}})
    # armature: Ia1 joins ZZR1 (axis 1 fixed in the base) and Ia2 joins ZZR2 (axis 2 perpendicular to
    # axis 1), Ia3..Ia6 are base parameters of their own: 40
    with_armature = base_parameters(model, ParameterSet(viscous=False, coulomb="none", offset=False))
    assert with_armature.rank == 40
    assert {"Ia1", "Ia2"} <= set(with_armature.dependent)
    assert _row(with_armature, "IzzR1")["Ia1"] == pytest.approx(1.0)


def _urdf(name: str) -> RobotModel:
    path, tip, _ = URDF_ARMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


@pytest.mark.parametrize("name", ["stanford", "scara", "robmat_stanford_rrp", "puma560_modified", "panda"])
def test_base_regressor_reproduces_the_full_one(name: str) -> None:
    model = _urdf(name) if name == "panda" else rd.load_robot(name)
    pset = ParameterSet(asymmetric=True)
    base = base_parameters(model, pset, rng=1)
    q, qd, qdd = random_states(model, 200, np.random.default_rng(2))
    Y = regressor(model, q, qd, qdd, pset)
    theta = np.random.default_rng(3).normal(size=base.K.shape[1])
    full = Y @ theta
    reduced = Y[..., base.independent] @ base.to_base(theta)
    assert np.abs(full - reduced).max() <= 1e-9 * np.abs(full).max()
    # every friction parameter is a base parameter of its own
    assert {f"Fv{j + 1}" for j in range(model.dof)} <= set(base.names)
    # to_full inverts to_base, keeping the parameters without effect at the nominal values
    nominal = nominal_parameters(model, pset)
    back = base.to_full(base.to_base(theta), nominal)
    np.testing.assert_allclose(base.to_base(back), base.to_base(theta), rtol=1e-9, atol=1e-9)
    no_effect = [base.parameter_names.index(n) for n in base.unidentifiable]
    np.testing.assert_array_equal(back[no_effect], nominal[no_effect])


def test_scara_offset_and_gravity_on_the_vertical_prismatic_joint() -> None:
    """SCARA joint 3 slides along gravity: tau3 = m3 (qdd3 + g) + Ia3 qdd3 + Fo3. With the armature
    free, the offset cannot be told from the mass (mR3 = m3 - Fo3 / g, IaR3 = Ia3 + Fo3 / g);
    without it, m3 and Fo3 are both base parameters."""
    model = rd.load_robot("scara")
    g = float(np.linalg.norm(model.gravity))
    base = base_parameters(model, ParameterSet())
    assert "Fo3" in base.dependent
    assert _row(base, "mR3") == pytest.approx({"m3": 1.0, "Fo3": -1.0 / g})
    assert _row(base, "IaR3") == pytest.approx({"Ia3": 1.0, "Fo3": 1.0 / g})
    no_armature = base_parameters(model, ParameterSet(armature=False))
    assert {"m3", "Fo3"} <= set(no_armature.names)


def test_base_parameters_are_deterministic_and_described() -> None:
    model = rd.load_robot("puma560")
    a = base_parameters(model, ParameterSet(), rng=5, samples=500)
    b = base_parameters(model, ParameterSet(), rng=5, samples=500)
    np.testing.assert_array_equal(a.K, b.K)
    assert a.names == b.names and a.rank == 58  # 40 inertial + armature, 6 viscous, 6 Coulomb, 6 offsets
    text = a.describe()
    assert text.splitlines()[0].startswith("IzzR1 = Izz1 + Iyy2 + 0.186")
    assert "no effect on the torques: m1, mx1" in text

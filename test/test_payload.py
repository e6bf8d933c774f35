"""Payload at the tool (robot_dynamics.payload) against independent references, and its semantics.

References: Pinocchio with the payload appended as an extra body on the last joint at the tool frame's
placement (Pinocchio's own URDF parser and frame placements, ``appendBodyToJoint``), and a hand-built
URDF whose payload is an extra link on a fixed joint (merged by the URDF loader). Compared at random
states to 1e-12 relative: inverse dynamics, D(q), gravity, and D, h, c of the loaded model.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, max_relative_error, pinocchio_urdf, puma560, random_states

import robot_dynamics as rd
from robot_dynamics.errors import ModelError
from robot_dynamics.model import RobotModel, axis_angle_matrix, rpy_matrix
from robot_dynamics.payload import NO_PAYLOAD, check_payload, payload_of, with_payload, without_payload

TOL = 1e-12
COUNT = 60


def _random_payload(rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray]:
    """A physical payload: a box of random sides, rotated arbitrarily in the tool frame."""
    mass = float(rng.uniform(0.2, 5.0))
    a, b, c = rng.uniform(0.02, 0.3, 3)
    box = mass / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    axis = rng.normal(size=3)
    r = axis_angle_matrix(axis / np.linalg.norm(axis), float(rng.uniform(-math.pi, math.pi)))
    return mass, rng.uniform(-0.2, 0.2, 3), r @ box @ r.T


def _ur5() -> RobotModel:
    path, tip, _ = URDF_ARMS["ur5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


# ------------------------------------------------------------------------------------------------
# Pinocchio: the payload as an extra body on the last joint
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arm", ["ur5", "panda"])
def test_payload_matches_pinocchio_with_an_appended_body(arm: str) -> None:
    pin = pytest.importorskip("pinocchio")
    path, tip, _ = URDF_ARMS[arm]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)
    assert not np.allclose(model.tool, np.eye(4))  # the tool frame's pose matters here
    rng = np.random.default_rng(7)
    mass, com, inertia = _random_payload(rng)
    loaded = with_payload(model, mass, com, inertia)

    pm = pinocchio_urdf(arm)
    tool = pm.frames[pm.getFrameId(tip)]  # Pinocchio's own placement of the tip in its joint's frame
    assert tool.parentJoint == pm.njoints - 1
    pm.appendBodyToJoint(tool.parentJoint, pin.Inertia(mass, com, inertia), tool.placement)
    pm.gravity.linear = loaded.gravity_base.copy()
    data = pm.createData()

    q, qd, qdd = random_states(11, model.dof, COUNT)
    tau = rd.inverse_dynamics(loaded, q, qd, qdd, friction=False)
    d = rd.inertia_matrix(loaded, q)
    g = rd.gravity_torques(loaded, q)
    ref_tau = np.array([pin.rnea(pm, data, a, b, c).copy() for a, b, c in zip(q, qd, qdd, strict=True)])
    ref_d = []
    for a in q:
        m = pin.crba(pm, data, a).copy()
        ref_d.append(np.triu(m) + np.triu(m, 1).T)
    ref_g = np.array([pin.computeGeneralizedGravity(pm, data, a).copy() for a in q])
    errors = {
        "rnea": max_relative_error(tau, ref_tau),
        "crba": max_relative_error(d, np.array(ref_d)),
        "gravity": max_relative_error(g, ref_g),
    }
    print(f"{arm} + {mass:.3f} kg payload vs Pinocchio, {COUNT} states: {errors}")
    assert max(errors.values()) <= TOL, errors
    # and the payload is not negligible: the unloaded torques differ clearly
    assert max_relative_error(rd.inverse_dynamics(model, q, qd, qdd, friction=False), ref_tau) > 1e-3


# ------------------------------------------------------------------------------------------------
# URDF: the payload as a fixed link, merged by the loader
# ------------------------------------------------------------------------------------------------
_ARM = """<robot name="payload_arm">
  <link name="base"/>
  <link name="l1"><inertial><origin xyz="0.01 0.02 0.15" rpy="0.1 0 0.2"/><mass value="3.1"/>
    <inertia ixx="0.05" ixy="0.001" ixz="0.002" iyy="0.04" iyz="-0.003" izz="0.03"/></inertial></link>
  <link name="l2"><inertial><origin xyz="0.2 0.0 0.03" rpy="0 0.3 0"/><mass value="2.2"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.06" iyz="0" izz="0.06"/></inertial></link>
  <link name="l3"><inertial><origin xyz="0.1 0.01 -0.02" rpy="0.2 -0.1 0.4"/><mass value="1.3"/>
    <inertia ixx="0.004" ixy="0.0002" ixz="0" iyy="0.011" iyz="0.0001" izz="0.012"/></inertial></link>
  <link name="tool"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.05 0.2" rpy="1.5707963267948966 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>
    <origin xyz="0.4 0 0" rpy="0 0 0.3"/><axis xyz="0.6 0 0.8"/>
    <limit lower="-3" upper="3" effort="100" velocity="2"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="l3"/><child link="tool"/>
    <origin xyz="0.25 0.03 -0.01" rpy="0.3 -0.7 1.1"/></joint>
  {payload}
</robot>"""

_PAYLOAD = """<link name="payload"><inertial><origin xyz="{x} {y} {z}" rpy="{r} {p} {w}"/><mass value="{m}"/>
    <inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial></link>
  <joint name="payload_joint" type="fixed"><parent link="tool"/><child link="payload"/>
    <origin xyz="0 0 0"/></joint>"""


def test_payload_matches_a_urdf_with_a_fixed_payload_link() -> None:
    plain = rd.load_robot(_ARM.format(payload=""), tip_link="tool")
    m, com, rpy, moments = 1.7, (0.03, -0.05, 0.12), (0.4, 0.2, -0.9), (0.011, 0.017, 0.009)
    text = _ARM.format(
        payload=_PAYLOAD.format(
            x=com[0],
            y=com[1],
            z=com[2],
            r=rpy[0],
            p=rpy[1],
            w=rpy[2],
            m=m,
            ixx=moments[0],
            iyy=moments[1],
            izz=moments[2],
        )
    )
    reference = rd.load_robot(text, tip_link="tool")
    r = rpy_matrix(*rpy)  # the URDF inertial's axes in the tool frame
    loaded = with_payload(plain, m, com, r @ np.diag(moments) @ r.T)
    assert np.allclose(reference.tool, plain.tool)
    q, qd, qdd = random_states(5, 3, COUNT)
    errors = {
        "inverse_dynamics": max_relative_error(
            rd.inverse_dynamics(loaded, q, qd, qdd, friction=False),
            rd.inverse_dynamics(reference, q, qd, qdd, friction=False),
        ),
        "D": max_relative_error(rd.inertia_matrix(loaded, q), rd.inertia_matrix(reference, q)),
        "h": max_relative_error(rd.coriolis_centrifugal(loaded, q, qd), rd.coriolis_centrifugal(reference, q, qd)),
        "c": max_relative_error(rd.gravity_torques(loaded, q), rd.gravity_torques(reference, q)),
    }
    print(f"3-axis arm + {m} kg payload vs URDF fixed link, {COUNT} states: {errors}")
    assert max(errors.values()) <= TOL, errors
    last, ref = loaded.joints[-1].link, reference.joints[-1].link
    assert last.mass == pytest.approx(ref.mass, rel=1e-15)
    np.testing.assert_allclose(last.com, ref.com, rtol=0, atol=1e-15)
    np.testing.assert_allclose(last.inertia, ref.inertia, rtol=0, atol=1e-15)


def test_a_point_mass_on_one_axis_matches_the_closed_form() -> None:
    """One revolute axis about z0 with gravity along -y: c(q) = g (m a + m_p (a + l)) cos q with the tool at
    x = l in F_1 and a point payload there (Fu, Gonzalez & Lee, the one-link pendulum of ch. 3)."""
    from engine_reference import one_axis

    a, m, g, mp, tool_x = 0.6, 2.2, 9.8062, 0.7, 0.35
    base = one_axis(a=a, m=m, g=g)
    tool = base.tool.copy()
    tool[:3, 3] += base.tool[:3, :3] @ np.array([tool_x, 0.0, 0.0])
    model = base.with_changes(tool=tool)
    loaded = with_payload(model, mp, (0.0, 0.0, 0.0))
    q = np.linspace(-3.0, 3.0, 25)[:, None]
    qdd = np.linspace(-2.0, 2.0, 25)[:, None]
    lever = float(tool[0, 3]), float(tool[1, 3])
    expected_gravity = rd.gravity_torques(model, q)[:, 0] + mp * g * (
        lever[0] * np.cos(q[:, 0]) - lever[1] * np.sin(q[:, 0])
    )
    np.testing.assert_allclose(rd.gravity_torques(loaded, q)[:, 0], expected_gravity, rtol=0, atol=1e-12)
    extra_d = mp * (lever[0] ** 2 + lever[1] ** 2)
    d = rd.inertia_matrix(loaded, q)[:, 0, 0]
    np.testing.assert_allclose(d, rd.inertia_matrix(model, q)[:, 0, 0] + extra_d, rtol=1e-14, atol=0)
    tau = rd.inverse_dynamics(loaded, q, np.zeros_like(q), qdd, friction=False)[:, 0]
    np.testing.assert_allclose(tau, d * qdd[:, 0] + expected_gravity, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# set / replace / clear
# ------------------------------------------------------------------------------------------------
def test_a_new_payload_replaces_the_old_one_and_mass_zero_clears() -> None:
    model = puma560()
    rng = np.random.default_rng(3)
    first, second = _random_payload(rng), _random_payload(rng)
    one = with_payload(model, *first)
    two = with_payload(one, *second)  # replaces: starts again from the unloaded model
    direct = with_payload(model, *second)
    for a, b in zip(two.joints, direct.joints, strict=True):
        assert a.link.mass == b.link.mass
        np.testing.assert_array_equal(a.link.com, b.link.com)
        np.testing.assert_array_equal(a.link.inertia, b.link.inertia)
    assert two.fingerprint() == direct.fingerprint() != model.fingerprint()
    assert payload_of(two).mass == second[0] and payload_of(model) is NO_PAYLOAD
    assert without_payload(two) is model and without_payload(model) is model
    cleared = with_payload(two, 0.0)
    assert cleared is model  # the original last link, bit for bit
    assert payload_of(cleared) is NO_PAYLOAD
    # only the last link changes
    assert all(a is b for a, b in zip(one.joints[:-1], model.joints[:-1], strict=True))
    q, qd, qdd = random_states(9, 6, 10)
    np.testing.assert_array_equal(rd.inverse_dynamics(cleared, q, qd, qdd), rd.inverse_dynamics(model, q, qd, qdd))


def test_payload_mass_and_moment_add_up() -> None:
    model = _ur5()
    mass, com, inertia = _random_payload(np.random.default_rng(1))
    loaded = with_payload(model, mass, com, inertia)
    last, before = loaded.joints[-1].link, model.joints[-1].link
    assert last.mass == pytest.approx(before.mass + mass, rel=1e-15)
    r, p = model.tool[:3, :3], model.tool[:3, 3]
    np.testing.assert_allclose(last.mass * last.com, before.mass * before.com + mass * (r @ com + p), atol=1e-14)


@pytest.mark.parametrize(
    ("mass", "com", "inertia", "field", "words"),
    [
        (-1.0, (0, 0, 0), np.zeros((3, 3)), "mass", "negative mass"),
        (math.nan, (0, 0, 0), np.zeros((3, 3)), "mass", "finite"),
        (math.inf, (0, 0, 0), np.zeros((3, 3)), "mass", "finite"),
        ("heavy", (0, 0, 0), np.zeros((3, 3)), "mass", "number"),
        (1.0, (0, math.nan, 0), np.zeros((3, 3)), "com", "finite"),
        (1.0, (0, 0), np.zeros((3, 3)), "com", "3 numbers"),
        (1.0, (0, 0, 0), np.diag([1.0, 1.0, -0.1]), "inertia", "positive semi-definite"),
        (1.0, (0, 0, 0), np.diag([0.1, 0.1, 0.5]), "inertia", "triangle inequality"),
        (1.0, (0, 0, 0), [[0.1, 0.05, 0], [0, 0.1, 0], [0, 0, 0.1]], "inertia", "not symmetric"),
        (1.0, (0, 0, 0), np.full((3, 3), math.nan), "inertia", "non-finite"),
        (1.0, (0, 0, 0), np.eye(2), "inertia", "3x3"),
        (0.0, (0, 0, 0), np.eye(3) * 0.1, "inertia", "mass 0 clears"),
    ],
)
def test_bad_payloads_are_refused_with_the_field_named(mass, com, inertia, field, words) -> None:  # type: ignore[no-untyped-def]
    model = puma560()
    with pytest.raises(ModelError) as info:
        with_payload(model, mass, com, inertia)
    assert info.value.field == field, str(info.value)
    assert words in str(info.value), str(info.value)
    assert isinstance(info.value, ValueError)


def test_check_payload_accepts_the_physical_edge_cases() -> None:
    assert check_payload(0.0, (0.3, 0, 0), np.zeros((3, 3))) is NO_PAYLOAD  # com ignored at mass 0
    with pytest.raises(ModelError, match="com"):
        check_payload(0.0, (math.nan, 0, 0), np.zeros((3, 3)))  # but never a NaN
    point = check_payload(2.0, (0.1, 0.0, 0.0), np.zeros((3, 3)))  # a point mass
    assert point.mass == 2.0 and not point.is_empty
    rod = check_payload(1.0, (0, 0, 0), np.diag([0.0, 0.1, 0.1]))  # a thin rod: triangle equality
    assert rod.inertia[0, 0] == 0.0
    nearly = np.diag([0.1, 0.1, 0.1]) + 1e-13 * np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    assert np.array_equal(
        check_payload(1.0, (0, 0, 0), nearly).inertia, check_payload(1.0, (0, 0, 0), nearly).inertia.T
    )
    assert "kg" in point.describe() and NO_PAYLOAD.describe() == "none"

"""Identification regressor: ``Y theta_nominal`` against the engine's inverse dynamics and Pinocchio.

References: ``rd.inverse_dynamics`` (Newton–Euler with motor inertia and friction, an independent
implementation: traced scalar programs) on every bundled robot and two example-robot-data arms with
random friction; ``pinocchio.computeJointTorqueRegressor`` on models exported to URDF; the
Schilling eq. 6-3-3 Stribeck term for the part the linear model leaves out.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, URDF_ARMS, max_relative_error, random_states

import robot_dynamics as rd
from robot_dynamics.errors import ModelError, StateError
from robot_dynamics.identification import (
    IdentificationError,
    ParameterSet,
    apply_parameters,
    fixed_torques,
    link_parameters,
    nominal_parameters,
    physical_problem,
    predict,
    regressor,
    with_coulomb_velocity,
)
from robot_dynamics.model import JointFriction, Motor, RobotModel
from robot_dynamics.models import model_to_urdf

TOL = 1e-10
LINEAR_FRICTION = ["fu_two_link", "puma560", "robmat_double_pendulum", "robmat_stanford_rrp", "scara"]
LINEAR_FRICTION += ["schilling_two_link", "stanford"]


def _urdf(name: str) -> RobotModel:
    path, tip, _ = URDF_ARMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(EXAMPLE_ROBOTS / path), tip_link=tip)


def _with_random_friction(model: RobotModel, seed: int) -> RobotModel:
    """Joint-side viscous and asymmetric Coulomb friction plus motor friction on every joint."""
    rng = np.random.default_rng(seed)
    joints = []
    for j in model.joints:
        fr = JointFriction(viscous=rng.uniform(0, 2), coulomb=(rng.uniform(0, 3), -rng.uniform(0, 3)))
        motor = j.motor or Motor(rng.uniform(0.01, 0.1), rng.choice([-20.0, 30.0]))
        motor = replace(motor, viscous=rng.uniform(0, 1e-3), coulomb=(rng.uniform(0, 0.05), -rng.uniform(0, 0.05)))
        joints.append(replace(j, friction=fr, motor=motor))
    return model.with_changes(joints=tuple(joints))


def _engine(model: RobotModel, pset: ParameterSet, q, qd, qdd):  # type: ignore[no-untyped-def]
    """The engine's torque with the friction law of the set: exact sign for ``coulomb="sign"``, else smooth
    (the set's width where Coulomb is identified, the model's own where it is not)."""
    ref = with_coulomb_velocity(model, pset.coulomb_velocity) if pset.coulomb == "tanh" else model
    return rd.inverse_dynamics(ref, q, qd, qdd, friction=True, smooth=pset.coulomb != "sign")


def _check_against_engine(model: RobotModel, pset: ParameterSet, seed: int, count: int = 300) -> float:
    q, qd, qdd = random_states(seed, model.dof, count)
    Y = regressor(model, q, qd, qdd, pset)
    assert Y.shape == (count, model.dof, pset.size(model))
    err = max_relative_error(Y @ nominal_parameters(model, pset), _engine(model, pset, q, qd, qdd))
    assert err < TOL, f"{model.name} {pset}: {err}"
    return err


@pytest.mark.parametrize("name", LINEAR_FRICTION)
@pytest.mark.parametrize("coulomb", ["tanh", "sign"])
def test_bundled_robot_regressor_matches_inverse_dynamics(name: str, coulomb: str) -> None:
    model = _with_random_friction(rd.load_robot(name), seed=3)
    _check_against_engine(model, ParameterSet(coulomb=coulomb, asymmetric=True), seed=4)  # type: ignore[arg-type]
    _check_against_engine(rd.load_robot(name), ParameterSet(coulomb=coulomb, asymmetric=True), seed=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["panda", "ur5"])
def test_urdf_arm_regressor_matches_inverse_dynamics(name: str) -> None:
    model = _with_random_friction(_urdf(name), seed=6)
    _check_against_engine(model, ParameterSet(asymmetric=True, coulomb_velocity=0.05), seed=7)
    # symmetric Coulomb on a model with symmetric levels; no armature in D
    sym = model.with_changes(
        joints=tuple(replace(j, friction=JointFriction(0.5, (1.0, -1.0)), motor=None) for j in model.joints)
    )
    _check_against_engine(sym, ParameterSet(armature=False), seed=8)


def test_base_transform_and_gravity_enter_the_regressor() -> None:
    model = _with_random_friction(rd.load_robot("puma560"), seed=9)
    base = np.eye(4)
    base[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]
    base[:3, 3] = [0.3, -0.2, 1.0]
    tilted = model.with_changes(base=base, gravity=np.array([0.5, -1.0, -9.7]))
    _check_against_engine(tilted, ParameterSet(asymmetric=True), seed=10)


def test_restricted_parameter_sets_are_column_subsets() -> None:
    model = _with_random_friction(rd.load_robot("stanford"), seed=11)
    q, qd, qdd = random_states(12, model.dof, 50)
    full_set = ParameterSet(asymmetric=True)
    full = regressor(model, q, qd, qdd, full_set)
    names = full_set.names(model)
    for pset in (
        ParameterSet(links=(5,), armature=False, viscous=False, coulomb="none", offset=False),
        ParameterSet(links=(1, 3), coulomb="sign", offset=False),
        ParameterSet(inertial=False, asymmetric=True),
    ):
        sub = regressor(model, q, qd, qdd, pset)
        cols = [names.index(k) for k in pset.names(model)]
        if pset.coulomb == "sign":  # the sign columns differ from tanh ones; compare the rest
            keep = [k for k, name in enumerate(pset.names(model)) if not name.startswith("Fc")]
            np.testing.assert_array_equal(sub[..., keep], full[..., [cols[k] for k in keep]])
        else:
            np.testing.assert_array_equal(sub, full[..., cols])
        # what the set leaves out is a known torque: together they give the model's torque
        total = sub @ nominal_parameters(model, pset) + fixed_torques(model, q, qd, qdd, pset)
        assert max_relative_error(total, _engine(model, pset, q, qd, qdd)) < TOL
    assert ParameterSet(links=(5,)).names(model)[:10] == (
        "m6",
        "mx6",
        "my6",
        "mz6",
        "Ixx6",
        "Ixy6",
        "Ixz6",
        "Iyy6",
        "Iyz6",
        "Izz6",
    )
    assert names[-5:] == ("Ia6", "Fv6", "Fc6", "Fa6", "Fo6")


def test_fixed_torques_hold_the_stribeck_term_schilling_6_3_3() -> None:
    """The one-axis robot's friction b = bv qd + sgn(qd)[bd + (bs - bd) exp(-|qd|/eps)]: the linear
    model takes bv and bd; the rest is the closed-form Stribeck excess."""
    model = rd.load_robot("one_axis")
    fr = model.joints[0].friction
    assert fr.static is not None
    pset = ParameterSet(coulomb="sign")
    q, qd, qdd = random_states(13, 1, 200, scale=0.2)
    expected = np.sign(qd) * (fr.static[0] - fr.coulomb[0]) * np.exp(-np.abs(qd) / fr.stribeck_velocity)
    assert max_relative_error(fixed_torques(model, q, qd, qdd, pset), expected) < 1e-12


def test_single_state_and_chunking_give_the_same_rows() -> None:
    model = _urdf("panda")
    q, qd, qdd = random_states(14, model.dof, 37)
    Y = regressor(model, q, qd, qdd)
    np.testing.assert_array_equal(regressor(model, q, qd, qdd, chunk=5), Y)
    np.testing.assert_allclose(regressor(model, q[3], qd[3], qdd[3]), Y[3], rtol=0, atol=1e-14)
    theta = np.random.default_rng(20).normal(size=Y.shape[2])
    np.testing.assert_allclose(predict(model, q, qd, qdd, theta, chunk=6), Y @ theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(predict(model, q[2], qd[2], qdd[2], theta), Y[2] @ theta, rtol=1e-12, atol=1e-12)
    # block upper-triangular: joint j never sees links below it
    pset = ParameterSet()
    for i in range(model.dof):
        assert not Y[:, i + 1 :, pset.layout(model).link_slice(i)].any()


@pytest.mark.parametrize("name", ["puma560", "stanford", "scara", "puma560_modified"])
def test_inertial_columns_equal_pinocchio_joint_torque_regressor(name: str) -> None:
    """Pinocchio orders each joint's parameters m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz
    (inertia about the joint frame origin); the exported URDF's link frames are the model's F_i."""
    pin = pytest.importorskip("pinocchio")
    model = rd.load_robot(name)
    pm = pin.buildModelFromXML(model_to_urdf(model))
    assert list(pm.names)[1:] == model.joint_names
    pm.gravity.linear = model.gravity
    data = pm.createData()
    pset = ParameterSet(armature=False, viscous=False, coulomb="none", offset=False)
    q, qd, qdd = random_states(15, model.dof, 40)
    Y = regressor(model, q, qd, qdd, pset)
    perm = [0, 1, 2, 3, 4, 5, 7, 6, 8, 9]  # Pinocchio's order in ours
    order = np.concatenate([10 * i + np.array(perm) for i in range(model.dof)])
    worst = 0.0
    for k in range(len(q)):
        qp: list[float] = []
        for i, qi in enumerate(q[k]):
            qp += [math.cos(qi), math.sin(qi)] if pm.joints[i + 1].nq == 2 else [qi]
        ref = pin.computeJointTorqueRegressor(pm, data, np.array(qp), qd[k], qdd[k])
        worst = max(worst, max_relative_error(Y[k][:, order], ref))
    assert worst < TOL


def test_parameters_of_a_body_and_apply_round_trip() -> None:
    model = _with_random_friction(_urdf("panda"), seed=16)
    pset = ParameterSet(asymmetric=True)
    theta = nominal_parameters(model, pset)
    # link 2: m c and the inertia about the joint-frame origin by hand (parallel axes)
    body = model.joints[1].link
    phi = link_parameters(body)
    c = body.com
    inertia = body.inertia + body.mass * (c @ c * np.eye(3) - np.outer(c, c))
    np.testing.assert_allclose(phi, [body.mass, *(body.mass * c), *inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]])
    # perturbed (still physical) parameters: the new model's torque is Y theta' and theta' reads back
    rng = np.random.default_rng(17)
    theta2 = theta * rng.uniform(0.9, 1.1, theta.size)
    lay = pset.layout(model)
    for i in lay.links:  # keep every link physical: scale the whole body
        theta2[lay.link_slice(i)] = theta[lay.link_slice(i)] * rng.uniform(0.8, 1.2)
    for j in range(model.dof):  # |Fa| <= Fc
        theta2[lay.joint_column["Fa"][j]] = 0.5 * theta2[lay.joint_column["Fc"][j]]
    theta2[lay.joint_column["Fo"]] = 0.0
    updated = apply_parameters(model, theta2, pset)
    np.testing.assert_allclose(nominal_parameters(updated, pset), theta2, rtol=1e-12, atol=1e-15)
    q, qd, qdd = random_states(18, model.dof, 100)
    tau = rd.inverse_dynamics(updated, q, qd, qdd, smooth=True)
    assert max_relative_error(regressor(model, q, qd, qdd, pset) @ theta2, tau) < TOL
    assert all(j.friction.smoothing_velocity == pset.coulomb_velocity for j in updated.joints)


def test_unphysical_parameters_are_rejected_naming_the_joint() -> None:
    model = _urdf("panda")
    assert physical_problem(link_parameters(rd.load_robot("puma560").joints[0].link)) == "mass 0 kg is not positive"
    pset = ParameterSet()
    lay = pset.layout(model)
    theta = nominal_parameters(model, pset)
    bad = theta.copy()
    bad[lay.link_slice(2).start] = -1.0
    with pytest.raises(ModelError, match=r"joints\[2\].link.*mass"):
        apply_parameters(model, bad, pset)
    bad = theta.copy()
    bad[lay.joint_column["Fv"][4]] = -0.1
    with pytest.raises(ModelError, match=r"joints\[4\].*viscous"):
        apply_parameters(model, bad, pset)
    phi = link_parameters(model.joints[1].link)
    assert physical_problem(phi) is None
    phi[7] = 10.0 * phi[4] + 10.0  # Iyy far above Ixx + Izz: no rigid body
    assert "triangle" in str(physical_problem(phi))


def test_bad_inputs_have_clear_errors() -> None:
    model = rd.load_robot("puma560")
    q = np.zeros((4, 6))
    with pytest.raises(StateError, match="qd: expected shape"):
        regressor(model, q, np.zeros((4, 5)), q)
    with pytest.raises(StateError, match="non-finite"):
        regressor(model, q, q, np.full((4, 6), np.nan))
    with pytest.raises(IdentificationError, match="links"):
        ParameterSet(links=(6,)).names(model)
    with pytest.raises(IdentificationError, match="coulomb"):
        ParameterSet(coulomb="linear")  # type: ignore[arg-type]


def _random_chain(seed: int, n: int = 6) -> RobotModel:
    """Random origins (rotations and offsets), oblique and negative coordinate axes, prismatic joints."""
    from scipy.spatial.transform import Rotation

    from robot_dynamics.model import Inertial, Joint

    rng = np.random.default_rng(seed)
    axes = [[0, 0, -1], [0, 1, 0], rng.normal(size=3), [-1, 0, 0], rng.normal(size=3), [0, 0, 1]]
    joints = []
    for i in range(n):
        origin = np.eye(4)
        origin[:3, :3] = Rotation.random(random_state=int(rng.integers(1 << 30))).as_matrix()
        origin[:3, 3] = rng.uniform(-0.4, 0.4, 3)
        a = rng.normal(size=(3, 3))
        body = Inertial(rng.uniform(0.5, 5.0), rng.uniform(-0.2, 0.2, 3), a @ a.T * 0.05 + 0.01 * np.eye(3))
        joints.append(
            Joint(
                f"j{i}",
                "prismatic" if i in (2, 4) else "revolute",
                origin,
                axes[i % len(axes)],
                body,
                friction=JointFriction(rng.uniform(0, 1), (rng.uniform(0, 1), -rng.uniform(0, 1))),
                motor=Motor(rng.uniform(1e-4, 1e-3), rng.uniform(-100, 100)),
            )
        )
    return RobotModel("random", tuple(joints), gravity=rng.normal(size=3) * 4.0)


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_random_chains_with_oblique_axes_and_prismatic_joints(seed: int) -> None:
    model = _random_chain(seed)
    _check_against_engine(model, ParameterSet(asymmetric=True), seed=seed)
    _check_against_engine(model, ParameterSet(coulomb="sign", asymmetric=True), seed=seed + 100)


@pytest.mark.parametrize("name", sorted(URDF_ARMS))
def test_urdf_arm_inertial_columns_equal_pinocchio_from_its_own_parser(name: str) -> None:
    """The same check on example-robot-data arms, Pinocchio reading the URDF itself (its joint frames
    are the model's F_i; off-chain joints locked)."""
    pin = pytest.importorskip("pinocchio")
    from engine_reference import pinocchio_urdf

    model = _urdf(name)
    pm = pinocchio_urdf(name)
    data = pm.createData()
    pset = ParameterSet(armature=False, viscous=False, coulomb="none", offset=False)
    q, qd, qdd = random_states(16, model.dof, 25)
    Y = regressor(model, q, qd, qdd, pset)
    order = np.concatenate([10 * i + np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9]) for i in range(model.dof)])
    for k in range(len(q)):
        qp: list[float] = []
        for i, qi in enumerate(q[k]):
            qp += [math.cos(qi), math.sin(qi)] if pm.joints[i + 1].nq == 2 else [qi]
        ref = pin.computeJointTorqueRegressor(pm, data, np.array(qp), qd[k], qdd[k])
        assert max_relative_error(Y[k][:, order], ref) < TOL

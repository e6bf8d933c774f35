"""Where a link's mass may be: bounding ellipsoids from URDF geometry or joint frames, the density bound in
the consistent fit (Wensing, Kim & Slotine), and the plausibility flags of the report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS

import robot_dynamics as rd
from robot_dynamics.cli import main
from robot_dynamics.identification.bounds import (
    MASS_BAND,
    Ellipsoid,
    link_ellipsoids,
    plausibility,
    room,
)
from robot_dynamics.identification.fitting import fit_statistics
from robot_dynamics.identification.friction_laws import friction_parameter_set, reduction_parameter_set
from robot_dynamics.identification.parameters import link_parameters
from robot_dynamics.identification.samples import PipelineSettings, statistics_from_arrays
from robot_dynamics.identification.synthetic import perturbed_model, record, write_bag
from robot_dynamics.model import Inertial
from robot_dynamics.models.link_geometry import link_points

UR5 = EXAMPLE_ROBOTS / "ur_description/urdf/ur5_robot.urdf"

SHAPES = """<?xml version="1.0"?>
<robot name="shapes">
  <link name="base"/>
  <link name="arm">
    <inertial><mass value="2"/><origin xyz="0 0 0.2"/>
      <inertia ixx="0.03" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 0.2"/><geometry><box size="0.1 0.2 0.4"/></geometry></collision>
    <visual><geometry><sphere radius="5"/></geometry></visual>
  </link>
  <link name="cap">
    <collision><origin xyz="0 0 0.05" rpy="1.5707963267948966 0 0"/>
      <geometry><cylinder radius="0.05" length="0.3"/></geometry></collision>
  </link>
  <link name="hand">
    <inertial><mass value="1"/><inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><geometry><sphere radius="0.03"/></geometry></visual>
  </link>
  <link name="finger">
    <collision><origin xyz="0.1 0 0"/><geometry><mesh filename="MESH" scale="2 1 1"/></geometry></collision>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="cap_fix" type="fixed"><parent link="arm"/><child link="cap"/><origin xyz="0 0 0.4"/></joint>
  <joint name="j2" type="revolute"><parent link="cap"/><child link="hand"/><origin xyz="0 0 0.1"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="slide" type="prismatic"><parent link="hand"/><child link="finger"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.04" effort="10" velocity="2"/></joint>
</robot>
"""


def test_the_density_bound_is_the_mean_of_the_ellipsoid_function() -> None:
    """``row @ phi`` = ``sum m_k f(x_k)`` for point masses, ``f = 1 - (x - c)^T A (x - c)``; ``contains`` is
    ``f >= 0``."""
    rng = np.random.default_rng(3)
    rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    e = Ellipsoid(np.array([0.1, -0.2, 0.3]), rotation, np.array([0.2, 0.4, 0.3]), "test")
    points, masses = rng.normal(scale=0.3, size=(7, 3)) + e.centre, rng.uniform(0.1, 2.0, 7)
    phi = sum(link_parameters(Inertial(m, x, np.zeros((3, 3)))) for m, x in zip(masses, points, strict=True))
    local = (points - e.centre) @ rotation / e.semi
    f = 1.0 - np.sum(local**2, axis=1)
    assert e.row() @ phi == pytest.approx(float(masses @ f), rel=1e-12, abs=1e-12)
    assert [e.contains(x) for x in points] == list(f >= 0.0)
    assert room(e, phi) == pytest.approx(1.0 - float(masses @ f) / masses.sum())


def test_link_points_of_primitive_shapes(tmp_path: Path) -> None:
    """Collision shapes (else visual) of every URDF link a joint moves, in its frame; a mesh that is not found
    leaves the body unknown (bounded by its joint frames)."""
    import trimesh

    trimesh.creation.box(extents=(0.02, 0.04, 0.06)).export(tmp_path / "finger.stl")
    urdf = tmp_path / "shapes.urdf"
    urdf.write_text(SHAPES.replace("MESH", "finger.stl"))
    arm, hand = link_points(urdf, tip_link="hand", locked_joints={"slide": 0.02})
    assert arm is not None and hand is not None
    box = arm[:8]
    np.testing.assert_allclose(box.min(axis=0), [-0.05, -0.1, 0.0], atol=1e-12)
    np.testing.assert_allclose(box.max(axis=0), [0.05, 0.1, 0.4], atol=1e-12)
    cylinder = arm[8:]  # the fixed child's cylinder, its axis turned onto -y, 0.4 + 0.05 up
    np.testing.assert_allclose(cylinder.min(axis=0), [-0.05, -0.15, 0.4], atol=1e-12)
    np.testing.assert_allclose(cylinder.max(axis=0), [0.05, 0.15, 0.5], atol=1e-12)
    np.testing.assert_allclose(hand[:8].min(axis=0), [-0.03, -0.03, -0.03], atol=1e-12)  # the visual sphere
    # the finger's mesh (scaled x2 in x, 0.1 out in x) rides on the hand at the locked slide position 0.02
    np.testing.assert_allclose(hand[8:].min(axis=0), [0.12 - 0.02, -0.02, -0.03], atol=1e-12)
    np.testing.assert_allclose(hand[8:].max(axis=0), [0.12 + 0.02, 0.02, 0.03], atol=1e-12)
    missing = tmp_path / "missing.urdf"
    missing.write_text(SHAPES.replace("MESH", "package://nowhere/finger.stl"))
    assert link_points(missing, tip_link="hand", locked_joints={"slide": 0.0})[1] is None  # bounded by its frames
    model = rd.load_robot(urdf, tip_link="hand")
    bounds = link_ellipsoids(model, [arm, None])
    assert [b.source for b in bounds] == ["geometry", "joint frames"]
    assert all(b.contains(p) for p in arm for b in bounds[:1])
    assert all(
        b.contains(j.link.com) and room(b, link_parameters(j.link)) <= 0.5 + 1e-12
        for b, j in zip(bounds, model.joints, strict=True)
    )


def test_ur5_meshes_are_read() -> None:
    points = link_points(UR5, tip_link="tool0")
    assert all(p is not None and len(p) > 100 for p in points)
    upper_arm = points[1]
    assert upper_arm is not None and 0.42 < upper_arm[:, 2].max() < 0.55  # the 0.425 m upper arm, capped


def test_bounded_consistent_fit_and_flags() -> None:
    """The fit keeps every link's mass in its ellipsoid, at no cost where the truth lies inside; a bound
    that excludes the truth is active at the optimum (and costs something, if little: much of a link's
    mass distribution does not reach the torques); the report flags what is implausible."""
    stock = rd.load_robot(UR5, tip_link="tool0")
    truth = perturbed_model(stock, seed=2)
    geometry = link_points(UR5, tip_link="tool0")
    rec = record(truth, 4.0, 250.0, seed=4, effort_noise=np.full(6, 0.05))
    superset, pset = reduction_parameter_set(), friction_parameter_set("viscous-coulomb")
    settings = PipelineSettings(polyorder=6, window_s=0.1, reversal_velocity=0.0)
    stats = [statistics_from_arrays(stock, superset, rec.t, rec.q, rec.qd, rec.tau, settings)]
    options = {"settings": settings, "reduced": superset}
    free = fit_statistics(stock, pset, stats, bounded=False, geometry=geometry, **options)  # type: ignore[arg-type]
    bounded = fit_statistics(stock, pset, stats, geometry=geometry, base=free.base, **options)  # type: ignore[arg-type]
    lay = pset.layout(stock)
    for i, e in enumerate(bounded.ellipsoids):
        assert e.source == "geometry"
        assert e.row() @ bounded.fit.theta[lay.link_slice(i)] >= -1e-9
        assert room(e, link_parameters(truth.joints[i].link)) < 1.0  # the truth is inside its bound
    assert bounded.fit.cost <= free.fit.cost * (1.0 + 1e-3)
    assert all(row["plausible"] for row in bounded.plausibility), bounded.warnings
    # a bound too small for the truth's link 2: active at the optimum, and the fit pays for it
    tight = list(bounded.ellipsoids)
    shrunk = Ellipsoid(tight[1].centre, tight[1].rotation, 0.5 * tight[1].semi, "test")
    tight[1] = shrunk
    forced = fit_statistics(stock, pset, stats, ellipsoids=tight, base=free.base, **options)  # type: ignore[arg-type]
    assert room(shrunk, link_parameters(truth.joints[1].link)) > 1.0
    assert room(shrunk, forced.fit.theta[lay.link_slice(1)]) == pytest.approx(1.0, abs=1e-4)
    assert forced.fit.cost >= bounded.fit.cost * (1.0 - 1e-9)
    # flags: a mass three times the stock and a centre of mass outside the bound
    phi = link_parameters(Inertial(3.0 * stock.joints[5].link.mass, np.array([0.0, 2.0, 0.0]), np.eye(3)))
    fitted = [link_parameters(j.link) for j in stock.joints[:5]] + [phi]
    rows = plausibility(stock, fitted, bounded.ellipsoids)
    assert rows[5]["flags"][0].startswith("mass 0.5637 kg is outside [0.5, 2] x stock 0.1879 kg")
    assert "centre of mass [0.0, 2.0, 0.0] m is outside the link's bound (geometry)" in rows[5]["flags"][1]
    assert all(row["plausible"] for row in rows[:5])


def test_report_names_each_links_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scara = rd.load_robot("scara")
    bag = write_bag(tmp_path / "b", record(perturbed_model(scara, seed=3), 3.0, 250.0, seed=5), scara.joint_names)
    report = tmp_path / "r.json"
    argv = ["identify", str(bag), "--robot", "scara", "--out", str(tmp_path / "m.yaml"), "--json", str(report)]
    assert main([*argv, "--jobs", "1"]) == 0
    capsys.readouterr()
    data = json.loads(report.read_text())
    assert data["plausibility"]["bounded"] is True and data["prior_weight"] == 1e-6
    links = data["plausibility"]["links"]
    assert [row["bound"]["source"] for row in links] == ["joint frames"] * 3 and all(row["plausible"] for row in links)
    table = {row["name"]: row for row in data["parameter_table"]}
    assert table["Fv1"]["std"] is not None and table["m1"]["stock"] == scara.joints[0].link.mass
    assert main([*argv, "--jobs", "1", "--no-bounds", "--no-compare-friction"]) == 0
    data = json.loads(report.read_text())
    assert data["plausibility"]["bounded"] is False and data["friction_comparison"] == []


def test_the_consistent_fit_keeps_each_mass_within_the_band() -> None:
    """A truth whose upper arm is three times the stock one (still a rigid body inside its bound): the
    torques do not pin the links' masses down one by one, and unbanded the fit puts more than twice the
    stock mass on some links; banded, every mass stays within ``MASS_BAND`` times the stock (the edge
    active), every link is plausible, and the torques are explained as well (the band costs < 1 %)."""
    stock = rd.load_robot(UR5, tip_link="tool0")
    truth = perturbed_model(stock, seed=2)
    arm = truth.joints[1].link
    heavier = 3.0 * stock.joints[1].link.mass / arm.mass
    joints = list(truth.joints)
    joints[1] = replace(joints[1], link=Inertial(arm.mass * heavier, arm.com, arm.inertia * heavier))
    truth = truth.with_changes(joints=tuple(joints))
    rec = record(truth, 4.0, 250.0, seed=4, effort_noise=np.full(6, 0.05))
    superset, pset = reduction_parameter_set(), friction_parameter_set("viscous-coulomb")
    settings = PipelineSettings(polyorder=6, window_s=0.1, reversal_velocity=0.0)
    stats = [statistics_from_arrays(stock, superset, rec.t, rec.q, rec.qd, rec.tau, settings)]
    options = {"settings": settings, "reduced": superset, "geometry": link_points(UR5, tip_link="tool0")}
    free = fit_statistics(stock, pset, stats, bounded=False, **options)  # type: ignore[arg-type]
    banded = fit_statistics(stock, pset, stats, base=free.base, **options)  # type: ignore[arg-type]
    lay = pset.layout(stock)

    def ratios(theta: np.ndarray) -> np.ndarray:
        return np.array([theta[lay.link_slice(i)][0] / j.link.mass for i, j in enumerate(stock.joints)])

    assert ratios(free.fit.theta).max() > 2.2  # the band matters here
    banded_ratios = ratios(banded.fit.theta)
    assert np.all((banded_ratios >= MASS_BAND[0]) & (banded_ratios <= MASS_BAND[1])), banded_ratios
    assert banded_ratios.max() == pytest.approx(MASS_BAND[1], rel=1e-3)
    assert all(row["plausible"] for row in banded.plausibility), banded.plausibility
    assert free.fit.cost <= banded.fit.cost <= 1.01 * free.fit.cost
    edge = [row["joint"] for row in banded.plausibility if row["at_band_edge"]]  # said, not hidden
    assert edge and all(
        any(f"{name!r}: mass" in w and "held at the edge of the mass band" in w for w in banded.warnings)
        for name in edge
    )
    assert not any("mass band" in w for w in free.warnings)

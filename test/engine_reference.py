"""Reference robots and closed forms for the engine tests (docs/references.md, closed forms).

The textbook arms are built with ``robot_dynamics.model.from_dh`` exactly as the books describe them;
the closed forms are the books' formulas (misprints corrected, docs/references.md), written independently.
Pinocchio models are built directly from DH parameters (not from our model's joint frames), or from
a URDF with Pinocchio's own parser.
"""

from __future__ import annotations

import importlib.metadata
import math
from pathlib import Path

import numpy as np

from robot_dynamics.model import DHRow, DHTable, Inertial, JointFriction, Motor, RobotModel, from_dh

G0 = 9.8062
PI = math.pi

# example-robot-data (a test extra) installs its URDFs under the venv's cmeel prefix
EXAMPLE_ROBOTS = Path(
    str(
        importlib.metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots"
        )
    )
)
# (URDF, tip link, joints Pinocchio must lock at 0 to get the same chain)
URDF_ARMS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand", ("panda_finger_joint1", "panda_finger_joint2")),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "tool0", ()),
    "z1": ("z1_description/urdf/z1.urdf", None, ()),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", None, ()),
}


def rod(mass: float, length: float, com: tuple[float, float, float] = (0.0, 0.0, 0.0), along: str = "x") -> Inertial:
    """A thin rod about its centre of mass (Fu's I_c = diag(0, m l^2/12, m l^2/12) along x)."""
    j = mass * length**2 / 12.0
    diag = {"x": (0.0, j, j), "z": (j, j, 0.0)}[along]
    return Inertial.from_components(mass, com, *diag)


def revolute(a: float = 0.0, alpha: float = 0.0, d: float = 0.0, theta: float = 0.0) -> DHRow:
    return DHRow("revolute", a, alpha, d, theta)


# ---------------------------------------------------------------------------------------------
# Fu two-link arm (Fu et al. 3.2.6): a1 = a2 = l (length), thin rods, c.o.m. at -l/2 along x_i, gravity (0, -g, 0)
# ---------------------------------------------------------------------------------------------
def fu_two_link(length: float = 0.7, m1: float = 2.5, m2: float = 1.3, g: float = G0) -> RobotModel:
    table = DHTable("standard", (revolute(a=length), revolute(a=length)))
    links = [rod(m1, length, (-length / 2, 0, 0)), rod(m2, length, (-length / 2, 0, 0))]
    return from_dh("fu", table, links, gravity=(0.0, -g, 0.0))


def fu_closed_form(q, qd, length, m1, m2, g):  # type: ignore[no-untyped-def]
    C1, C2, S2 = np.cos(q[:, 0]), np.cos(q[:, 1]), np.sin(q[:, 1])
    C12 = np.cos(q[:, 0] + q[:, 1])
    N = len(q)
    D = np.empty((N, 2, 2))
    D[:, 0, 0] = m1 * length**2 / 3 + 4 / 3 * m2 * length**2 + m2 * C2 * length**2
    D[:, 0, 1] = D[:, 1, 0] = m2 * length**2 / 3 + m2 * length**2 * C2 / 2
    D[:, 1, 1] = m2 * length**2 / 3
    h = np.stack(
        [
            -m2 * S2 * length**2 * qd[:, 1] ** 2 / 2 - m2 * S2 * length**2 * qd[:, 0] * qd[:, 1],
            m2 * S2 * length**2 * qd[:, 0] ** 2 / 2,
        ],
        axis=1,
    )
    c = np.stack([(m1 / 2 + m2) * g * length * C1 + m2 * g * length * C12 / 2, m2 * g * length * C12 / 2], axis=1)
    H = np.zeros((N, 2, 2, 2))
    H[:, 0, 0, 1] = H[:, 0, 1, 0] = H[:, 0, 1, 1] = -m2 * S2 * length**2 / 2
    H[:, 1, 0, 0] = m2 * S2 * length**2 / 2
    return D, h, H, c


# ---------------------------------------------------------------------------------------------
# Schilling two-axis planar arm (Schilling 6-5-14..20)
# ---------------------------------------------------------------------------------------------
def schilling_two_axis(
    a1: float = 0.45, a2: float = 0.3, m1: float = 3.0, m2: float = 1.7, g: float = G0
) -> RobotModel:
    table = DHTable("standard", (revolute(a=a1), revolute(a=a2)))
    links = [rod(m1, a1, (-a1 / 2, 0, 0)), rod(m2, a2, (-a2 / 2, 0, 0))]
    return from_dh("schilling2", table, links, gravity=(0.0, -g, 0.0))


def schilling_closed_form(q, qd, a1, a2, m1, m2, g):  # type: ignore[no-untyped-def]
    C1, C2, S2 = np.cos(q[:, 0]), np.cos(q[:, 1]), np.sin(q[:, 1])
    C12 = np.cos(q[:, 0] + q[:, 1])
    N = len(q)
    D = np.empty((N, 2, 2))
    D[:, 0, 0] = m1 * a1**2 / 3 + m2 * (a1**2 + a1 * a2 * C2 + a2**2 / 3)
    D[:, 0, 1] = D[:, 1, 0] = m2 * (a1 * a2 * C2 / 2 + a2**2 / 3)
    D[:, 1, 1] = m2 * a2**2 / 3
    # Coriolis/centrifugal terms of 6-5-17 and 6-5-20
    h = np.stack(
        [-m2 * a1 * a2 * S2 * (qd[:, 0] * qd[:, 1] + qd[:, 1] ** 2 / 2), m2 * a1 * a2 * S2 * qd[:, 0] ** 2 / 2], axis=1
    )
    c = np.stack([g * ((m1 / 2 + m2) * a1 * C1 + m2 * a2 * C12 / 2), g * m2 * a2 * C12 / 2], axis=1)
    return D, h, c


# ---------------------------------------------------------------------------------------------
# Schilling three-axis SCARA (Schilling 6-6): rows (d, a, theta, alpha) = (d1, a1, q1, pi), (0, a2, q2, 0),
# (q3, 0, 0, 0); rods m1, m2 along x, m3 a rod of length l3 along z, c.o.m. (0, 0, -l3/2)
# ---------------------------------------------------------------------------------------------
def scara(
    d1: float = 0.877, a1: float = 0.425, a2: float = 0.375, l3: float = 0.4, m=(8.0, 5.0, 2.0), g: float = G0
) -> RobotModel:  # type: ignore[no-untyped-def]
    table = DHTable(
        "standard", (revolute(a=a1, alpha=PI, d=d1), revolute(a=a2), DHRow("prismatic", 0.0, 0.0, 0.0, 0.0))
    )
    links = [rod(m[0], a1, (-a1 / 2, 0, 0)), rod(m[1], a2, (-a2 / 2, 0, 0)), rod(m[2], l3, (0, 0, -l3 / 2), "z")]
    return from_dh("scara", table, links, gravity=(0.0, 0.0, -g))


def scara_closed_form(q, qd, a1, a2, m1, m2, m3, g):  # type: ignore[no-untyped-def]
    C2, S2 = np.cos(q[:, 1]), np.sin(q[:, 1])
    N = len(q)
    D = np.zeros((N, 3, 3))
    D[:, 0, 0] = (m1 / 3 + m2 + m3) * a1**2 + (m2 + 2 * m3) * a1 * a2 * C2 + (m2 / 3 + m3) * a2**2
    D[:, 0, 1] = D[:, 1, 0] = -(m2 / 2 + m3) * a1 * a2 * C2 - (m2 / 3 + m3) * a2**2
    D[:, 1, 1] = (m2 / 3 + m3) * a2**2
    D[:, 2, 2] = m3
    # velocity terms of 6-6-25 and 6-6-28 (the Christoffel symbols of D): joint 3 has none
    k = a1 * a2 * S2
    h = np.stack(
        [
            -(m2 + 2 * m3) * k * qd[:, 0] * qd[:, 1] + (m2 / 2 + m3) * k * qd[:, 1] ** 2,
            (m2 / 2 + m3) * k * qd[:, 0] ** 2,
            np.zeros(N),
        ],
        axis=1,
    )
    c = np.zeros((N, 3))
    c[:, 2] = -g * m3  # 6-6-31: gravity acts on the vertical axis only
    return D, h, c


# ---------------------------------------------------------------------------------------------
# One-axis arm (Schilling 6-9): tau = m a^2 qdd / 3 + g m a C1 / 2 + b(qd), b of eq. 6-3-3
# ---------------------------------------------------------------------------------------------
def one_axis(a: float = 0.6, m: float = 2.2, g: float = G0, friction: JointFriction | None = None) -> RobotModel:
    table = DHTable("standard", (revolute(a=a),))
    return from_dh(
        "one_axis", table, [rod(m, a, (-a / 2, 0, 0))], gravity=(0.0, -g, 0.0), friction=[friction or JointFriction()]
    )


def one_axis_closed_form(q, qd, qdd, a, m, g, bv=0.0, bd=0.0, bs=0.0, eps=1.0):  # type: ignore[no-untyped-def]
    b = bv * qd + np.sign(qd) * (bd + (bs - bd) * np.exp(-np.abs(qd) / eps))  # 6-3-3
    return m * a**2 * qdd / 3 + g * m * a * np.cos(q) / 2 + b


# ---------------------------------------------------------------------------------------------
# ROBMAT double pendulum (Horn & Linge §5): point masses at the distal frame origins, gravity (g, 0, 0)
# ---------------------------------------------------------------------------------------------
def double_pendulum(L1: float = 1.1, L2: float = 0.8, m1: float = 1.4, m2: float = 0.9, g: float = 9.81) -> RobotModel:
    table = DHTable("standard", (revolute(a=L1), revolute(a=L2)))
    return from_dh("pendulum", table, [Inertial(m1), Inertial(m2)], gravity=(g, 0.0, 0.0))


def double_pendulum_closed_form(q, L1, L2, m1, m2, g):  # type: ignore[no-untyped-def]
    S1, S2, C2 = np.sin(q[:, 0]), np.sin(q[:, 1]), np.cos(q[:, 1])
    S12 = np.sin(q[:, 0] + q[:, 1])
    N = len(q)
    M = np.empty((N, 2, 2))
    M[:, 0, 0] = L1**2 * m1 + L1**2 * m2 + 2 * C2 * L1 * L2 * m2 + L2**2 * m2
    M[:, 0, 1] = M[:, 1, 0] = L2 * (C2 * L1 + L2) * m2
    M[:, 1, 1] = L2**2 * m2
    B = np.zeros((N, 2, 1))
    B[:, 0, 0] = -L1 * L2 * m2 * S2
    C = np.zeros((N, 2, 2))
    C[:, 0, 1] = -L1 * L2 * m2 * S2
    C[:, 1, 0] = L1 * L2 * m2 * S2
    G = np.stack([g * (L1 * m1 * S1 + L1 * m2 * S1 + L2 * m2 * S12), g * L2 * m2 * S12], axis=1)
    return M, B, C, G


# ---------------------------------------------------------------------------------------------
# PUMA 560, standard DH (Corke & Armstrong-Hélouvry 1994 as in Robotics Toolbox Puma560)
# ---------------------------------------------------------------------------------------------
PUMA_DH = [  # d, a, alpha
    (0.67183, 0.0, PI / 2),
    (0.0, 0.4318, 0.0),
    (0.15005, 0.0203, -PI / 2),
    (0.4318, 0.0, PI / 2),
    (0.0, 0.0, -PI / 2),
    (0.0, 0.0, 0.0),
]
PUMA_MASS = [0.0, 17.4, 4.8, 0.82, 0.34, 0.09]
PUMA_COM = [[0, 0, 0], [-0.3638, 0.006, 0.2275], [-0.0203, -0.0141, 0.070], [0, 0.019, 0], [0, 0, 0], [0, 0, 0.032]]
PUMA_INERTIA = [  # Ixx, Iyy, Izz
    (0.0, 0.35, 0.0),
    (0.13, 0.524, 0.539),
    (0.066, 0.086, 0.0125),
    (1.8e-3, 1.3e-3, 1.8e-3),
    (0.3e-3, 0.4e-3, 0.3e-3),
    (0.15e-3, 0.15e-3, 0.04e-3),
]
PUMA_JM = [200e-6, 200e-6, 200e-6, 33e-6, 33e-6, 33e-6]
PUMA_G = [-62.6111, 107.815, -53.7063, 76.0364, 71.923, 76.686]


def puma560() -> RobotModel:
    table = DHTable("standard", tuple(revolute(a=a, alpha=al, d=d) for d, a, al in PUMA_DH))
    links = [Inertial.from_components(m, c, *i) for m, c, i in zip(PUMA_MASS, PUMA_COM, PUMA_INERTIA, strict=True)]
    motors = [Motor(jm, g) for jm, g in zip(PUMA_JM, PUMA_G, strict=True)]
    return from_dh("puma560", table, links, motors=motors, gravity=(0.0, 0.0, -9.81))


# ---------------------------------------------------------------------------------------------
# Pinocchio models
# ---------------------------------------------------------------------------------------------
def pinocchio_puma560(motor_inertia: bool = True):  # type: ignore[no-untyped-def]
    """PUMA 560 built in Pinocchio directly from the standard DH table (joint i about the z of DH
    frame i-1; link i's inertia given in DH frame i = joint frame @ Tz(d) Tx(a) Rx(alpha))."""
    import pinocchio as pin

    model = pin.Model()
    parent, placement = 0, pin.SE3.Identity()
    for (d, a, alpha), m, c, inertia in zip(PUMA_DH, PUMA_MASS, PUMA_COM, PUMA_INERTIA, strict=True):
        joint = model.addJoint(parent, pin.JointModelRZ(), placement, f"j{parent + 1}")
        ca, sa = math.cos(alpha), math.sin(alpha)
        tail = pin.SE3(np.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]]), np.array([a, 0.0, d]))
        body = pin.Inertia(m, np.array(c, dtype=float), np.diag(inertia))
        model.appendBodyToJoint(joint, body, tail)
        parent, placement = joint, tail
    if motor_inertia:
        model.armature = np.array([g**2 * jm for g, jm in zip(PUMA_G, PUMA_JM, strict=True)])
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    return model


def pinocchio_urdf(name: str):  # type: ignore[no-untyped-def]
    """A URDF arm in Pinocchio (its own parser), with off-chain joints locked at 0."""
    import pinocchio as pin

    path, _, locked = URDF_ARMS[name]
    model = pin.buildModelFromUrdf(str(EXAMPLE_ROBOTS / path))
    if locked:
        ids = [model.getJointId(j) for j in locked]
        model = pin.buildReducedModel(model, ids, pin.neutral(model))
    return model


def pinocchio_from_model(model: RobotModel, motor_inertia: bool = True):  # type: ignore[no-untyped-def]
    """Any RobotModel in Pinocchio through the model's own joint frames (checks the engine only)."""
    import pinocchio as pin

    pm = pin.Model()
    parent = 0
    for joint in model.joints:
        placement = pin.SE3(joint.origin[:3, :3].copy(), joint.origin[:3, 3].copy())
        kind = pin.JointModelPrismaticUnaligned if joint.is_prismatic else pin.JointModelRevoluteUnaligned
        jid = pm.addJoint(parent, kind(joint.axis.copy()), placement, joint.name)
        body = pin.Inertia(joint.link.mass, joint.link.com.copy(), joint.link.inertia.copy())
        pm.appendBodyToJoint(jid, body, pin.SE3.Identity())
        parent = jid
    if motor_inertia:
        pm.armature = np.array(model.arrays.reflected_motor_inertia)
    pm.gravity.linear = model.gravity_base.copy()
    return pm


def random_states(seed: int, n: int, count: int, scale: float = 2.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.uniform(-np.pi, np.pi, (count, n))
    qd = rng.uniform(-scale, scale, (count, n))
    qdd = rng.uniform(-2 * scale, 2 * scale, (count, n))
    return q, qd, qdd


def max_relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """max |a - e| / max(1, max |e|) — the error relative to the quantity's scale."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    return float(np.abs(actual - expected).max() / max(1.0, float(np.abs(expected).max())))

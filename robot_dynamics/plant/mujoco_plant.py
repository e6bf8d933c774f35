"""The ``mujoco`` engine: the robot simulated by MuJoCo, behind the plant interface.

* **Stepping**: a control period is ``substeps`` MuJoCo steps of ``period / substeps`` s (the largest
  physics timestep not above ``max_timestep``), integrator ``implicitfast`` by default (damping
  integrated implicitly, so stiff damping stays stable), the limited torque held in ``qfrc_applied``.
  A duration that is not a whole number of physics steps (real time: the elapsed wall time) is
  rounded to whole steps and the remainder carried to the next call.
* **External wrench** at the tool: ``xfrc_applied`` of the tip body. MuJoCo applies it at the body's
  centre of mass, so the moment is shifted there: ``m_com = m + (p_tool - p_com) x f``.
* **Link-side torque** (``torque_sensing="link"``, :mod:`robot_dynamics.plant.base`): per physics step
  ``qfrc_applied + qfrc_passive + f_loss - armature * qacc`` on the chain's dofs, ``f_loss`` the
  friction-loss constraint forces (``efc_force`` of the ``mjCNSTR_FRICTION_DOF`` rows): the torque
  the joint passes on to its link; contact and joint-limit forces act on the links, not through the
  joint, and are left out. Averaged over the period's steps.
* **Exact inverse dynamics** (:meth:`MujocoPlant.inverse_dynamics`): ``mj_inverse`` at a desired
  ``(q, qd, qdd)`` on a separate ``MjData``: the joint torque that gives that acceleration in the
  plant, with armature, passive damping and the friction-loss constraint force (no external wrench);
  or (``link_side=True``) the link-side torque of that motion, the same formula as the reading's with
  ``qfrc_inverse`` for ``qfrc_applied``: the rigid links' ``M(q) qdd + h + c``.
* **True model** (:attr:`MujocoPlant.true_model`): :func:`robot_dynamics.plant.true_model.true_model`.
* **Obstacles** (:mod:`robot_dynamics.plant.obstacles`, :mod:`robot_dynamics.plant.mujoco_obstacles`):
  boxes and cylinders in the world, the arm's only contacts; the force each exerts on the arm
  (:attr:`MujocoPlant.obstacle_force`, world axes, and its moment about the world origin) averaged over
  the period's physics steps, as the torque reading is.
* **Payload**: the model is rebuilt with the payload as an extra body at the tool
  (:func:`robot_dynamics.plant.mujoco_model.compile_plant`); the state carries on.

Joint limits and contacts are MuJoCo's (the file's joint limits as limit constraints, collision
geometry as it compiles).
"""

from __future__ import annotations

import math
from functools import cached_property

import mujoco
import numpy as np

from robot_dynamics.errors import StateError
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.payload import Payload
from robot_dynamics.plant.base import Plant
from robot_dynamics.plant.deviations import NO_DEVIATIONS, Deviations
from robot_dynamics.plant.mujoco_model import CompiledPlant, PlantSource, compile_plant
from robot_dynamics.plant.mujoco_obstacles import obstacle_deflections, obstacle_forces
from robot_dynamics.plant.obstacles import NO_OBSTACLES, Obstacles
from robot_dynamics.plant.true_model import true_model

#: Largest physics timestep by default, s (docs/plant.md: the step error against a fine reference).
MAX_TIMESTEP = 0.001
FRICTION_DOF = int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF)


class MujocoPlant(Plant):
    """A robot simulated by MuJoCo (see the module docstring).

    ``model`` is the robot model the commands refer to (joint order, names, effort limits, gravity);
    ``source`` the robot file as MuJoCo compiles it (:func:`robot_dynamics.plant.mujoco_model.plant_source`),
    whose chain is ``model``'s.
    """

    engine = "mujoco"

    def __init__(
        self,
        source: PlantSource,
        model: RobotModel,
        period: float,
        deviations: Deviations = NO_DEVIATIONS,
        *,
        max_timestep: float = MAX_TIMESTEP,
        integrator: str = "implicitfast",
        torque_sensing: str = "motor",
        obstacles: Obstacles = NO_OBSTACLES,
    ) -> None:
        super().__init__(model, period, torque_sensing)
        if len(source.joints) != model.dof:
            raise ValueError(f"the plant source has {len(source.joints)} joints, the model {model.dof}")
        if not (math.isfinite(max_timestep) and max_timestep > 0.0):
            raise ValueError(f"max_timestep must be > 0 s, got {max_timestep}")
        self.substeps = max(1, math.ceil(self.period / max_timestep - 1e-9))
        self.timestep = self.period / self.substeps
        self.source = source
        self.deviations = deviations
        self.integrator = integrator
        self.obstacles = obstacles
        self._remainder = 0.0
        self._build(model)

    def _build(self, model: RobotModel) -> None:
        compiled = compile_plant(
            self.source,
            model,
            self.deviations,
            self.payload,
            timestep=self.timestep,
            integrator=self.integrator,
            obstacles=self.obstacles,
        )
        self.compiled: CompiledPlant = compiled
        self.mjmodel = compiled.model
        self.data = mujoco.MjData(compiled.model)
        self._inverse_data = mujoco.MjData(compiled.model)
        self.notes = compiled.notes
        m = len(self.obstacles)
        self.obstacle_force: FloatArray = np.zeros((m, 3))  # over the last step, world axes, on the arm
        self.obstacle_moment: FloatArray = np.zeros((m, 3))  # about the world origin
        self.__dict__.pop("true_model", None)

    # -- state ------------------------------------------------------------------------------------
    @property
    def q(self) -> FloatArray:
        return np.array(self.data.qpos[self.compiled.qpos])

    @property
    def qd(self) -> FloatArray:
        return np.array(self.data.qvel[self.compiled.dof])

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def obstacle_deflection(self) -> FloatArray:
        """Each obstacle's displacement from its place ``(m, 3)`` m, its own axes (0: rigid, or none)."""
        contacts = self.compiled.obstacles
        return np.zeros((0, 3)) if contacts is None else obstacle_deflections(self.data, contacts)

    def reset(self, q: FloatArray, qd: FloatArray) -> None:
        mujoco.mj_resetData(self.mjmodel, self.data)
        self.data.qpos[self.compiled.qpos] = q
        self.data.qvel[self.compiled.dof] = qd
        self._remainder = 0.0
        mujoco.mj_forward(self.mjmodel, self.data)

    def set_payload(self, payload: Payload, model: RobotModel) -> None:
        qpos, qvel, time = self.data.qpos.copy(), self.data.qvel.copy(), self.data.time
        self.payload, self.model = payload, model
        self._build(model)
        self.data.qpos[:], self.data.qvel[:], self.data.time = qpos, qvel, time
        mujoco.mj_forward(self.mjmodel, self.data)

    # -- stepping ---------------------------------------------------------------------------------
    def _tool_wrench(self) -> FloatArray:
        """The external wrench as ``xfrc_applied`` of the tip body (moment about its centre of mass)."""
        f, m = self._wrench[:3], self._wrench[3:]
        tip = self.compiled.tip_body
        arm = self.data.xpos[tip] - self.data.xipos[tip]
        return np.concatenate([f, m + np.cross(arm, f)])

    def _advance(self, tau: FloatArray, duration: float) -> None:
        total = duration + self._remainder
        steps = math.floor(total / self.timestep + 1e-9)
        self._remainder = total - steps * self.timestep
        d, m = self.data, self.mjmodel
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[self.compiled.dof] = tau
        tip = self.compiled.tip_body
        d.xfrc_applied[tip] = 0.0
        pushed = bool(self._wrench.any())
        link = self.torque_sensing == "link"
        transmitted = np.zeros(self.model.dof)
        contacts = self.compiled.obstacles
        force, moment = np.zeros_like(self.obstacle_force), np.zeros_like(self.obstacle_moment)
        for _ in range(steps):
            if pushed:  # the moment arm at this step's pose: kinematics first (mj_step1), then the force
                mujoco.mj_step1(m, d)
                d.xfrc_applied[tip] = self._tool_wrench()
                mujoco.mj_step2(m, d)
            else:
                mujoco.mj_step(m, d)
            if link:  # the step's forces and acceleration stay in d after the integration
                transmitted += self._transmitted(d, d.qfrc_applied)
            if contacts is not None:  # the step's contacts and forces, too
                f, mo = obstacle_forces(m, d, contacts)
                force += f
                moment += mo
        if link and steps:
            self._link_torque = transmitted / steps
        if contacts is not None and steps:
            self.obstacle_force, self.obstacle_moment = force / steps, moment / steps
        if not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()):
            raise StateError(f"the MuJoCo state became non-finite (warnings: {self._warnings()})")

    def _transmitted(self, d: mujoco.MjData, applied: FloatArray) -> FloatArray:
        """The torque each joint passes on to its link (module docstring) in ``d``'s step or inverse
        dynamics, ``applied`` the joint torque there (``qfrc_applied``, or ``qfrc_inverse``)."""
        m, dof = self.mjmodel, self.compiled.dof
        rows = d.efc_type[: d.nefc] == FRICTION_DOF
        loss = np.bincount(d.efc_id[: d.nefc][rows], d.efc_force[: d.nefc][rows], m.nv)
        return np.asarray(applied[dof] + d.qfrc_passive[dof] + loss[dof] - m.dof_armature[dof] * d.qacc[dof])

    def _warnings(self) -> str:
        """MuJoCo's warning counters that are set, by name (``mjtWarning`` is a pybind11 enum: not iterable)."""
        counts = [(i, w.number) for i, w in enumerate(self.data.warning) if w.number]
        return ", ".join(f"{mujoco.mjtWarning(i).name}: {n}" for i, n in counts) or "none"

    # -- what the plant knows about itself --------------------------------------------------------
    def inverse_dynamics(
        self, q: FloatArray, qd: FloatArray, qdd: FloatArray, *, link_side: bool = False
    ) -> FloatArray:
        """The joint torque that gives ``qdd`` at ``(q, qd)`` in this plant (``mj_inverse``), one state; with
        ``link_side`` the torque the joints then pass on to their links (the link-side torque of the module
        docstring: ``mj_inverse``'s torque less the joints' damping, friction loss and armature)."""
        values = [np.asarray(v, dtype=np.float64) for v in (q, qd, qdd)]
        n = self.model.dof
        for label, v in zip(("q", "qd", "qdd"), values, strict=True):
            if v.shape != (n,) or not np.isfinite(v).all():
                raise StateError(f"{label}: expected {n} finite values (one state), got {v.tolist()}")
        d = self._inverse_data
        d.qpos[:], d.qvel[:], d.qacc[:] = self.data.qpos, 0.0, 0.0
        d.qpos[self.compiled.qpos], d.qvel[self.compiled.dof], d.qacc[self.compiled.dof] = values
        mujoco.mj_inverse(self.mjmodel, d)
        if link_side:
            return self._transmitted(d, d.qfrc_inverse)
        return np.array(d.qfrc_inverse[self.compiled.dof])

    def contacts(self, q: FloatArray) -> list[tuple[str, str]]:
        """The pairs of bodies whose collision geometry touches at the pose ``q`` (none: ``[]``),
        computed on the inverse-dynamics ``MjData`` (the simulated state is not touched)."""
        d, m = self._inverse_data, self.mjmodel
        d.qpos[:] = self.data.qpos
        d.qpos[self.compiled.qpos] = np.asarray(q, dtype=np.float64)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)

        def body(geom: int) -> str:
            return mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, int(m.geom_bodyid[geom])) or f"body {geom}"

        return sorted({(body(c.geom1), body(c.geom2)) for c in d.contact[: d.ncon]})

    @cached_property
    def true_model(self) -> RobotModel:
        """The :class:`RobotModel` of what is simulated (deviations and payload included)."""
        compiled, model = self.compiled, self.model
        return true_model(
            compiled.model,
            compiled.joint_ids.tolist(),
            model.joint_names,
            compiled.tip_body,
            name=f"{model.name} (plant)",
            limits=[j.limits for j in model.joints],
            source=compiled.source.name,
        )

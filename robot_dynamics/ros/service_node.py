"""Dynamics service node: D/h/c coefficients, inverse and forward dynamics, trajectory simulation.

Services (relative names, remappable; definitions in ``robot_dynamics_interfaces/srv``):

* ``get_dynamics_coefficients`` (GetDynamicsCoefficients): D, h, c at ``(q, qd)``; optionally the
  Coriolis tensor h_ikm, the Coriolis matrix C(q, qd) and ROBMAT's B and C;
* ``inverse_dynamics`` (InverseDynamics): joint torques with breakdown and optional tool wrench;
* ``forward_dynamics`` (ForwardDynamics): joint accelerations from state + effort;
* ``simulate_trajectory`` (SimulateTrajectory): forward-dynamics simulation sampled into a
  ``trajectory_msgs/JointTrajectory``;
* ``get_task_space`` (GetTaskSpace): a frame's pose, geometric Jacobian, ``Jdot qd`` and, on request,
  its operational-space inertia (:mod:`robot_dynamics.dynamics.task_space`);
* ``~/set_payload`` (SetPayload, private name): the payload held by the tool, changed at run time
  (:mod:`.payload_service`).

Every response has ``success`` and ``message`` (the reason when ``success`` is false) and the joint
names of its arrays (the model's order; the topic names when the ``joint_map`` parameter renames
joints, which requests may use too). Matrices are ``std_msgs/Float64MultiArray``, row-major, with
filled layouts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import import_module
from typing import Any

import numpy as np
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose
from scipy.spatial.transform import Rotation
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_dynamics import dynamics
from robot_dynamics.dynamics import TorqueProfile
from robot_dynamics.errors import RobotDynamicsError
from robot_dynamics.feedforward import FeedforwardLaw
from robot_dynamics.model import FloatArray, RobotModel
from robot_dynamics.ros.messages import (
    as_double_array,
    duration_to_s,
    name_index,
    one_line,
    ordered_arrays,
    to_multiarray,
)
from robot_dynamics.ros.payload_service import PayloadSwitch, SetPayload
from robot_dynamics.ros.process import run_nodes
from robot_dynamics.ros.robot_node import RobotNode, check_bool, check_positive
from robot_dynamics.user_input import non_finite_message

# The interface package's folder in the source tree hides the built package from mypy: import by name.
_srv: Any = import_module("robot_dynamics_interfaces.srv")
ForwardDynamics = _srv.ForwardDynamics
GetDynamicsCoefficients = _srv.GetDynamicsCoefficients
GetTaskSpace = _srv.GetTaskSpace
InverseDynamics = _srv.InverseDynamics
SimulateTrajectory = _srv.SimulateTrajectory

FRICTION_NODE_DEFAULT, FRICTION_ON, FRICTION_OFF = 0, 1, 2
WRENCH_COMPONENTS = ("force.x", "force.y", "force.z", "torque.x", "torque.y", "torque.z")
TORQUE_CONSTANT, TORQUE_PROFILE, TORQUE_GRAVITY_COMPENSATION, TORQUE_PD = 0, 1, 2, 3


class RequestError(RobotDynamicsError):
    """A service request that cannot be answered (the message goes back in ``message``)."""


class DynamicsServiceNode(RobotNode):
    def __init__(self, node_name: str = "dynamics_service_node", **kwargs: Any) -> None:
        super().__init__(node_name, **kwargs)
        self.friction = True
        self.smooth = False
        self.declare_dynamic(
            "friction", True, "friction when a request says FRICTION_NODE_DEFAULT", check_bool, self._set_friction
        )
        self.declare_dynamic(
            "smooth_friction",
            False,
            "smooth (chatter-free) friction model in inverse dynamics",
            check_bool,
            self._set_smooth,
        )
        self.declare(
            "max_simulation_samples", 100000, "largest SimulateTrajectory output (samples)", check=check_positive("")
        )
        self.declare(
            "max_simulation_duration", 600.0, "longest SimulateTrajectory duration (s)", check=check_positive("s")
        )
        self.calls: dict[str, int] = {}
        self.payload_switch = PayloadSwitch(self, self._install_payload_model, _warm_engine)
        self.start_robot()  # the model (and its native backend) before the services appear
        self.create_service(
            GetDynamicsCoefficients, "get_dynamics_coefficients", self._wrap("coefficients", self._coefficients)
        )
        self.create_service(InverseDynamics, "inverse_dynamics", self._wrap("inverse_dynamics", self._inverse))
        self.create_service(ForwardDynamics, "forward_dynamics", self._wrap("forward_dynamics", self._forward))
        self.create_service(
            SimulateTrajectory, "simulate_trajectory", self._wrap("simulate_trajectory", self._simulate)
        )
        self.create_service(GetTaskSpace, "get_task_space", self._wrap("task_space", self._task_space))
        # private: the feed-forward node in the same namespace has its own
        self.create_service(SetPayload, "~/set_payload", self._wrap("set_payload", self._set_payload))

    def _set_friction(self, value: bool) -> None:
        self.friction = bool(value)

    def _set_smooth(self, value: bool) -> None:
        self.smooth = bool(value)

    def on_model(self, model: RobotModel) -> None:
        self.engine = dynamics
        self.payload_switch.on_model(model)

    def _install_payload_model(self, model: RobotModel) -> None:
        with self._model_lock:
            self.model = model  # requests read self.model once, when they arrive

    def _set_payload(self, model: RobotModel, req: Any, res: Any) -> None:
        self.payload_switch.handle(req, res)

    def diagnostic_values(self) -> list[tuple[str, str]]:
        return self.payload_switch.diagnostic_values()

    # -- plumbing -----------------------------------------------------------------------------------
    def _wrap(self, name: str, handler: Callable[[RobotModel, Any, Any], None]) -> Callable[[Any, Any], Any]:
        def serve(request: Any, response: Any) -> Any:
            t0 = time.perf_counter()
            self.stats.received += 1
            self.calls[name] = self.calls.get(name, 0) + 1
            model = self.model
            if model is None:
                response.success = False
                response.message = "no robot model yet (waiting for robot_description)"
                self.reject(name, response.message)
                return response
            try:
                handler(model, request, response)
            except (ValueError, KeyError, ArithmeticError, np.linalg.LinAlgError) as exc:
                response = type(response)()
                response.success = False
                response.message = one_line(exc.args[0] if isinstance(exc, KeyError) and exc.args else exc)
                self.reject(name, response.message)
                return response
            except Exception as exc:  # a service must answer, the node must live
                self.get_logger().error(f"{name}: internal error: {exc!r}")
                response = type(response)()
                response.success = False
                response.message = f"internal error: {one_line(repr(exc))}"
                self.stats.reject(name)
                return response
            response.success = True
            if not response.message:
                response.message = "ok"
            self.stats.published += 1
            self.stats.record_compute(time.perf_counter() - t0)
            return response

        return serve

    def _friction(self, value: int) -> bool:
        if value == FRICTION_NODE_DEFAULT:
            return self.friction
        if value == FRICTION_ON:
            return True
        if value == FRICTION_OFF:
            return False
        raise RequestError(f"friction must be 0 (node default), 1 (on) or 2 (off), got {value}")

    # -- handlers -------------------------------------------------------------------------------------
    def _coefficients(self, model: RobotModel, req: Any, res: Any) -> None:
        a = ordered_arrays(
            model.joint_names, req.joint_names, {"position": req.position, "velocity": req.velocity}, ["position"]
        )
        q, qd = a["position"], a["velocity"]
        e = self.engine
        res.joint_names = list(model.joint_names)
        res.inertia = to_multiarray(e.inertia_matrix(model, q), ("rows", "cols"))
        res.coriolis_centrifugal = as_double_array(e.coriolis_centrifugal(model, q, qd))
        res.gravity = as_double_array(e.gravity_torques(model, q))
        if req.include_coriolis_tensor:
            res.coriolis_tensor = to_multiarray(e.coriolis_tensor(model, q), ("i", "k", "m"))
        if req.include_coriolis_matrix:
            res.coriolis_matrix = to_multiarray(e.coriolis_matrix(model, q, qd), ("rows", "cols"))
        if req.include_robmat:
            rm = e.robmat_coefficients(model, q)
            res.robmat_b = to_multiarray(rm.B, ("rows", "pairs"))
            res.robmat_c = to_multiarray(rm.C, ("rows", "cols"))

    def _inverse(self, model: RobotModel, req: Any, res: Any) -> None:
        a = ordered_arrays(
            model.joint_names,
            req.joint_names,
            {"position": req.position, "velocity": req.velocity, "acceleration": req.acceleration},
            ["position"],
        )
        wrench = None
        if req.use_tool_wrench:
            f, m = req.tool_wrench.force, req.tool_wrench.torque
            wrench = np.array([f.x, f.y, f.z, m.x, m.y, m.z], dtype=np.float64)
            problem = non_finite_message("tool_wrench", wrench, WRENCH_COMPONENTS, "component")
            if problem:
                raise RequestError(problem)
        b = self.engine.inverse_dynamics(
            model,
            a["position"],
            a["velocity"],
            a["acceleration"],
            friction=self._friction(req.friction),
            wrench=wrench,
            breakdown=True,
            smooth=self.smooth,
        )
        res.joint_names = list(model.joint_names)
        res.effort = as_double_array(b.total)
        res.inertial = as_double_array(b.inertial)
        res.coriolis_centrifugal = as_double_array(b.coriolis_centrifugal)
        res.gravity = as_double_array(b.gravity)
        res.friction = as_double_array(b.friction)
        res.motor_inertia = as_double_array(b.motor_inertia)
        res.tool_wrench_torque = as_double_array(b.tool_wrench)

    def _forward(self, model: RobotModel, req: Any, res: Any) -> None:
        a = ordered_arrays(
            model.joint_names,
            req.joint_names,
            {"position": req.position, "velocity": req.velocity, "effort": req.effort},
            ["position"],
        )
        qdd = self.engine.forward_dynamics(
            model, a["position"], a["velocity"], a["effort"], friction=self._friction(req.friction)
        )
        res.joint_names = list(model.joint_names)
        res.acceleration = as_double_array(qdd)

    def _task_space(self, model: RobotModel, req: Any, res: Any) -> None:
        a = ordered_arrays(
            model.joint_names, req.joint_names, {"position": req.position, "velocity": req.velocity}, ["position"]
        )
        result = self.engine.task_space(
            model,
            a["position"],
            a["velocity"],
            link=req.link or None,
            axes=req.axes or "base",
            inertia=req.include_operational_space_inertia,
            rows=req.inertia_rows or None,
            rcond=req.inertia_rcond or None,  # 0: the exact inverse
        )
        res.joint_names = list(model.joint_names)
        res.link, res.base_link = result.link, model.base_link
        res.pose = pose_msg(result.pose)
        res.jacobian = to_multiarray(result.jacobian, ("rows", "cols"))
        res.jdot_qdot = as_double_array(result.jdot_qdot)
        if result.inertia is not None and result.condition is not None and result.rank is not None:
            res.operational_space_inertia = to_multiarray(result.inertia, ("rows", "cols"))
            res.inertia_condition, res.inertia_rank = float(result.condition), int(result.rank)

    def _simulate(self, model: RobotModel, req: Any, res: Any) -> None:
        names = model.joint_names
        a = ordered_arrays(names, req.joint_names, {"position": req.position, "velocity": req.velocity}, ["position"])
        duration, period = float(req.duration), float(req.sample_period)
        if not (np.isfinite(duration) and duration > 0.0):
            raise RequestError(f"duration must be > 0 s, got {duration}")
        if duration > float(self.param("max_simulation_duration")):
            raise RequestError(
                f"duration {duration} s exceeds max_simulation_duration {self.param('max_simulation_duration')} s"
            )
        if not (np.isfinite(period) and period > 0.0):
            raise RequestError(f"sample_period must be > 0 s, got {period}")
        samples = int(np.floor(duration / period + 1e-9)) + 1
        if samples > int(self.param("max_simulation_samples")):
            raise RequestError(
                f"{samples} samples (duration / sample_period) exceed max_simulation_samples "
                f"{self.param('max_simulation_samples')}"
            )
        friction = self._friction(req.friction)
        torque = self._torque_law(model, req, friction)
        t_eval = np.arange(samples) * period
        result = self.engine.simulate(
            model, a["position"], a["velocity"], torque, duration, t_eval=t_eval, friction=friction
        )
        res.trajectory = trajectory_msg(names, result.t, result.q, result.qd, result.qdd, result.tau)

    def _torque_law(self, model: RobotModel, req: Any, friction: bool) -> Any:
        names, law = model.joint_names, int(req.torque_law)
        e = self.engine
        if law == TORQUE_CONSTANT:
            return ordered_arrays(names, req.joint_names, {"effort": req.effort}, ["effort"])["effort"]
        if law == TORQUE_PROFILE:
            return _profile_law(model, req.effort_profile)
        if law == TORQUE_GRAVITY_COMPENSATION:
            ff = FeedforwardLaw(model)

            def compensation(t: float, q: FloatArray, qd: FloatArray) -> FloatArray:
                return ff.holding(q, qd, friction, True)  # c(q) + smooth friction compensation

            return compensation
        if law == TORQUE_PD:
            g = ordered_arrays(
                names,
                req.joint_names,
                {"target_position": req.target_position, "kp": req.kp, "kd": req.kd},
                ["target_position", "kp", "kd"],
            )
            target, kp, kd = g["target_position"], g["kp"], g["kd"]

            def pd(t: float, q: FloatArray, qd: FloatArray) -> FloatArray:
                return kp * (target - q) - kd * qd + np.asarray(e.gravity_torques(model, q), dtype=np.float64)

            return pd
        raise RequestError(
            f"torque_law must be 0 (constant), 1 (profile), 2 (gravity compensation) or 3 (PD), got {law}"
        )


def _warm_engine(model: RobotModel) -> None:
    """Trace (or load) the programs of the D/h/c and inverse dynamics requests for ``model``."""
    e = dynamics
    z = np.zeros(model.dof)
    e.inertia_matrix(model, z)
    e.coriolis_centrifugal(model, z, z)
    e.gravity_torques(model, z)
    e.inverse_dynamics(model, z, z, z, friction=True, breakdown=True)
    e.task_space(model, z, z, inertia=True, rcond=0.5)


def _profile_law(model: RobotModel, profile: Any) -> Any:
    """The engine's TorqueProfile of a JointTrajectory's efforts (linear between points, held outside)."""
    if not profile.points:
        raise RequestError("effort_profile has no points")
    index = name_index(model.joint_names, list(profile.joint_names), allow_extra=False, what="effort_profile")
    times = np.array([duration_to_s(p.time_from_start) for p in profile.points])
    if np.any(np.diff(times) <= 0.0):
        raise RequestError(f"effort_profile time_from_start is not strictly increasing: {times.tolist()}")
    rows = []
    for k, p in enumerate(profile.points):
        if len(p.effort) != len(profile.joint_names):
            raise RequestError(
                f"effort_profile point {k}: {len(p.effort)} efforts for {len(profile.joint_names)} joints"
            )
        rows.append(np.asarray(p.effort, dtype=np.float64)[index])
        problem = non_finite_message(f"effort_profile point {k}: effort", rows[-1], model.joint_names)
        if problem:
            raise RequestError(problem)
    efforts = np.array(rows)
    return TorqueProfile(times, efforts)


def pose_msg(pose: FloatArray) -> Pose:
    """``geometry_msgs/Pose`` of a 4 x 4 homogeneous transform (unit quaternion, ``w >= 0``)."""
    x, y, z, w = Rotation.from_matrix(pose[:3, :3]).as_quat(canonical=True)
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = (float(v) for v in pose[:3, 3])
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = float(x), float(y), float(z), float(w)
    return msg


def trajectory_msg(
    names: list[str], t: FloatArray, q: FloatArray, qd: FloatArray, qdd: FloatArray, tau: FloatArray
) -> JointTrajectory:
    out = JointTrajectory()
    out.joint_names = list(names)
    points = []
    for k in range(len(t)):
        ns = round(float(t[k]) * 1e9)
        p = JointTrajectoryPoint()
        p.positions = as_double_array(q[k])
        p.velocities = as_double_array(qd[k])
        p.accelerations = as_double_array(qdd[k])
        p.effort = as_double_array(tau[k])
        p.time_from_start = Duration(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)
        points.append(p)
    out.points = points
    return out


def main(args: list[str] | None = None) -> int:
    return run_nodes([("dynamics_service_node", DynamicsServiceNode)], args)


if __name__ == "__main__":
    raise SystemExit(main())

"""The generalized-momentum observer, the direct residual and collision detection (engine, no ROS).

References: a one-joint arm whose motion is known in closed form (the discrete observer is exact
there for any sample spacing); the engine's own forward dynamics with a known external torque
(``r = tau_ext (1 - exp(-K t))`` after a step, or the first-order filter of ``J^T F`` integrated with
the motion); ``C^T qd`` against the gradient of the kinetic energy; a step-by-step loop against the
vectorised batch.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from engine_reference import EXAMPLE_ROBOTS, one_axis
from scipy.integrate import solve_ivp

from robot_dynamics.contact import (
    CollisionDetector,
    calibrate_thresholds,
    check_thresholds,
    collision_states,
    transitions,
)
from robot_dynamics.dynamics import (
    coriolis_matrix,
    forward_dynamics,
    gravity_torques,
    inertia_matrix,
    inverse_dynamics,
    jacobian,
    kinetic_energy,
    prepare,
    simulate,
)
from robot_dynamics.dynamics._kernels import kernels
from robot_dynamics.dynamics.direct_residual import direct_residual
from robot_dynamics.dynamics.momentum_observer import (
    MomentumObserver,
    momentum_rate,
    momentum_terms,
    observe,
    scan_recurrence,
)
from robot_dynamics.errors import StateError
from robot_dynamics.models import load_robot
from robot_dynamics.payload import with_payload

PUMA = load_robot("puma560")
TAU_EXT = np.array([3.0, -5.0, 2.0, 0.5, -0.4, 0.3])


def steps(model, t, q, qd, tau, gain, **kw):  # type: ignore[no-untyped-def]
    observer = MomentumObserver(model, gain, **kw)
    return np.array([observer.update(*sample) for sample in zip(t, q, qd, tau, strict=True)])


# ------------------------------------------------------------------------------------------------
# exactness of the discrete form
# ------------------------------------------------------------------------------------------------
def test_exact_for_any_sample_spacing_when_the_assumptions_hold() -> None:
    """One joint without gravity: D constant, C = c = 0, so beta = tau_m; with tau_m linear in time
    and tau_ext constant, (3) must reproduce r = tau_ext (1 - exp(-K t)) at irregular samples."""
    model = one_axis(g=0.0)
    prepare(model, "python")  # a model of its own: no C build for it
    D = float(inertia_matrix_of(model))
    rng = np.random.default_rng(5)
    dt = rng.uniform(0.0002, 0.04, 300)  # 25 kHz ... 25 Hz, irregular
    t = np.concatenate([[0.0], np.cumsum(dt)])
    a, b, tau_ext, q0, v0 = 0.7, -0.9, 0.35, 0.2, -0.4
    qd = v0 + ((a + tau_ext) * t + b * t**2 / 2) / D
    q = q0 + v0 * t + ((a + tau_ext) * t**2 / 2 + b * t**3 / 6) / D
    tau_m = a + b * t
    for gain in (5.0, 50.0, 400.0):
        expected = tau_ext * (1.0 - np.exp(-gain * t))
        run = observe(model, t, q[:, None], qd[:, None], tau_m[:, None], gain, friction=False)
        assert np.max(np.abs(run.r[:, 0] - expected)) <= 1e-12
        one = steps(model, t, q[:, None], qd[:, None], tau_m[:, None], gain, friction=False)
        assert np.max(np.abs(one[:, 0] - expected)) <= 1e-12


def test_a_torque_held_over_each_step_is_exact_with_step_timing() -> None:
    """A simulator publishes with each state the torque it held over the step into it (the first state: no
    torque yet). One joint without gravity, a torque held per step and a constant external torque: with
    ``effort_timing="step"`` (3) is exact at any spacing, batch and one sample at a time; taken as samples,
    the trapezoid mixes the previous step's torque into each interval (and the first state's zero into the
    first): an error that grows with the torque's change per step."""
    model = one_axis(g=0.0)
    prepare(model, "python")
    D = float(inertia_matrix_of(model))
    rng = np.random.default_rng(7)
    dt = rng.uniform(0.0005, 0.03, 200)
    t = np.concatenate([[0.0], np.cumsum(dt)])
    held = 2.0 * np.sin(9.0 * t[:-1]) + rng.normal(0.0, 0.5, dt.size)  # T_k over [t_k, t_k+1]: a PD loop's
    tau_ext = -0.6
    acc = (held + tau_ext) / D
    qd = np.concatenate([[0.3], 0.3 + np.cumsum(acc * dt)])
    q = np.concatenate([[0.1], 0.1 + np.cumsum(qd[:-1] * dt + acc * dt**2 / 2)])
    effort = np.concatenate([[0.0], held])  # as the simulator publishes it
    for gain in (5.0, 50.0):
        expected = tau_ext * (1.0 - np.exp(-gain * t))
        args = (model, t, q[:, None], qd[:, None], effort[:, None], gain)
        run = observe(*args, friction=False, effort_timing="step")
        assert np.max(np.abs(run.r[:, 0] - expected)) <= 1e-12
        one = steps(*args, friction=False, effort_timing="step")
        assert np.max(np.abs(one[:, 0] - expected)) <= 1e-12
        sampled = observe(*args, friction=False)
        assert np.max(np.abs(sampled.r[:, 0] - expected)) > 0.05
    with pytest.raises(StateError, match="effort timing must be one of"):
        observe(model, t, q[:, None], qd[:, None], effort[:, None], 5.0, effort_timing="held")
    with pytest.raises(StateError, match="effort timing must be one of"):
        MomentumObserver(model, 5.0, effort_timing="held")


def test_the_observer_starts_at_the_first_torque_reading() -> None:
    """A PUMA 560 holding still against gravity whose first states carry no torque reading (efforts all 0 at
    rest: a simulator's first state, a delay line filling) is not pushed: r stays 0 in both timings, batch and
    one sample at a time; taken as readings, those zeros would be an external torque holding the arm. A state
    with zero efforts that moves, or with any effort, is a reading and is observed."""
    q = np.tile(PUMA.named_poses["qn"], (40, 1))
    qd = np.zeros_like(q)
    effort = gravity_torques(PUMA, q)
    effort[:3] = 0.0  # three states before the first reading
    t = np.arange(40) * 8e-3
    for timing in ("sampled", "step"):
        run = observe(PUMA, t, q, qd, effort, 50.0, friction=False, effort_timing=timing)
        assert run.start == 3 and np.abs(run.r).max() <= 1e-9
        one = MomentumObserver(PUMA, 50.0, friction=False, effort_timing=timing)
        r = np.array([one.update(*sample) for sample in zip(t, q, qd, effort, strict=True)])
        assert one.unread == 3 and one.samples == 37
        np.testing.assert_allclose(r, run.r, rtol=0, atol=1e-12)
    as_reading = observe(PUMA, t, q, qd, np.where(effort == 0.0, 1e-300, effort), 50.0, friction=False)
    assert as_reading.start == 0 and np.abs(as_reading.r).max() > 1.0  # the zeros as readings: held by the world
    moving = qd.copy()
    moving[0, 2] = 1e-3  # the first state moves: observed, its zero efforts are a reading
    assert observe(PUMA, t, q, moving, effort, 50.0, friction=False).start == 0
    one = MomentumObserver(PUMA, 50.0)
    with pytest.raises(StateError):  # an unread state is still checked
        one.update(0.0, q[0, :3], qd[0], np.zeros(6))
    one.update(0.0, q[0], qd[0], np.zeros(6))
    one.reset()
    assert one.unread == 0 and one.samples == 0


def test_states_without_a_reading_in_the_middle_of_a_run_are_not_observed() -> None:
    """A simulator reset in the middle of a run: the arm is put back at rest and the sensors' delay line
    fills with zeros again (two states with every effort 0 at rest), then the readings resume. Those states
    are not observed (r held, the next interval spans them), in the batch and one sample at a time alike, so
    r stays 0 for an arm holding still; taken as readings (the observer before this rule), the zeros are the
    world holding the arm: r of a collision's size on the shoulder."""
    q = np.tile(PUMA.named_poses["qn"], (60, 1))
    qd = np.zeros_like(q)
    effort = gravity_torques(PUMA, q)
    effort[30:32] = 0.0  # the reset's delay line
    t = np.arange(60) * 1e-3
    for timing in ("sampled", "step"):
        run = observe(PUMA, t, q, qd, effort, 50.0, friction=False, effort_timing=timing)
        assert run.start == 0 and run.unread == 2 and np.abs(run.r).max() <= 1e-9
        one = MomentumObserver(PUMA, 50.0, friction=False, effort_timing=timing)
        r = np.array([one.update(*sample) for sample in zip(t, q, qd, effort, strict=True)])
        assert one.unread == 2 and one.samples == 58
        np.testing.assert_allclose(r, run.r, rtol=0, atol=1e-12)
    read = observe(PUMA, t, q, qd, np.where(effort == 0.0, 1e-300, effort), 50.0, friction=False)
    assert np.abs(read.r).max() > 1.0  # the zeros as readings


def inertia_matrix_of(model):  # type: ignore[no-untyped-def]
    from robot_dynamics.dynamics import inertia_matrix

    return inertia_matrix(model, np.zeros(model.dof))[0, 0]


@pytest.fixture(scope="module")
def puma_step_push() -> tuple[np.ndarray, ...]:
    """PUMA 560 moving fast under a torque law, a constant external joint torque from t = 0, 1 kHz."""
    q0 = PUMA.named_poses["qn"]

    def applied(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return gravity_torques(PUMA, q) + 4.0 * np.sin(3.0 * t + np.arange(6)) + TAU_EXT

    run = simulate(
        PUMA, q0, np.full(6, 0.3), applied, 0.4, t_eval=np.arange(401) * 1e-3, friction=False, rtol=1e-12, atol=1e-12
    )
    return run.t, run.q, run.qd, run.tau - TAU_EXT  # tau_m: what the motors applied


def test_converges_to_a_step_of_external_torque_as_the_first_order_closed_form(
    puma_step_push: tuple[np.ndarray, ...],
) -> None:
    t, q, qd, tau_m = puma_step_push
    gain = np.array([50.0, 50.0, 50.0, 80.0, 80.0, 80.0])
    run = observe(PUMA, t, q, qd, tau_m, gain, friction=False)
    expected = TAU_EXT * (1.0 - np.exp(-gain * t[:, None]))
    err = np.max(np.abs(run.r - expected))
    # the trapezoid over beta is the only approximation: O(dt^2 beta'') while the arm swings (up to 9 rad/s)
    print(f"step push, 1 kHz, |qd| up to {np.abs(qd).max():.1f} rad/s: max |r - closed form| = {err:.2e} N·m")
    assert err <= 2e-6 * np.abs(TAU_EXT).max()
    # settled after 4/K: within 2 % (e^-4) of tau_ext
    settled = t >= 4.0 / 50.0
    assert np.all(np.abs(run.r[settled] - TAU_EXT) <= 0.02 * np.abs(TAU_EXT) + 1e-5)
    # a wrong model does not: the observer uses the model it is given (payload included)
    heavy = with_payload(PUMA, 1.5, (0.0, 0.0, 0.05))
    wrong = observe(heavy, t, q, qd, tau_m, gain, friction=False, backend="python")  # (no C build for one check)
    assert np.max(np.abs(wrong.r - expected)) > 0.1


def test_batch_equals_one_sample_at_a_time(puma_step_push: tuple[np.ndarray, ...]) -> None:
    t, q, qd, tau_m = puma_step_push
    for friction, smooth, timing in ((False, True, "sampled"), (True, True, "sampled"), (True, False, "step")):
        run = observe(PUMA, t, q, qd, tau_m, 50.0, friction=friction, smooth=smooth, effort_timing=timing)
        one = steps(PUMA, t, q, qd, tau_m, 50.0, friction=friction, smooth=smooth, effort_timing=timing)
        assert np.max(np.abs(run.r - one)) <= 1e-12 * max(1.0, np.abs(one).max())
    # irregular times, a 7-joint URDF arm, arbitrary (non-physical) samples
    panda = load_robot(
        str(EXAMPLE_ROBOTS / "panda_description/urdf/panda.urdf"),
        tip_link="panda_hand",
        locked_joints={"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0},
    )
    rng = np.random.default_rng(9)
    N = 300
    t = np.cumsum(rng.uniform(0.0005, 0.05, N))
    q, qd, tau = rng.uniform(-2, 2, (N, 7)), rng.uniform(-1, 1, (N, 7)), rng.uniform(-30, 30, (N, 7))
    gain = rng.uniform(10, 100, 7)
    run = observe(panda, t, q, qd, tau, gain)
    one = steps(panda, t, q, qd, tau, gain)
    assert np.max(np.abs(run.r - one)) <= 1e-12 * np.abs(one).max()


@pytest.mark.parametrize("name", ["puma560", "stanford", "scara"])
@pytest.mark.parametrize("kind", ["tanh", "linear", None])
def test_the_compiled_step_equals_the_step_by_parts(name: str, kind: str | None) -> None:
    """The compiled observer step (native library, the model's own friction) against the same step by
    parts on the Python backend (momentum terms, inverse dynamics, drive): every sample, a gain change,
    a model swap (a payload), a refused sample; revolute and prismatic joints; tanh, the linear window,
    and no friction."""
    compiled, by_parts = load_robot(name), load_robot(name)
    if kind is None:  # no friction at all
        joints = tuple(replace(j, friction=type(j.friction)(), motor=None) for j in compiled.joints)
        compiled, by_parts = compiled.with_changes(joints=joints), by_parts.with_changes(joints=joints)
    else:
        compiled, by_parts = compiled.with_changes(smooth_kind=kind), by_parts.with_changes(smooth_kind=kind)
    assert prepare(compiled, "native") == "native" and prepare(by_parts, "python") == "python"
    n = compiled.dof
    rng = np.random.default_rng(12)
    t = np.cumsum(rng.uniform(0.0005, 0.004, 200))
    q, qd, tau = rng.uniform(-1, 1, (200, n)), rng.uniform(-0.3, 0.3, (200, n)), rng.uniform(-20, 20, (200, n))
    fast, slow = MomentumObserver(compiled, 50.0), MomentumObserver(by_parts, 50.0)
    assert fast._key in kernels(compiled).native_library.single  # type: ignore[union-attr]
    heavy = with_payload(compiled, 1.5, [0.0, 0.0, 0.05])
    for k in range(200):
        if k == 80:
            fast.set_gain(30.0)
            slow.set_gain(30.0)
        if k == 120:
            fast.set_model(heavy), slow.set_model(with_payload(by_parts, 1.5, [0.0, 0.0, 0.05]))
        if k == 150:
            with pytest.raises(StateError):
                fast.update(t[k], q[k] * np.nan, qd[k], tau[k])
        a, b = fast.update(t[k], q[k], qd[k], tau[k]), slow.update(t[k], q[k], qd[k], tau[k])
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * max(1.0, float(np.abs(b).max())))
    np.testing.assert_array_equal(fast.decay, slow.decay)


def test_pushed_tool_a_wrench_through_the_jacobian_transpose() -> None:
    """A constant force on the tool while the arm moves: tau_ext = J(q)^T F changes along the motion;
    the reference filters it, dr/dt = K (J^T F - r), integrated together with the motion."""
    F = np.array([12.0, -8.0, 20.0, 0.5, -1.0, 0.3])  # on the tool, tool-frame axes
    K = 50.0
    q0 = PUMA.named_poses["qn"]

    def motors(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return gravity_torques(PUMA, q) + 3.0 * np.cos(2.0 * t + np.arange(6))

    def rhs(t: float, x: np.ndarray) -> np.ndarray:
        q, qd, r = x[:6], x[6:12], x[12:]
        push = jacobian(PUMA, q, frame="tool").T @ F
        qdd = forward_dynamics(PUMA, q, qd, motors(t, q, qd), friction=False, wrench=-F)  # the load is -F
        return np.concatenate([qd, qdd, K * (push - r)])

    t = np.arange(301) * 1e-3
    sol = solve_ivp(rhs, (0, t[-1]), np.concatenate([q0, np.zeros(12)]), t_eval=t, rtol=1e-12, atol=1e-12)
    q, qd, r_ref = sol.y[:6].T, sol.y[6:12].T, sol.y[12:].T
    tau_m = np.array([motors(tk, qk, qdk) for tk, qk, qdk in zip(t, q, qd, strict=True)])
    run = observe(PUMA, t, q, qd, tau_m, K, friction=False)
    err = np.max(np.abs(run.r - r_ref))
    print(f"pushed tool: max |r - filtered J^T F| = {err:.2e} N·m (|J^T F| up to {np.abs(r_ref).max():.1f})")
    # tau_ext now changes within each interval, which (3) holds at its interval mean: an error of
    # K dt^2 dtau/dt / 12 once settled (second order in dt), ~1e-5 of tau_ext here at 1 kHz
    assert err <= 2e-5 * np.abs(r_ref).max()
    assert np.max(np.abs(run.r[-1] - jacobian(PUMA, q[-1], frame="tool").T @ F)) <= 0.05 * np.abs(r_ref).max()


def test_with_friction_on_a_moving_arm() -> None:
    """The model's (exact) friction: the stick-slip simulation, joints never at rest."""

    def applied(t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        return inverse_dynamics(PUMA, q, qd, np.full(6, 2.0), friction=True) + TAU_EXT

    t = np.arange(301) * 1e-3
    run = simulate(PUMA, PUMA.named_poses["qn"], np.full(6, 0.5), applied, 0.3, t_eval=t, rtol=1e-12, atol=1e-12)
    assert np.all(run.qd > 0.1)
    tau_m = run.tau - TAU_EXT
    r = observe(PUMA, run.t, run.q, run.qd, tau_m, 50.0, friction=True, smooth=False).r
    expected = TAU_EXT * (1.0 - np.exp(-50.0 * run.t[:, None]))
    assert np.max(np.abs(r - expected)) <= 1e-5 * np.abs(TAU_EXT).max()
    frictionless = observe(PUMA, run.t, run.q, run.qd, tau_m, 50.0, friction=False).r
    assert np.max(np.abs(frictionless - expected)) > 0.5  # friction matters: it is b(qd) of (1)


@pytest.mark.parametrize("name", ["puma560", "stanford", "scara", "robmat_stanford_rrp", "puma560_modified"])
@pytest.mark.parametrize("backend", ["python", "native"])
def test_momentum_recursion_equals_d_qd_and_d_dot_qd(name: str, backend: str) -> None:
    """The O(n) recursion's ``p`` and ``dD/dt qd`` against ``D qd`` and ``(C + C^T) qd`` of the
    composite-rigid-body D and the probed Christoffel C (revolute and prismatic joints, standard and
    modified DH, motor inertia in D), one state and a batch."""
    model = load_robot(name)
    n = model.dof
    q, qd = np.random.default_rng(8).uniform(-2.0, 2.0, (2, 40, n))
    terms = momentum_terms(model, q, qd, backend=backend)
    D, C = inertia_matrix(model, q, backend="python"), coriolis_matrix(model, q, qd, backend="python")
    p = np.einsum("kij,kj->ki", D, qd)
    rate = np.einsum("kij,kj->ki", C + np.swapaxes(C, 1, 2), qd)
    np.testing.assert_allclose(terms[:, :n], p, rtol=0, atol=1e-12 * np.abs(p).max())
    np.testing.assert_allclose(terms[:, n:], rate, rtol=0, atol=1e-12 * np.abs(rate).max())
    for k in range(3):
        np.testing.assert_allclose(momentum_terms(model, q[k], qd[k], backend=backend), terms[k], rtol=0, atol=1e-12)
    with pytest.raises(StateError, match="qd"):
        momentum_terms(model, q[0], qd[0, :-1], backend=backend)


def test_coriolis_term_is_the_gradient_of_the_kinetic_energy() -> None:
    """C^T qd = dT/dq (T = qd^T D qd / 2), which the observer's beta contains: an independent check."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd = rng.uniform(-2, 2, 6), rng.uniform(-2, 2, 6)
        h = 1e-5
        grad = np.array(
            [(kinetic_energy(PUMA, q + h * e, qd) - kinetic_energy(PUMA, q - h * e, qd)) / (2 * h) for e in np.eye(6)]
        )
        ctqd = coriolis_matrix(PUMA, q, qd).T @ qd
        np.testing.assert_allclose(ctqd, grad, rtol=0, atol=1e-7 * max(1.0, np.abs(grad).max()))
        beta = momentum_rate(PUMA, q, qd, np.zeros(6), friction=False)
        np.testing.assert_allclose(beta, ctqd - gravity_torques(PUMA, q), rtol=0, atol=1e-12)


def test_direct_residual_is_the_external_torque_where_qdd_is_known(puma_step_push: tuple[np.ndarray, ...]) -> None:
    _, q, qd, tau_m = puma_step_push
    qdd = forward_dynamics(PUMA, q, qd, tau_m + TAU_EXT, friction=False)
    r = direct_residual(PUMA, q, qd, qdd, tau_m, friction=False)
    assert np.max(np.abs(r - TAU_EXT)) <= 1e-9
    with pytest.raises(StateError, match="tau_m"):
        direct_residual(PUMA, q[0], qd[0], qdd[0], tau_m[0, :5])


# ------------------------------------------------------------------------------------------------
# robustness
# ------------------------------------------------------------------------------------------------
def test_a_refused_sample_leaves_the_observer_as_it_was(puma_step_push: tuple[np.ndarray, ...]) -> None:
    t, q, qd, tau_m = puma_step_push
    clean = MomentumObserver(PUMA, 50.0, friction=False)
    hit = MomentumObserver(PUMA, 50.0, friction=False)
    for k in range(40):
        expected = clean.update(t[k], q[k], qd[k], tau_m[k])
        if k == 20:
            bad_tau = tau_m[k].copy()
            bad_tau[2] = math.nan
            for args in (
                (t[k], q[k], qd[k], bad_tau),
                (t[k], q[k], qd[k], tau_m[k, :5]),
                (t[k], np.full(6, math.inf), qd[k], tau_m[k]),
                (t[k - 1], q[k], qd[k], tau_m[k]),  # time not increasing
            ):
                with pytest.raises(StateError):
                    hit.update(*args)
        np.testing.assert_array_equal(hit.update(t[k], q[k], qd[k], tau_m[k]), expected)
    hit.reset()
    assert hit.samples == 0 and not hit.r.any()
    np.testing.assert_array_equal(hit.update(t[50], q[50], qd[50], tau_m[50]), np.zeros(6))


def test_a_model_swap_continues_without_a_jump(puma_step_push: tuple[np.ndarray, ...]) -> None:
    """Swapping to the same model (a payload of mass 0) must not change r at all; a real payload changes
    p and beta of the last sample too, so r does not jump at the swap."""
    t, q, qd, tau_m = puma_step_push
    plain = MomentumObserver(PUMA, 50.0, friction=False)
    swapped = MomentumObserver(PUMA, 50.0, friction=False)
    for k in range(30):
        expected = plain.update(t[k], q[k], qd[k], tau_m[k])
        if k == 10:
            swapped.set_model(with_payload(PUMA, 0.0))
        np.testing.assert_allclose(swapped.update(t[k], q[k], qd[k], tau_m[k]), expected, rtol=0, atol=1e-12)
    with pytest.raises(StateError, match="joints"):
        swapped.set_model(load_robot("fu_two_link"))


def test_long_recordings_and_gaps_do_not_overflow() -> None:
    """exp(-K t) over an hour (and a 10 s gap) underflows to 0: the scan stays finite and exact."""
    rng = np.random.default_rng(1)
    M = 5000
    a = np.exp(-50.0 * rng.uniform(0.0, 30.0, (M, 3)))
    a[100] = 0.0  # a gap: exp(-500) underflows
    u = rng.normal(size=(M, 3))
    r = scan_recurrence(a, u, np.ones(3))
    loop = np.empty_like(r)
    loop[0] = 1.0
    for k in range(M):
        loop[k + 1] = a[k] * loop[k] + u[k]
    assert np.isfinite(r).all()
    np.testing.assert_allclose(r, loop, rtol=0, atol=1e-13)


def test_bad_inputs_name_the_argument() -> None:
    t = np.array([0.0, 0.01, 0.01])
    z = np.zeros((3, 6))
    with pytest.raises(StateError, match="increase strictly"):
        observe(PUMA, t, z, z, z, 50.0)
    with pytest.raises(StateError, match="gain"):
        observe(PUMA, [0, 1, 2], z, z, z, -1.0)
    with pytest.raises(StateError, match="gain: expected 1 or 6"):
        MomentumObserver(PUMA, [1.0, 2.0])
    with pytest.raises(StateError, match="tau_m"):
        observe(PUMA, [0, 1, 2], z, z, z[:, :5], 50.0)


# ------------------------------------------------------------------------------------------------
# collision detection
# ------------------------------------------------------------------------------------------------
def test_hysteresis_one_sample_at_a_time_equals_the_batch() -> None:
    rng = np.random.default_rng(4)
    r = np.cumsum(rng.normal(size=(2000, 3)), axis=0) * 0.3
    th = np.array([4.0, 6.0, 5.0])
    detector = CollisionDetector(th, 0.5)
    stepwise = []
    for k, row in enumerate(r):
        stepwise += detector.update(row, k, 0.001 * k)
    batch = transitions(0.001 * np.arange(2000), r, th, 0.5)
    assert stepwise == batch and len(batch) > 10
    states = collision_states(r, th, 0.5)
    for e in batch:  # raised above the threshold, cleared below half of it, alternating per joint
        assert (e.magnitude > e.threshold) if e.raised else (e.magnitude < 0.5 * e.threshold)
        assert states[e.sample, e.joint] == e.raised
    for j in range(3):
        kinds = [e.raised for e in batch if e.joint == j]
        assert kinds == [k % 2 == 0 for k in range(len(kinds))]


def test_thresholds_are_checked_and_calibrated() -> None:
    np.testing.assert_array_equal(check_thresholds(2.0, 3), [2.0, 2.0, 2.0])
    for bad, reason in (([1.0, 2.0], "expected 1 or 3"), ([1.0, -2.0, 1.0], "> 0"), ([1.0, math.nan, 1.0], "> 0")):
        with pytest.raises(StateError, match=reason):
            check_thresholds(bad, 3)
    r = np.array([[0.5, -2.0], [-1.0, 1.0]])
    np.testing.assert_allclose(calibrate_thresholds(r, 1.5), [1.5, 3.0])
    assert not collision_states(r, calibrate_thresholds(r, 1.0 + 1e-9)).any()

"""The friction models compiled per model into one straight-line Python function for single states.

A NumPy call costs about a microsecond whatever the array size, so evaluating the friction of one
state with array operations would cost several times the engine's compiled single-state inverse
dynamics. :func:`scalar_program` therefore writes the same formulas as the model modules
(:mod:`.viscous_coulomb`, :mod:`.stribeck`, :mod:`.smooth`, :mod:`.motor`, :mod:`.bearing`,
:mod:`.transmission`) as Python source with the model's constants folded in, terms that are zero
left out, and compiles it once per model and variant. ``test_friction_fast.py`` checks it against
:func:`robot_dynamics.friction.apply_friction` at many random states.

The same source is the one description of the friction for the engine's fast paths: the Python
backend replays it on its tracer, fused into the Newton–Euler program (one state and NumPy batches,
``robot_dynamics.dynamics._friction_trace``), the native backend translates it to C. Direction
switches are therefore written with selects that are cheap on arrays — one-sided ``(a if c else
0.0)`` terms and selects between two constants — and give the same floats as the plain conditional
forms (``(cp if v > 0 else (cn if v < 0 else 0))`` = ``(cp if v > 0 else 0) + (cn if v < 0 else 0)``
since one of the two terms is 0; ``s L+`` / ``-s L-`` = ``s (L+ if s > 0 else -L-)``).

The program's signature is ``program(qd, tau, force, moment) -> list[float]``: ``qd``, ``tau``
sequences of ``n`` floats, ``force``/``moment`` the reactions flattened to ``3 n`` floats (or ``None``
when the model has no bearing friction); it returns the total friction ``(n,)`` (or, compiled with
``include_tau``, ``tau`` plus the friction: the actuator torque, saving the caller a loop).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence

from robot_dynamics.friction.parameters import FrictionParameters

ScalarProgram = Callable[
    [Sequence[float], Sequence[float], Sequence[float] | None, Sequence[float] | None], list[float]
]


def _interp(u: float, xs: tuple[float, ...], es: tuple[float, ...]) -> float:
    """Linear interpolation clamped at the ends (``numpy.interp`` for one point)."""
    if u <= xs[0]:
        return es[0]
    if u >= xs[-1]:
        return es[-1]
    j = bisect_right(xs, u)
    x0, e0 = xs[j - 1], es[j - 1]
    return e0 + (es[j] - e0) * (u - x0) / (xs[j] - x0)


def _c(value: float) -> str:
    return repr(float(value))


def _terms(coefficient: float, expression: str) -> str:
    """``coefficient*expression`` with the trivial cases folded."""
    if coefficient == 0.0:
        return ""
    if coefficient == 1.0:
        return expression
    return f"{_c(coefficient)}*{expression}"


def _joint_source(p: FrictionParameters, i: int, smooth: bool, kind: str) -> list[str]:
    v, b, s = f"v{i}", f"b{i}", f"s{i}"
    lines: list[str] = []
    transmission = next((t for t in p.transmissions if t.index == i), None)
    bearing_kind = "journal" if i in p.journal else "linear" if i in p.linear else "thrust" if i in p.thrust else None
    viscous = float(p.viscous[i] + p.motor_viscous[i])  # Schilling 6-3-3 first term + G^2 B
    cp = float(p.tc_pos[i] + p.motor_tc_pos[i])  # Coulomb levels, joint + |G| Tc (motor)
    cn = float(p.tc_neg[i] + p.motor_tc_neg[i])
    dsp = float(p.ts_pos[i] - p.tc_pos[i])  # Stribeck excess (Schilling 6-3-3 third term)
    dsn = float(p.ts_neg[i] - p.tc_neg[i])
    eps = float(p.stribeck_velocity[i])
    stribeck = eps > 0.0 and (dsp != 0.0 or dsn != 0.0)
    needs_s = smooth or bearing_kind is not None or transmission is not None
    if needs_s:
        inv_vs = _c(1.0 / float(p.smoothing_velocity[i]))
        if not smooth:
            lines.append(f"{s} = (1.0 if {v} > 0.0 else 0.0) - (1.0 if {v} < 0.0 else 0.0)")  # sgn(v)
        elif kind == "tanh":
            lines.append(f"{s} = tanh({v}*{inv_vs})")
        else:
            lines.append(f"x = {v}*{inv_vs}")
            lines.append(f"{s} = 1.0 if x >= 1.0 else (-1.0 if x <= -1.0 else x)")
    parts = [_terms(viscous, v)]
    if cp != 0.0 or cn != 0.0 or stribeck:
        if stribeck:
            lines.append(f"e = exp(-abs({v})*{_c(1.0 / eps)})")
            pos, neg = f"({_c(cp)} + {_c(dsp)}*e)", f"({_c(cn)} + {_c(dsn)}*e)"
            minus_neg = f"-{neg}"
        else:
            pos, neg, minus_neg = _c(cp), _c(cn), _c(-cn)
        if smooth:  # s L+ for s > 0, -s L- for s < 0 (smooth.asymmetric_level)
            parts.append(f"{s}*({pos} if {s} > 0.0 else {minus_neg})")
        else:
            parts.append(f"({pos} if {v} > 0.0 else 0.0) + ({neg} if {v} < 0.0 else 0.0)")
    parts = [x for x in parts if x]
    lines.append(f"{b} = {' + '.join(parts) if parts else '0.0'}")
    if bearing_kind is not None:  # Dhanaraj (1990) Table 3.1 in the joint's axis frame
        rot = p.bearing_rotation[i]
        for vec, src in (("f", "force"), ("m", "moment")):
            if bearing_kind == "thrust" and vec == "m":
                continue
            for r, axis in enumerate("xyz"):
                if (bearing_kind != "thrust" and axis == "z") or (bearing_kind == "thrust" and axis != "z"):
                    continue
                terms = [_terms(float(rot[r, c]), f"{src}[{3 * i + c}]") for c in range(3)]
                terms = [t for t in terms if t]
                lines.append(f"{vec}{axis} = {' + '.join(terms) if terms else '0.0'}")
        mu, radius, spacing = float(p.bearing_mu[i]), float(p.bearing_radius[i]), float(p.bearing_spacing[i])
        if bearing_kind == "journal":
            h = _c(0.5 * spacing)
            a_side, b_side = f"hypot({h}*fx + my, {h}*fy - mx)", f"hypot({h}*fx - my, {h}*fy + mx)"
            lines.append(f"{b} += {s}*{_c(mu * radius / spacing)}*({a_side} + {b_side})")
        elif bearing_kind == "linear":
            h = _c(0.5 * spacing)
            a_side, b_side = f"abs({h}*fx + my) + abs({h}*fy - mx)", f"abs({h}*fx - my) + abs({h}*fy + mx)"
            lines.append(f"{b} += {s}*{_c(mu / spacing)}*({a_side} + {b_side})")
        else:
            lines.append(f"{b} += {s}*{_c(mu * radius)}*abs(fz)")
    if transmission is not None:  # Dhanaraj (1990) Table 3.2
        xs = tuple(float(x) for x in transmission.curve.u)
        es = tuple(float(e) for e in transmission.curve.eta)
        lines.append(f"to = tau[{i}] + {b}")
        lines.append("mag = abs(to)")
        lines.append(f"eta = interp(mag*{_c(1.0 / transmission.max_torque)}, {xs!r}, {es!r})")
        lines.append(
            f"{b} += {s}*({_c(transmission.breakaway)} + mag*((1.0/eta - 1.0) if to*{v} > 0.0 else (1.0 - eta)))"
        )
    return lines


def scalar_source(p: FrictionParameters, smooth: bool, kind: str, include_tau: bool = False) -> str:
    """The source of :func:`scalar_program`: ``def friction(qd, tau, force, moment)`` using only
    assignments, ``+=``, arithmetic, conditional expressions, comparisons, subscripts with integer
    constants and calls of ``tanh``, ``exp``, ``hypot``, ``abs`` and ``interp(x, xs, es)``
    (the engine's native backend translates exactly this subset to C)."""
    n = p.n
    body = ["def friction(qd, tau, force, moment):"]
    if n:
        body.append(f"    {', '.join(f'v{i}' for i in range(n))}{',' if n == 1 else ''} = qd")
    for i in range(n):
        body.extend(f"    {line}" for line in _joint_source(p, i, smooth, kind))
    if include_tau and n:
        body.append(f"    {', '.join(f't{i}' for i in range(n))}{',' if n == 1 else ''} = tau")
        body.append(f"    return [{', '.join(f't{i} + b{i}' for i in range(n))}]")
    else:
        body.append(f"    return [{', '.join(f'b{i}' for i in range(n))}]")
    return "\n".join(body)


def scalar_program(p: FrictionParameters, smooth: bool, kind: str, include_tau: bool = False) -> ScalarProgram:
    """The compiled single-state total-friction function of a model (see the module docstring).

    ``include_tau``: return ``tau + friction`` (the actuator torque) instead of the friction alone.
    """
    namespace: dict[str, object] = {
        "tanh": math.tanh,
        "exp": math.exp,
        "hypot": math.hypot,
        "interp": _interp,
    }
    source = scalar_source(p, smooth, kind, include_tau)
    exec(compile(source, f"<friction program {p.n} joints>", "exec"), namespace)
    program: ScalarProgram = namespace["friction"]  # type: ignore[assignment]
    return program

"""Identification core throughput: regressor, normal equations, base parameters and both fits.

Usage: ``.venv/bin/python bench/bench_ident_core.py [--states 100000] [--repeat 3]``

For the PUMA 560 (bundled, 6 DoF) and the Franka Panda (example-robot-data URDF, 7 DoF), with the
default parameter set (10 inertial per link + armature, viscous, tanh Coulomb, offset per joint):

* ``rows``: the regressor's per-link rows alone (the forward recursion and the row blocks);
* ``regressor``: ``regressor()`` returning the whole ``(N, n, p)`` array (memory bound: 5.9 kB/state
  for the Panda);
* ``accumulate``: normal equations built chunk by chunk (rows + the per-joint Gram products);
* peer in the same run: ``rd.inverse_dynamics`` on the same batch (one torque vector per state, the
  engine's compiled Newton–Euler) — the ratio says what a row of ``Y`` costs relative to ``tau``;
* ``base`` (2000 random states), the WLS fit and the physically consistent fit on 3000 noisy states.

All times are best of ``--repeat``; microseconds per state where per state.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

import robot_dynamics as rd
from robot_dynamics.identification import (
    ParameterSet,
    accumulate,
    base_parameters,
    fit_consistent,
    fit_least_squares,
    nominal_parameters,
    regressor,
    with_coulomb_velocity,
)
from robot_dynamics.identification.base import random_states
from robot_dynamics.identification.regressor import _link_blocks
from robot_dynamics.model import RobotModel


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def panda() -> RobotModel:
    root = Path(
        str(
            importlib.metadata.distribution("example-robot-data").locate_file(
                "cmeel.prefix/share/example-robot-data/robots"
            )
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_robot(str(root / "panda_description/urdf/panda.urdf"), tip_link="panda_hand")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n_states = args.states
    pset = ParameterSet()
    print(f"{'robot':<8} {'rows':>8} {'regressor':>10} {'accumulate':>11} {'ID (peer)':>10}   us/state, N = {n_states}")
    for model in (rd.load_robot("puma560"), panda()):
        rng = np.random.default_rng(0)
        q, qd, qdd = random_states(model, n_states, rng)
        tau = np.asarray(rd.inverse_dynamics(model, q, qd, qdd, smooth=True))
        lay = pset.layout(model)

        def rows(lay=lay, q=q, qd=qd, qdd=qdd, model=model) -> None:  # type: ignore[no-untyped-def]
            for start in range(0, n_states, 20_000):
                sl = slice(start, start + 20_000)
                for _ in _link_blocks(model, q[sl], qd[sl], qdd[sl], lay.links):
                    pass

        t_rows = best(rows, args.repeat)
        t_reg = best(lambda model=model, q=q, qd=qd, qdd=qdd: regressor(model, q, qd, qdd, pset), args.repeat)
        t_acc = best(
            lambda model=model, q=q, qd=qd, qdd=qdd, tau=tau: accumulate(model, q, qd, qdd, tau, pset), args.repeat
        )
        t_id = best(lambda model=model, q=q, qd=qd, qdd=qdd: rd.inverse_dynamics(model, q, qd, qdd), args.repeat)
        us = 1e6 / n_states
        print(
            f"{model.name:<8} {t_rows * us:8.2f} {t_reg * us:10.2f} {t_acc * us:11.2f} {t_id * us:10.2f}"
            f"   (accumulate / ID = {t_acc / t_id:.1f})"
        )
        # base parameters and the two fits
        t0 = time.perf_counter()
        base = base_parameters(model, pset)
        t_base = time.perf_counter() - t0
        sigma = 0.1
        q3, qd3, qdd3 = random_states(model, 3000, rng)
        smooth_model = with_coulomb_velocity(model, pset.coulomb_velocity)
        tau3 = np.asarray(rd.inverse_dynamics(smooth_model, q3, qd3, qdd3, smooth=True))
        tau3 = tau3 + rng.normal(0.0, sigma, tau3.shape)
        ne = accumulate(model, q3, qd3, qdd3, tau3, pset, np.full(model.dof, 1.0 / sigma**2))
        nominal = nominal_parameters(model, pset)
        t_wls = best(lambda ne=ne, base=base, nominal=nominal: fit_least_squares(ne, base, nominal), args.repeat)
        t0 = time.perf_counter()
        fit = fit_consistent(ne, model, pset, base, nominal)
        t_cons = time.perf_counter() - t0
        wls = fit_least_squares(ne, base, nominal)
        print(
            f"         base parameters {t_base:.2f} s (rank {base.rank} of {len(base.parameter_names)}), "
            f"WLS {t_wls * 1e3:.1f} ms, consistent {t_cons:.2f} s "
            f"(cost {fit.cost:.6g} vs WLS {wls.cost:.6g})"
        )


if __name__ == "__main__":
    main()

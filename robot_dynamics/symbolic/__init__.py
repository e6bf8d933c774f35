"""Symbolic closed-form dynamics and code generation (SymPy, no ROS).

* :mod:`.model` — a robot's parameters as SymPy values, numeric or kept as chosen symbols
  (ROBMAT's ``m[1]``, ``L[1]``, ``g``);
* :mod:`.lagrange` — fully simplified D, h, h_ikm, c and ROBMAT's M, B, C, G for small robots;
* :mod:`.newton_euler` — the thesis's customised modified Newton–Euler as a straight-line
  program of named intermediates, plus the optimisations that beat Table 2.10;
* :mod:`.report`, :mod:`.codegen_python`, :mod:`.codegen_c` — Markdown/LaTeX, NumPy and C output;
* :mod:`.opcount` — multiplications, additions and trig calls of a generated program;
* :mod:`.backend` — ``get_backend(model, language)``: generated, compiled, cached on disk;
* :mod:`.schedule` — thesis ch. 4 layered task graph and list scheduling.

Importing this package does not import SymPy; the sub-modules that need it do.
"""

from robot_dynamics.symbolic.backend import GeneratedBackend, get_backend

__all__ = ["GeneratedBackend", "get_backend"]

"""Operation counts of generated straight-line programs (thesis Table 2.10 convention).

What is counted, per expression tree exactly as the code generators print it:

* **multiplications**: every binary product, including products with a constant (``0.34*x`` is 1)
  and squares (``x*x`` is 1); ``x**k`` costs ``k-1``. A factor ``-1`` is not a multiplication.
* **additions**: every binary sum or difference (``a - b`` is 1 addition).
* **negations**: a sign change that cannot be absorbed into a subtraction (``y = -(a + b)``);
  reported separately, not part of the thesis's M/A (the thesis's listings write ``-(...)`` freely).
* **divisions** and other functions: reported separately (the inverse-dynamics programs have none).
* **trig**: ``sin``/``cos`` calls. The thesis takes ``sin q_i``, ``cos q_i`` as inputs, so
  :func:`count_program` reports them apart (``trig``) and leaves them out of M/A.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Ops:
    mul: int = 0
    add: int = 0
    neg: int = 0
    div: int = 0
    trig: int = 0
    other: int = 0

    def __add__(self, o: Ops) -> Ops:
        return Ops(
            self.mul + o.mul,
            self.add + o.add,
            self.neg + o.neg,
            self.div + o.div,
            self.trig + o.trig,
            self.other + o.other,
        )

    @property
    def flops(self) -> int:
        """Multiplications + additions (+ divisions): the thesis's "flops"."""
        return self.mul + self.add + self.div

    def as_dict(self) -> dict[str, int]:
        return {
            "mul": self.mul,
            "add": self.add,
            "neg": self.neg,
            "div": self.div,
            "trig": self.trig,
            "other": self.other,
        }


ZERO = Ops()


def _negative(term: sp.Expr) -> bool:
    c, _ = term.as_coeff_Mul()
    return bool(c.is_number and c.is_negative)


def count(expr: sp.Expr, *, signed: bool = True) -> Ops:
    """Operations to evaluate ``expr``. ``signed=False``: a leading minus sign is absorbed by the
    caller (a term of a sum), so it is not counted as a negation."""
    if expr.is_Atom:
        if signed and expr.is_number and expr.is_negative:
            return ZERO  # a negative literal costs nothing
        return ZERO
    if isinstance(expr, sp.Add):
        terms = expr.args
        ops = Ops(add=len(terms) - 1)
        for t in terms:
            ops = ops + count(t, signed=False)
        if signed and all(_negative(t) for t in terms):
            ops = ops + Ops(neg=1)
        return ops
    if isinstance(expr, sp.Mul):
        c, rest = expr.as_coeff_Mul()
        factors = sp.Mul.make_args(rest)
        ops = ZERO
        nfactors = 0
        for f in factors:
            if isinstance(f, sp.Pow) and f.exp.is_Integer and int(f.exp) < 0:
                k = -int(f.exp)
                ops = ops + Ops(div=1, mul=k - 1) + count(f.base)  # x / y: no product
                continue
            ops = ops + count(f)
            nfactors += 1
        if c.is_number and c != 1 and c != -1:
            nfactors += 1
        ops = ops + Ops(mul=max(nfactors - 1, 0))
        if signed and c.is_number and c.is_negative:
            ops = ops + Ops(neg=1)
        return ops
    if isinstance(expr, sp.Pow):
        if expr.exp.is_Integer:
            k = int(expr.exp)
            if k >= 2:
                return Ops(mul=k - 1) + count(expr.base)
            if k < 0:
                return Ops(div=1, mul=max(-k - 1, 0)) + count(expr.base)
        return Ops(other=1) + count(expr.base)
    if isinstance(expr, (sp.sin, sp.cos)):
        return Ops(trig=1) + count(expr.args[0])
    ops = Ops(other=1)
    for a in expr.args:
        ops = ops + count(a)
    return ops


def count_all(exprs: Iterable[sp.Expr]) -> Ops:
    total = ZERO
    for e in exprs:
        total = total + count(e)
    return total


def trig_calls(assignments: Iterable[tuple[sp.Symbol, sp.Expr]]) -> int:
    """``sin``/``cos`` calls of a generated program, i.e. of its assignments as the code generators
    print them (``Program.all_assignments()``): each joint angle's sine and cosine appear once, and
    only for the joints whose angle the dynamics needs (the PUMA 560 needs ``q2..q5``: 8 calls; the
    Stanford arm ``q2``, ``q4``, ``q5``: 6 calls)."""
    return count_all(e for _, e in assignments).trig


TABLE_2_10: dict[str, dict[str, tuple[int, int] | None]] = {
    "PUMA 3 DOF": {"thesis": (80, 55), "Murray & Neuman 1988": (55, 42), "Toogood 1989": (114, 81)},
    "Stanford 3 DOF": {"thesis": (48, 33), "Murray & Neuman 1988": (40, 24)},
    "PUMA 6 DOF": {
        "thesis": (208, 152),
        "Murray & Neuman 1988": (152, 249),
        "Toogood 1989": (441, 365),
        "Khalil 1986": (214, 176),
        "Burdick 1986": (401, 254),
        "Balafoutis 1988": (277, 255),
    },
    "Stanford 6 DOF": {
        "thesis": (183, 140),
        "Murray & Neuman 1988": (183, 147),
        "Toogood 1989": (338, 276),
        "Khalil 1986": (187, 152),
    },
}
"""Dhanaraj (1990) Table 2.10: multiplications/additions of symbolically customised inverse dynamics."""

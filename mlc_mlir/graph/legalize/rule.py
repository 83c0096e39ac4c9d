"""The shape of a legalization rule, and the rule that calls one topi function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..builder.block_builder import BlockBuilder
from ..ir.expr import Call, Expr

__all__ = ["LegalizeRule", "_rule"]

LegalizeRule = Callable[[BlockBuilder, Call], Expr]


def _rule(te_fn: Callable[..., Any], name: str, *attr_names: str) -> LegalizeRule:
    """A rule calling ``te_fn(*args, *attrs)``: the op's arguments, then its attributes
    ``attr_names`` in order (a missing one is None); the tensor program is named ``name``."""

    def rule(bb: BlockBuilder, call: Call) -> Expr:
        extra = [call.attrs.get(a) for a in attr_names]
        return bb.call_te(te_fn, *call.args, *extra, primfunc_name_hint=name)

    rule.__name__ = f"legalize_{name}"
    return rule

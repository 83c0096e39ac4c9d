"""``mlc.graph.Function``: a graph function of a module, with the course's AST view.

``mod["main"]`` of a graph function is one of these (a :class:`mlc_mlir.ir.Function`,
so ``script()`` still gives the MLIR). It adds the Relax ``Function`` fields of course
ch.7: ``params``, ``body`` (``.blocks``, ``.body``), ``attrs``, ``ret_struct_info``,
and ``show()`` prints it as readable Relax-like text (:mod:`.printer`).
"""

from __future__ import annotations

from typing import Any

from ...ir import Function as _IRFunction
from .analysis import PRIMITIVE_ATTR
from .ast import lift
from .expr import TensorStructInfo, Var
from .printer import function_text

__all__ = ["Function"]


class Function(_IRFunction):
    """A graph function (the course's ``relax.Function``)."""

    def _ast(self) -> tuple[list[Var], Any]:
        if getattr(self, "_lifted", None) is None:
            self._lifted = lift(self.op)
        return self._lifted

    @property
    def params(self) -> list[Var]:
        """The parameters, as :class:`~mlc_mlir.graph.Var` (``[x, y]``)."""
        return self._ast()[0]

    @property
    def body(self) -> Any:
        """The body: a :class:`~mlc_mlir.graph.ir.ast.SeqExpr` (``.blocks``, ``.body``)."""
        return self._ast()[1]

    @property
    def attrs(self) -> dict[str, Any] | None:
        """The course's function attributes: ``{"Primitive": 1}`` for a fused function,
        None when there are none."""
        return {"Primitive": 1} if PRIMITIVE_ATTR in self.op.attributes else None

    @property
    def ret_struct_info(self) -> TensorStructInfo | tuple[TensorStructInfo, ...]:
        """The result type(s)."""
        body = self.body.body
        outs = body if isinstance(body, tuple) else (body,)
        infos = tuple(o.struct_info for o in outs)
        return infos[0] if len(infos) == 1 else infos

    def text(self) -> str:
        """The function as Relax-like text (what :meth:`show` prints)."""
        return function_text(self)

    def show(self) -> None:
        """Print the function as Relax-like text; ``script()`` gives the MLIR."""
        print(self.text())

    def __repr__(self) -> str:
        return f"<mlc.graph.Function @{self.name}: {self.function_type}>"

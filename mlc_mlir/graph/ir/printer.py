"""Relax-like text of graph functions and modules (``mod.show()``, ``func.show()``).

    def main(x: Tensor((1, 784), float32)) -> Tensor((1, 10), float32):
        with dataflow():
            lv0 = call_tir(@linear0, (x, c0, c1), out=(1, 128) float32)
            lv1 = relu(lv0)                                  # (1, 128) float32
            gv = call_tir(@linear1, (lv1, c2, c3), out=(1, 10) float32)
            output(gv)
        return gv
    # constants: c0 (128, 784) float32 "w0", c1 (128,) float32 "b0", ...

Constants are numbered per function in order of use (the names do not depend on how
many passes ran); tensor programs are printed as their MLIR.
"""

from __future__ import annotations

from typing import Any

from ...ir import GlobalVar
from ...tensor_types import format_shape
from .expr import Call, Constant, Expr, Var

__all__ = ["function_text", "module_text"]


def _ty(e: Expr) -> str:
    return f"{format_shape(e.shape)} {e.dtype}"


class _Printer:
    def __init__(self) -> None:
        self.consts: list[Constant] = []

    def expr(self, e: Any) -> str:
        if isinstance(e, tuple):
            return "(" + ", ".join(self.expr(x) for x in e) + ("," if len(e) == 1 else "") + ")"
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Constant):
            for i, c in enumerate(self.consts):
                if c is e:
                    return f"c{i}"
            self.consts.append(e)
            return f"c{len(self.consts) - 1}"
        if isinstance(e, Call):
            return self.call(e)
        return repr(e)

    def call(self, c: Call) -> str:
        args = ", ".join(self.expr(a) for a in c.args)
        if isinstance(c.op, GlobalVar):
            return f"@{c.op}({args})"
        op = str(c.op)
        if op in ("call_tir", "call_dps"):
            callee = c.attrs.get("callee")
            target = f"@{callee}" if op == "call_tir" else f'"{callee}"'
            name = "call_tir" if op == "call_tir" else "call_dps_packed"
            tup = "(" + args + ("," if len(c.args) == 1 else "") + ")"
            return f"{name}({target}, {tup}, out={_ty(c)})"
        attrs = "".join(f", {k}={v!r}" for k, v in c.attrs.items() if not (op == "reshape" and k == "shape"))
        if op == "reshape":
            attrs = f", {format_shape(c.shape)}"
        return f"{op}({args}{attrs})"

    def binding(self, var: Var, value: Expr, indent: str) -> str:
        rhs = self.expr(value)
        line = f"{indent}{var.name} = {rhs}"
        if isinstance(value, Call) and str(value.op) in ("call_tir", "call_dps"):
            return line
        return f"{line:<56}  # {_ty(var)}"

    def function(self, func: Any) -> str:
        params = ", ".join(f"{p.name}: Tensor({format_shape(p.shape)}, {p.dtype})" for p in func.params)
        body = func.body
        outs = body.body if isinstance(body.body, tuple) else (body.body,)
        ret = ", ".join(f"Tensor({format_shape(o.shape)}, {o.dtype})" for o in outs)
        lines = []
        if func.attrs:
            lines.append(f"    # attrs: {func.attrs}")
        for block in body.blocks:
            if block.is_dataflow:
                lines.append("    with dataflow():")
                for b in block.bindings:
                    lines.append(self.binding(b.var, b.value, "        "))
                gvs = [b.var.name for b in block.bindings if b.var.kind != "dataflow"]
                lines.append(f"        output({', '.join(gvs)})")
            else:
                for b in block.bindings:
                    lines.append(self.binding(b.var, b.value, "    "))
        lines.append(f"    return {self.expr(body.body)}")
        head = f"def {func.name}({params}) -> {ret}:"
        text = "\n".join([head, *lines])
        if self.consts:
            items = []
            for i, c in enumerate(self.consts):
                label = f' "{c.name}"' if c.name and c.name != "const" else ""
                items.append(f"c{i} {_ty(c)}{label}")
            text += "\n    # constants: " + ", ".join(items)
        return text


def function_text(func: Any) -> str:
    """Relax-like text of one graph function (``mlc.graph.Function``)."""
    return _Printer().function(func)


def module_text(mod: Any) -> str:
    """Relax-like text of a module: graph functions as Relax-like text, tensor programs as MLIR."""
    from .function import Function  # here, not at the top: graph.ir.function imports this module

    parts = []
    for name in mod.functions:
        func = mod[name]
        if isinstance(func, Function):
            parts.append(function_text(func))
        else:
            parts.append(func.op.get_asm(large_elements_limit=16, use_name_loc_as_prefix=True).rstrip())
    return "\n\n".join(parts)

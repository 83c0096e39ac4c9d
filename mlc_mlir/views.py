"""How higher layers show themselves through the ground floor's module type.

:class:`mlc_mlir.ir.Module` holds MLIR functions and knows nothing of the graph dialect's
Python layer. ``mlc_mlir.graph`` registers its view of a module here when it is imported
(:func:`register_graph_view`): the type of its functions (``mod["main"]`` of a graph
function is a graph ``Function`` with ``params`` and ``body``), its printer
(``mod.show()``), its op names (``Op.get``), its pass infrastructure (``mlc.ir.transform``)
and its build stages. The package root registers a loader that imports the graph layer
on first need, so a module parsed from text shows its graph functions as the course
expects, while nothing on the ground floor imports a layer above it.

Pure Python: importing this module loads no MLIR.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["GraphView", "register_graph_view", "graph_view", "set_graph_loader"]


@dataclass(frozen=True)
class GraphView:
    """What the graph layer tells the ground floor.

    Attributes:
        function_class: the class of graph functions, built as ``cls(module, func_op)``.
        result_info: ``(shape, dtype)`` of a graph function's single result (or ``None``s).
        module_text: the Relax-like text of a module with graph functions (``mod.show()``).
        op_names: the graph ops' short names (``Op.get("relax.add") == "add"``).
        transform: the pass infrastructure module (the course's ``tvm.ir.transform``).
        stages: ``stages(state, opt_level=, op_map=, target=)``: the build stages that lower
            graph functions to tensor programs and calls (before code generation).
    """

    function_class: type
    result_info: Callable[[Any], tuple[Any, Any]]
    module_text: Callable[[Any], str]
    op_names: tuple[str, ...]
    transform: ModuleType
    stages: Callable[..., list]


_view: GraphView | None = None
_loader: Callable[[], None] | None = None


def register_graph_view(view: GraphView) -> None:
    """Called by ``mlc_mlir.graph`` when it is imported."""
    global _view
    _view = view


def set_graph_loader(loader: Callable[[], None]) -> None:
    """Called by the package root: ``loader()`` imports the graph layer (which registers)."""
    global _loader
    _loader = loader


def graph_view() -> GraphView:
    """The graph layer's view, importing the layer on first need."""
    if _view is None and _loader is not None:
        _loader()
    if _view is None:
        raise RuntimeError("internal: the graph layer did not register its view (mlc_mlir.graph import)")
    return _view

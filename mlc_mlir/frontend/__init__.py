"""Frontends: PyTorch models to graph modules (course ch.5).

- :func:`from_fx` takes a ``torch.fx.symbolic_trace`` graph (the course's way) with
  ``input_shapes`` and optional per-function / per-module translation maps;
- :func:`from_exported_program` takes ``torch.export.export(model, args)`` (PyTorch 2's
  way), decomposed to core aten ops.

Both return a :class:`~mlc_mlir.Module` with one graph function ``main`` whose inputs are
the model's inputs; parameters are bound as constants. torch is an optional dependency
(``pip install mlc-mlir[torch]``): it is imported only when a frontend is called.
"""

from .exported import from_exported_program
from .fx import DEFAULT_FUNCTION_MAP, DEFAULT_METHOD_MAP, DEFAULT_MODULE_MAP, from_fx

__all__ = ["from_fx", "from_exported_program", "DEFAULT_FUNCTION_MAP", "DEFAULT_METHOD_MAP",
           "DEFAULT_MODULE_MAP"]

"""Writing graph functions: ``BlockBuilder`` and what it writes with.

==========================  ================================================================
module                      what
==========================  ================================================================
:mod:`.block_builder`       ``BlockBuilder`` (course ``relax.BlockBuilder``); ``write_function``
                            writes a function's AST back
:mod:`.emit`                graph expressions -> ``mlc`` ops (shared with the graph passes)
:mod:`.te_bridge`           ``emit_te`` / ``call_te``: a ``te`` computation -> tensor program
:mod:`.expr_functor`        ``PyExprMutator``: rewrite a function by visiting its AST (course
                            ``relax.expr_functor``)
==========================  ================================================================
"""

from .block_builder import BlockBuilder

__all__ = ["BlockBuilder"]

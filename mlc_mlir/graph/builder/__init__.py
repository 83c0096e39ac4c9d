"""Writing graph functions: ``BlockBuilder`` and what it writes with.

==========================  ================================================================
module                      what
==========================  ================================================================
:mod:`.block_builder`       ``BlockBuilder`` (course ``relax.BlockBuilder``)
:mod:`.emit`                graph expressions -> ``mlc`` ops (shared with the graph passes)
:mod:`.te_bridge`           ``emit_te`` / ``call_te``: a ``te`` computation -> tensor program
==========================  ================================================================
"""

from .block_builder import BlockBuilder

__all__ = ["BlockBuilder"]

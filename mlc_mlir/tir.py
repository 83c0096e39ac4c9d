"""The course's ``tvm.tir`` names, so its schedule code runs by changing its imports::

    import mlc_mlir as tvm                # or: from mlc_mlir import tir

    sch = tvm.tir.Schedule(MyModule)      # = mlc.Schedule: linalg tensor programs here
    def stochastic_schedule_mm(sch: tvm.tir.Schedule): ...

Tensor programs themselves are ``linalg`` ops in ``func.func`` (``mlc.te.create_prim_func``
or MLIR text), not TensorIR: there is no ``tir.PrimFunc`` class.
"""

from .schedule import BlockRV, ExprRV, LoopRV, Schedule, TensorIntrin, Trace

__all__ = ["Schedule", "Trace", "TensorIntrin", "BlockRV", "LoopRV", "ExprRV"]

"""Tensors of tensor expressions: placeholders (inputs) and computed tensors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TEError
from .dtypes import INDEX_DTYPE, is_int
from .expr import Const, Expr, IterVar, TensorRead, Var, as_expr

__all__ = ["Dim", "Tensor", "ComputeOp", "normalize_shape", "dim_text", "same_dim"]

Dim = int | Var
"""One dimension of a shape: a positive int or a symbolic size."""


def normalize_shape(shape: object, *, what: str) -> tuple[Dim, ...]:
    """``shape`` as a tuple of ints and :class:`Var`; a string names a symbolic size.

    Args:
        shape: a tuple or list of ints, strings (``"n"``) and ``te.var`` (a single one is
            taken as a 1-D shape).
        what: the object the shape belongs to, for error messages.

    Raises:
        TEError: the shape is not a sequence of positive ints and symbolic sizes.
    """
    if isinstance(shape, (int, np.integer, str, Var)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TEError(f"shape of {what} must be a tuple of ints and strings (symbolic sizes), "
                      f"got {type(shape).__name__} {shape!r}")
    return tuple(_dim(d, k, what) for k, d in enumerate(shape))


def _dim(d: object, k: int, what: str) -> Dim:
    if isinstance(d, Const) and is_int(d.dtype):
        d = d.value
    if isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
        if int(d) <= 0:
            raise TEError(f"shape of {what}: dimension {k} is {int(d)}; sizes must be positive")
        return int(d)
    if isinstance(d, str):
        if not d.isidentifier():
            raise TEError(f"shape of {what}: dimension {k} is {d!r}; a symbolic size must be "
                          "an identifier such as 'n'")
        return Var(d)
    if isinstance(d, Var):
        return d
    raise TEError(f"shape of {what}: dimension {k} is {type(d).__name__} {d!r}; dimensions must "
                  "be positive ints or symbolic sizes (a string such as 'n', or te.var)")


def dim_text(d: Dim) -> str:
    """A dimension as text: ``128`` or ``n``."""
    return d.name if isinstance(d, Var) else str(d)


def same_dim(a: Dim, b: Dim) -> bool:
    """Whether two dimensions are provably equal (equal ints, or one symbol)."""
    if isinstance(a, Var) or isinstance(b, Var):
        return isinstance(a, Var) and isinstance(b, Var) and a.name == b.name
    return a == b


@dataclass(frozen=True, eq=False)
class ComputeOp:
    """How a computed tensor is defined: its spatial ``axes`` and the ``body`` expression."""

    axes: tuple[IterVar, ...]
    body: Expr


class Tensor:
    """A tensor of the expression language: a placeholder (``op`` is None) or a compute.

    Index it (``A[i, j]`` or ``A(i, j)``) to read an element inside a compute function.
    """

    def __init__(self, shape: tuple[Dim, ...], dtype: str, name: str, op: ComputeOp | None = None):
        self.shape, self.dtype, self.name, self.op = shape, dtype, name, op

    @property
    def ndim(self) -> int:
        """Rank of the tensor."""
        return len(self.shape)

    @property
    def is_placeholder(self) -> bool:
        """Whether the tensor is an input made by ``te.placeholder``."""
        return self.op is None

    def __getitem__(self, indices: object) -> TensorRead:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise TEError(f"tensor {self.name} has rank {self.ndim} (shape {self._shape_text()}) "
                          f"but is indexed with {len(indices)} indices")
        return TensorRead(self, tuple(self._index(ix, k) for k, ix in enumerate(indices)))

    def __call__(self, *indices: object) -> TensorRead:
        return self[indices]

    def _no_arithmetic(self, *_: object):
        raise TEError(f"tensor {self.name} is not a scalar expression: index it inside the "
                      f"compute function ({self.name}[i, ...])")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _no_arithmetic
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = __lt__ = __gt__ = _no_arithmetic

    def __iter__(self):
        raise TEError(f"tensor {self.name} cannot be iterated; index it with axes: {self.name}[i, ...]")

    def _index(self, ix: object, k: int) -> Expr:
        if ix is None or isinstance(ix, (slice, type(Ellipsis))):
            raise TEError(f"index {k} of tensor {self.name} is {ix!r}: slicing is not supported, "
                          "index each dimension with an expression")
        if isinstance(ix, Tensor):
            raise TEError(f"index {k} of tensor {self.name} is the tensor {ix.name}; index it "
                          "first (and note that data-dependent indices are not supported)")
        e = as_expr(ix, INDEX_DTYPE)
        if not is_int(e.dtype):
            raise TEError(f"index {k} of tensor {self.name} is {e} of type {e.dtype}; indices "
                          "must be integer expressions")
        return e

    def _shape_text(self) -> str:
        return f"({', '.join(dim_text(d) for d in self.shape)}{',' if self.ndim == 1 else ''})"

    def __repr__(self) -> str:
        kind = "placeholder" if self.is_placeholder else "compute"
        return f"Tensor({kind} {self.name!r}, shape={self._shape_text()}, dtype={self.dtype!r})"

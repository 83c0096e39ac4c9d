"""Tensors of tensor expressions: placeholders (inputs) and computed tensors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import tensor_types
from ..errors import TEError
from ..tensor_types import format_shape, is_int
from .dtypes import INDEX_DTYPE
from .expr import Const, Expr, IterVar, TensorRead, Var, as_expr

__all__ = ["Dim", "Tensor", "ComputeOp", "normalize_shape", "dim_name", "shape_names"]

Dim = int | Var
"""One dimension of a shape: a positive int or a symbolic size."""


def normalize_shape(shape: object, *, what: str) -> tuple[Dim, ...]:
    """``shape`` as a tuple of ints and :class:`Var`; a string names a symbolic size.

    The checks are :func:`mlc_mlir.tensor_types.normalize_shape`'s (sizes positive); a
    ``te.var`` given in the shape is kept (with its dtype), an int ``te.const`` is its value.

    Args:
        shape: a tuple or list of ints, strings (``"n"``) and ``te.var`` (a single one is
            taken as a 1-D shape).
        what: the object the shape belongs to, for error messages.

    Raises:
        TEError: the shape is not a sequence of positive ints and symbolic sizes.
    """
    if isinstance(shape, Var):
        shape = (shape,)
    given: dict[str, Var] = {}
    if isinstance(shape, (tuple, list)):
        shape = [_plain_dim(d, given) for d in shape]
    dims = tensor_types.normalize_shape(shape, what=f"shape of {what}", positive=True, error=TEError)
    return tuple(given[d] if d in given else Var(d) if isinstance(d, str) else d for d in dims)


def _plain_dim(d: object, given: dict[str, Var]) -> object:
    """A te dimension as tensor_types takes it: a ``te.var`` by its name, an int const by its value."""
    if isinstance(d, Var):
        given.setdefault(d.name, d)
        return d.name
    if isinstance(d, Const) and is_int(d.dtype):
        return d.value
    return d


def dim_name(d: Dim) -> int | str:
    """A dimension as a :mod:`mlc_mlir.tensor_types` dimension: ``128``, or the symbol ``"n"``.
    Two dimensions are provably equal when their names are."""
    return d.name if isinstance(d, Var) else d


def shape_names(shape: tuple[Dim, ...]) -> tensor_types.Shape:
    """A te shape as a :mod:`mlc_mlir.tensor_types` shape: ``(128, "n")``."""
    return tuple(dim_name(d) for d in shape)


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
        #: the upstream op computing it (:func:`mlc_mlir.te.named.as_named`), None for a generic
        self.named: Any = None

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
        return format_shape(shape_names(self.shape))

    def __repr__(self) -> str:
        kind = "placeholder" if self.is_placeholder else "compute"
        return f"Tensor({kind} {self.name!r}, shape={self._shape_text()}, dtype={self.dtype!r})"

"""Cost models trained online on measured candidates (MetaSchedule's cost_model/).

A model maps candidate features (:mod:`.features`) to a score, higher = faster; it is
refit after every batch of measurements on ``-log(run time)`` of the successful ones.
Built in: :class:`GBStumpModel`, gradient-boosted regression stumps in NumPy. Optional:
:class:`SklearnModel` wraps any scikit-learn regressor (``GradientBoostingRegressor`` by
default) or an ``xgboost.XGBRegressor``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["CostModel", "GBStumpModel", "SklearnModel", "FeatureSpace"]


class FeatureSpace:
    """Turns feature dicts into a matrix over the union of names seen so far."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}

    def matrix(self, feats: Sequence[dict[str, float]], *, grow: bool) -> np.ndarray:
        if grow:
            for f in feats:
                for name in f:
                    self.names.setdefault(name, len(self.names))
        out = np.zeros((len(feats), max(1, len(self.names))))
        for row, f in enumerate(feats):
            for name, value in f.items():
                col = self.names.get(name)
                if col is not None:
                    out[row, col] = value
        return out


class CostModel(ABC):
    """Interface: ``update(features, run_secs)`` then ``predict(features) -> scores``."""

    min_samples = 4

    def __init__(self) -> None:
        self.space = FeatureSpace()
        self.trained = False

    def update(self, feats: Sequence[dict[str, float]], secs: Sequence[float]) -> None:
        """Refit on every successful measurement so far (``secs`` finite and > 0)."""
        pairs = [(f, s) for f, s in zip(feats, secs) if np.isfinite(s) and s > 0]
        if len(pairs) < self.min_samples:
            self.trained = False
            return
        x = self.space.matrix([f for f, _ in pairs], grow=True)
        y = -np.log(np.array([s for _, s in pairs]))
        self._fit(x, y)
        self.trained = True

    def predict(self, feats: Sequence[dict[str, float]]) -> np.ndarray:
        """Scores (higher is predicted faster); zeros before enough data."""
        if not self.trained or not feats:
            return np.zeros(len(feats))
        return self._predict(self.space.matrix(feats, grow=False))

    @abstractmethod
    def _fit(self, x: np.ndarray, y: np.ndarray) -> None:
        """Train on features ``x`` and targets ``y`` (-log seconds)."""

    @abstractmethod
    def _predict(self, x: np.ndarray) -> np.ndarray:
        """Scores for features ``x``."""


class GBStumpModel(CostModel):
    """Gradient-boosted regression stumps (depth-1 trees), pure NumPy."""

    def __init__(self, rounds: int = 80, learning_rate: float = 0.2):
        super().__init__()
        self.rounds, self.lr = rounds, learning_rate
        self.stumps: list[tuple[int, float, float, float]] = []
        self.base = 0.0

    def _fit(self, x: np.ndarray, y: np.ndarray) -> None:
        self.base = float(y.mean())
        resid = y - self.base
        self.stumps = []
        order = np.argsort(x, axis=0, kind="stable")
        for _ in range(self.rounds):
            stump = _best_stump(x, resid, order)
            if stump is None:
                break
            col, thr, left, right = stump
            left, right = left * self.lr, right * self.lr
            resid = resid - np.where(x[:, col] <= thr, left, right)
            self.stumps.append((col, thr, left, right))

    def _predict(self, x: np.ndarray) -> np.ndarray:
        out = np.full(len(x), self.base)
        for col, thr, left, right in self.stumps:
            out += np.where(x[:, col] <= thr, left, right)
        return out


def _best_stump(x: np.ndarray, r: np.ndarray, order: np.ndarray) -> tuple[int, float, float, float] | None:
    """The split (column, threshold) that most reduces the squared error of ``r``."""
    n = len(r)
    rs = r[order]  # residuals sorted per column, shape (n, d)
    xs = np.take_along_axis(x, order, axis=0)
    csum = np.cumsum(rs, axis=0)[:-1]
    total = r.sum()
    k = np.arange(1, n)[:, None]
    gain = csum ** 2 / k + (total - csum) ** 2 / (n - k)
    gain[xs[:-1] == xs[1:]] = -np.inf  # no split between equal values
    if not np.isfinite(gain).any():
        return None
    i, col = np.unravel_index(np.argmax(gain), gain.shape)
    thr = 0.5 * (xs[i, col] + xs[i + 1, col])
    left = csum[i, col] / (i + 1)
    right = (total - csum[i, col]) / (n - i - 1)
    return int(col), float(thr), float(left), float(right)


class SklearnModel(CostModel):
    """Any regressor with ``fit``/``predict`` (scikit-learn, ``xgboost.XGBRegressor``)."""

    def __init__(self, regressor: Any = None):
        super().__init__()
        if regressor is None:
            from sklearn.ensemble import GradientBoostingRegressor

            regressor = GradientBoostingRegressor(n_estimators=60, max_depth=3)
        self.regressor = regressor

    def _fit(self, x: np.ndarray, y: np.ndarray) -> None:
        self.regressor.fit(x, y)
        self._width = x.shape[1]

    def _predict(self, x: np.ndarray) -> np.ndarray:
        if x.shape[1] != self._width:
            x = np.pad(x, ((0, 0), (0, max(0, self._width - x.shape[1]))))[:, :self._width]
        return np.asarray(self.regressor.predict(x), dtype=float)

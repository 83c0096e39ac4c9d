"""``ms.space_generator``: ScheduleFn (a user's stochastic schedule) and its interface."""

from ..tune.space_generator import ScheduleFn, SpaceGenerator

__all__ = ["ScheduleFn", "SpaceGenerator"]

"""``ms.space_generator``: ScheduleFn (a user's stochastic schedule) and the auto space."""

from ..tune.space_generator import AutoSchedule, ScheduleFn, SpaceGenerator

__all__ = ["ScheduleFn", "AutoSchedule", "SpaceGenerator"]

"""``ms.database``: the JSON-lines database of tuning records."""

from ..tune.database import JSONDatabase, TuningRecord

__all__ = ["JSONDatabase", "TuningRecord"]

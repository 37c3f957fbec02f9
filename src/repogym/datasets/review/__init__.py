"""The review queue: tasks the judge flagged, decided by people (see :mod:`.queue`)."""

from repogym.datasets.review.queue import *  # noqa: F403
from repogym.datasets.review.queue import __all__  # noqa: F401

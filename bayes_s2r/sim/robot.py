"""The robot side, duck-typed: what the experiments need from a real robot.

A lab's own robot stands in wherever `RealRobot` does by offering the same two members:
`run(key, policy, episodes) -> RealRun` (run the policy for that many episodes under the
robot's evaluation protocol, return the episode outcomes and the robot-hours charged) and
`hours_used` (robot-hours charged so far). Nothing checks a class: `is_robot` checks the
members, so a plain class with these members needs no import from here.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

__all__ = ["Robot", "is_robot"]


@runtime_checkable
class Robot(Protocol):
    """A robot the experiments can run a policy on.

    Attributes:
        hours_used: robot-hours charged so far (read before and after a run to cost it).
    """

    hours_used: float

    def run(self, key: jax.Array, policy: Any, episodes: int) -> Any:
        """Run `policy` for `episodes` episodes; return a `RealRun` (stats, hours, unsafe)."""
        ...


def is_robot(obj: Any) -> bool:
    """True when `obj` has what `Robot` asks for (a callable `run` and `hours_used`)."""
    return callable(getattr(obj, "run", None)) and hasattr(obj, "hours_used")

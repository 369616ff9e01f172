"""The robot side, duck-typed: what the experiments need from a real robot.

A lab's own robot stands in wherever `RealRobot` does by offering the same two members:
`run(key, policy, episodes) -> RealRun` (run the policy for that many episodes under the
robot's evaluation protocol, return the episode outcomes and the robot-hours charged) and
`hours_used` (robot-hours charged so far). Nothing checks a class: `is_robot` checks the
members, so a plain class with these members needs no import from here.

Some experiments need more of the robot, each an optional member (`require_robot` checks the
ones a given experiment needs and names what is missing):

- `collect(key, policy, episodes, excitation=...) -> RealTrajectories`: logged, excited
  episodes (system identification, `si_retrain`; with its `collect_horizon` setting, also a
  `horizon=` keyword: control steps per episode);
- `read_at_rest(key, readings) -> np.ndarray [readings, obs]`: sensor readings after resets
  (`obs_align`);
- `interface`: the robot's `PolicyInterface`; when present it is checked against the sim's.

`docs/examples/lab_robot.py` builds such a robot around a lab's own episode executor.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

from bayes_s2r.errors import InputError

__all__ = ["Robot", "is_robot", "require_robot"]


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


def require_robot(field: str, obj: Any, members: tuple[str, ...] = (), purpose: str = "") -> Any:
    """`obj` when it is a robot with the callable `members` too; else an `InputError` naming them.

    Args:
        field: the argument's name, for the message.
        obj: the candidate robot.
        members: optional members the caller needs (e.g. ("collect",)).
        purpose: what needs them, for the message (e.g. "si_retrain").
    """
    missing = [m for m in members if not callable(getattr(obj, m, None))]
    if not is_robot(obj) or missing:
        need = ", ".join(["run(key, policy, episodes)", "hours_used", *(f"{m}(...)" for m in members)])
        why = f" ({purpose} uses the robot)" if purpose else ""
        raise InputError(field, obj, f"a robot with {need}{why}")
    return obj

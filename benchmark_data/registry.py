"""The benchmark's settings: which library, which query set, which reuse mechanism.

A setting is a (task, mechanism, library selection, query set) quadruple; its
outcome tensor is `K x Q x S`. The 13 settings of the paper plus one sealed
setting (`stack-replay-k10-hidden`) are listed here once, in publication order.
Completeness is never stored here: it is counted from the frozen cells
(`benchmark_data.frozen.completeness`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum

from expaudit.errors import UnknownName


class Mechanism(str, Enum):
    """How an experience is reused in a query scene."""

    REPLAY = "replay"
    """Retargeted open-loop replay of the recorded end-effector path (camera-blind)."""
    POLICY = "policy"
    """A behaviour-cloned image policy trained around the experience's base scene."""
    POLICY_DR = "policy_dr"
    """The same policy trained with randomized lighting and texture."""

    def __str__(self) -> str:  # the id, as in file names, tables and the API ("replay")
        return self.value

    __format__ = str.__format__

    @property
    def camera_blind(self) -> bool:
        """True when the outcome cannot depend on the render (executed once per state)."""
        return self is Mechanism.REPLAY


LIBRARY_IDS = {"stack": "stack-stream", "door": "door-stream"}
"""One recording stream per task; every library is a selection from it."""

N_SEEDS = 5
"""Seeds per (experience, scene) pair (AUDIT_SPEC: outcome[i, q, s], 5 seeds)."""


def experience_id(task: str, index: int) -> str:
    """The id of the `index`-th accepted recording of a task's stream."""
    return f"{task}-e{index:03d}"


@dataclass(frozen=True)
class Setting:
    """One benchmark setting: the one record of a setting, wherever it is listed.

    The service lists it (`public_dict`), the published site and the findings
    hold it beside what only they know (cells done, publication order).

    Attributes
    ----------
    id : the public setting id.
    task : "stack" or "door".
    mechanism : the reuse mechanism (a setting held outside the registry, such as
        a lab's own matrices, may name one of its own).
    k : library size.
    query_set : id of the query set (40 states x 5 appearance draws).
    sealed : outcomes are never published (filled on demand by the runners).
    description : one line for humans.
    library_id : the recording stream the experiences come from ("" outside the registry).
    experience_ids : the library, in recording order (index 0 is the oldest; empty
        outside the registry).
    """

    id: str
    task: str
    mechanism: Mechanism | str
    k: int
    query_set: str
    sealed: bool = False
    description: str = ""
    library_id: str = ""
    experience_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, Mechanism) and self.mechanism in _MECHANISM_IDS:
            object.__setattr__(self, "mechanism", Mechanism(self.mechanism))

    @property
    def mechanism_id(self) -> str:
        """The mechanism as a plain string ("replay", "policy", "policy_dr" or a lab's own)."""
        return str(self.mechanism)

    def public_dict(self) -> dict:
        """What the service lists about the setting (`GET /settings`), in this key order."""
        return {"id": self.id, "task": self.task, "mechanism": self.mechanism_id, "k": self.k,
                "query_set": self.query_set, "sealed": self.sealed,
                "description": self.description}


class HoldsSetting:
    """Mixin for a record that holds a `setting` beside what only its owner knows: the
    setting's fields under the names the pages and stored files use."""

    setting: Setting

    @property
    def setting_id(self) -> str:
        return self.setting.id

    @property
    def task(self) -> str:
        return self.setting.task

    @property
    def mechanism(self) -> str:
        return self.setting.mechanism_id

    @property
    def k(self) -> int:
        return self.setting.k

    @property
    def query_set(self) -> str:
        return self.setting.query_set


_MECHANISM_IDS = frozenset(m.value for m in Mechanism)


def _setting(sid: str, task: str, mechanism: Mechanism, query_set: str,
             indices: range, description: str, sealed: bool = False) -> Setting:
    ids = tuple(experience_id(task, i) for i in indices)
    return Setting(id=sid, task=task, mechanism=mechanism, k=len(ids), query_set=query_set,
                   library_id=LIBRARY_IDS[task], experience_ids=ids, sealed=sealed,
                   description=description)


K3 = range(0, 3)
K10_A = range(0, 10)
K10_B = range(50, 60)
"""K=10-b: a second draw from the same stream, disjoint from K=50 (and so from K=10-a)."""
K50 = range(0, 50)


def _build() -> OrderedDict[str, Setting]:
    rp, po, dr = Mechanism.REPLAY, Mechanism.POLICY, Mechanism.POLICY_DR
    items = [
        _setting("stack-replay-k3-orig", "stack", rp, "stack-orig", K3,
                 "Stack Replay, K=3, original query set"),
        _setting("stack-replay-k3-fresh", "stack", rp, "stack-fresh", K3,
                 "Stack Replay, K=3, fresh query set"),
        _setting("stack-replay-k10-a", "stack", rp, "stack-orig", K10_A,
                 "Stack Replay, K=10 library A (prefix of the stream)"),
        _setting("stack-replay-k10-b", "stack", rp, "stack-orig", K10_B,
                 "Stack Replay, K=10 library B (disjoint draw)"),
        _setting("stack-replay-k50", "stack", rp, "stack-orig", K50,
                 "Stack Replay, K=50"),
        _setting("stack-policy-k3-orig", "stack", po, "stack-orig", K3,
                 "Stack image policy, K=3, original query set"),
        _setting("stack-policy-k3-fresh", "stack", po, "stack-fresh", K3,
                 "Stack image policy, K=3, fresh query set"),
        _setting("stack-policydr-k3-orig", "stack", dr, "stack-orig", K3,
                 "Stack image policy with randomization, K=3, original query set"),
        _setting("stack-policydr-k3-fresh", "stack", dr, "stack-fresh", K3,
                 "Stack image policy with randomization, K=3, fresh query set"),
        _setting("door-policy-k3-orig", "door", po, "door-orig", K3,
                 "Door image policy, K=3, original query set"),
        _setting("door-policy-k3-fresh", "door", po, "door-fresh", K3,
                 "Door image policy, K=3, fresh query set"),
        _setting("door-policydr-k3-orig", "door", dr, "door-orig", K3,
                 "Door image policy with randomization, K=3, original query set"),
        _setting("door-policydr-k3-fresh", "door", dr, "door-fresh", K3,
                 "Door image policy with randomization, K=3, fresh query set"),
        _setting("stack-replay-k10-hidden", "stack", rp, "stack-hidden", K10_A,
                 "Stack Replay, K=10-a library on the sealed query set", sealed=True),
    ]
    return OrderedDict((s.id, s) for s in items)


SETTINGS: OrderedDict[str, Setting] = _build()
"""All settings, in publication order (the paper's 13, then the sealed one)."""


class UnknownSettingError(UnknownName, KeyError):
    """A setting id that is not in the registry."""

    def __str__(self) -> str:  # KeyError's default repr-quotes the message
        return str(self.args[0])


class UnknownTask(UnknownName, ValueError):
    """A task that is not 'stack' or 'door'."""


class UnknownMechanism(UnknownName, ValueError):
    """A mechanism that is not one of `Mechanism` (or not one the caller runs)."""


def get_setting(setting_id: str) -> Setting:
    """The setting with this id; raises `UnknownSettingError` listing the valid ids."""
    try:
        return SETTINGS[setting_id]
    except KeyError:
        valid = ", ".join(SETTINGS)
        raise UnknownSettingError(
            f"unknown setting {setting_id!r}; valid setting ids: {valid}") from None


QUERY_SETS = {"stack-orig": "stack", "stack-fresh": "stack", "stack-hidden": "stack",
              "door-orig": "door", "door-fresh": "door"}
"""Query set id -> task. Each has 40 states (10 per layout level) x 5 appearance draws."""

SEALED_QUERY_SETS = frozenset({"stack-hidden"})
"""Query sets whose outcomes are never published."""

"""The simulator's errors, in the project's one tree (`expaudit.errors`).

Each also subclasses the built-in error its callers caught before it joined the tree."""

from __future__ import annotations

from expaudit.errors import InternalError, InvalidInput, UnknownName

__all__ = ["BadLevel", "BadReadoutInput", "InvalidState", "ModelMismatch", "UnknownQuerySet",
           "UnknownQuerySetVersion", "UnknownTask"]


class BadLevel(InvalidInput, ValueError):
    """A layout level, image shape or network option outside the documented values."""


class BadReadoutInput(InvalidInput, ValueError):
    """A readout split, initialization index or coordinate array outside what the readout
    protocol declares (`simulator.readout_inits`, `simulator.readout_protocol`)."""


class UnknownTask(UnknownName, ValueError):
    """A task that is not 'stack' or 'door'."""


class UnknownQuerySet(UnknownName, KeyError):
    """A query set the scene module does not declare."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UnknownQuerySetVersion(UnknownName, ValueError):
    """A query-set version the scene module does not declare."""


class ModelMismatch(InternalError, ValueError):
    """A MuJoCo model or a network without the part the code reads (a camera, a material, a
    visual core), or a camera used against the model's state: the project's own bug."""


class InvalidState(InternalError, ValueError):
    """A generated scene state that is not physically valid (bodies interpenetrating at the start,
    or a joint moving under neutral control): a generation error, never published."""

"""Every error the memory package raises.

MemoryError_ (a ``ground.errors.BitterbotError``)
├── StoreError              the database cannot be used (corrupt, newer schema, closed)
│   └── SchemaTooNew
├── CrystalNotFound
├── EntityNotFound          no current memory names anyone or anything by that name (404)
├── NotSuperseded           ``memory unsupersede`` of a crystal nothing replaced
├── EditRefused             an edit the crystal's state forbids (outdated, held, a skill, the same text)
├── ExportRefused           governance forbids a crystal leaving the node
├── EmbedderError           an embedder failed or is misconfigured
├── InvalidQuery            a search request that cannot be run (bad filter, empty query)
├── InvalidValue            a value given to ``memory`` is wrong
│   └── InvalidRequest      a request of ``memory.service`` refused as given (400)
├── NotEnabled              a part of memory this store runs without (curiosity): 503
├── CaptureFormatError      a conversation to capture is damaged or not in the format named (400)
├── FileRefused             a file not read: a symlink, a FIFO or device, or over its size cap (400)
├── SyncRefused             a change from another device that cannot be taken (too far ahead, not allowed)
└── DevicesError            the person's device group (``memory.devices``)
    ├── GroupFileCorrupt    the group file cannot be read: the message says how to start over
    ├── AlreadyInGroup      a join asked of a device that is in a group already (400)
    ├── NotInGroup          a change of a group asked of a device in none (400)
    ├── DeviceNotFound      no member of the group has that peer id or name (404)
    ├── PairingRefused      the inviting device refused the join, with its reason (400)
    └── DevicesOffline      pairing needs the node's network, which is not running (503)
"""

from __future__ import annotations

from ground.errors import BitterbotError, Invalid, NotFound, Unavailable


class MemoryError_(BitterbotError):  # trailing underscore: don't shadow the builtin MemoryError
    """Base of every error raised by ``memory``."""


class StoreError(MemoryError_):
    pass


class SchemaTooNew(StoreError):
    def __init__(self, found: int, supported: int, tables: str = "memory") -> None:
        super().__init__(
            f"the memory database's {tables} tables have schema version {found}, this bitterbot-node supports up "
            f"to {supported}; upgrade bitterbot-node"
        )
        self.found = found
        self.supported = supported


class CrystalNotFound(MemoryError_):
    def __init__(self, crystal_id: str) -> None:
        super().__init__(f"no crystal {crystal_id!r}")
        self.crystal_id = crystal_id


class EntityNotFound(MemoryError_, NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"memory names no one and nothing called {name!r} (`memory entities` lists who it does)")
        self.name = name


class NotSuperseded(MemoryError_):
    def __init__(self, crystal_id: str) -> None:
        super().__init__(f"crystal {crystal_id} is not superseded")
        self.crystal_id = crystal_id


class EmergingSkillNotFound(CrystalNotFound):
    """No emerging skill has this id (or holds this crystal) now: a 404 like any crystal not found."""

    def __init__(self, skill_id: str) -> None:
        MemoryError_.__init__(self, f"no emerging skill {skill_id!r} (see `skills emerging`)")
        self.crystal_id = skill_id


class EditRefused(MemoryError_):
    """The crystal cannot be edited as it stands; the message says what to do instead."""


class ExportRefused(MemoryError_):
    def __init__(self, crystal_id: str, reason: str) -> None:
        super().__init__(f"crystal {crystal_id} may not leave this node: {reason}")
        self.crystal_id = crystal_id
        self.reason = reason


class EmbedderError(MemoryError_):
    pass


class InvalidQuery(MemoryError_):
    pass


class CaptureFormatError(MemoryError_, Invalid):
    """A conversation that cannot be read: the message says what is wrong and where; nothing is stored."""


class ForeignFormatError(MemoryError_, Invalid):
    """A file given to ``memory import`` as another tool's export is not one (or not JSON at all)."""


class InvalidValue(MemoryError_, Invalid):
    """A value given to ``memory`` is wrong (also a ValueError): the message says which and why."""


class InvalidRequest(InvalidValue):
    """A request of ``memory.service`` the store refuses as given (the message says which value and
    why): 400, before anything is written."""


class NotEnabled(MemoryError_, Unavailable):
    """A part of memory this store was opened without (curiosity): not the request's fault, 503."""


class FileRefused(MemoryError_, Invalid):
    """A file that is not read (``memory.safe_files``): a symlink, a special file (a FIFO, a device,
    a socket) or a file over its size cap. The message names the file and the reason."""

    def __init__(self, path: object, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class SyncRefused(MemoryError_, Invalid):
    """A change from another of the person's devices that this device cannot take: stamped too far
    ahead of its clock, or out of order in its author's sequence."""


class DevicesError(MemoryError_):
    """Base of what the person's device group (``memory.devices``) refuses or cannot read."""


class GroupFileCorrupt(DevicesError):
    """The device group file cannot be read (damaged, cut short, or not this device's). Nothing else
    is touched: memory stays as it is; the message names the file and how to start over."""

    def __init__(self, path: object, detail: str) -> None:
        super().__init__(
            f"the device group file {path} cannot be read ({detail}); this device's memory is untouched. "
            f"Move the file aside and pair this device again (`devices join` a code from another of your "
            f"devices, or `devices pair` to start a new group)"
        )
        self.path = str(path)
        self.detail = detail


class AlreadyInGroup(DevicesError, Invalid):
    """This device is in a device group already, so it cannot join another."""

    def __init__(self) -> None:
        super().__init__(
            "this device is in a device group already: remove it from that group first (`devices remove ID` "
            "on another of its devices, or `devices remove` with this device's own id to leave)"
        )


class NotInGroup(DevicesError, Invalid):
    """A change of the device group asked of a device that is in none."""

    def __init__(self) -> None:
        super().__init__("this device is in no device group (`devices pair` starts one, `devices join CODE` joins one)")


class DeviceNotFound(DevicesError, NotFound):
    def __init__(self, given: str) -> None:
        super().__init__(f"no device of the group is {given!r} (`devices list` shows their peer ids)")
        self.given = given


class PairingRefused(DevicesError, Invalid):
    """The inviting device refused the join: ``reason`` is one of ``memory.devices.wire.Refusal``'s values."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


class DevicesOffline(DevicesError, Unavailable):
    def __init__(self) -> None:
        super().__init__("pairing needs this node's p2p network, which is not running ([p2p] enabled, and started)")

"""Typed errors for bad input.  Each names the object or brush, says what is wrong and what to do.

The command line and the Blender operators catch BrushbakeError and show its message; anything
else is a bug in brushbake and is allowed to surface as a traceback.
"""


class BrushbakeError(Exception):
    """Base of every user-facing error.  `str(err)` is a complete, one-paragraph message."""

    def __init__(self, message: str, *, subject: str | None = None, hint: str | None = None):
        self.subject = subject
        self.hint = hint
        self.problem = message
        text = f"{subject}: {message}" if subject else message
        if hint:
            text = f"{text} {hint}"
        super().__init__(text)


class BrushError(BrushbakeError):
    """A brush (or the mesh it came from) is not a valid convex solid."""


class NonConvexBrushError(BrushError):
    pass


class DegenerateBrushError(BrushError):
    """No volume, too few planes, an unbounded set of planes, or duplicate planes."""


class DuplicatePlaneError(DegenerateBrushError):
    pass


class OpenMeshError(BrushError):
    pass


class InvalidCoordinatesError(BrushbakeError):
    """NaN, infinite or huge coordinates."""


class SceneFormatError(BrushbakeError):
    """A scene file (.map, .json) that cannot be read."""


class LevelFormatError(BrushbakeError):
    """A compiled level file that is corrupt, truncated or of an unknown version."""


class InvalidSettingError(BrushbakeError):
    """A bake setting (command-line option, .json setting, add-on property) out of its range."""


class LeakError(BrushbakeError):
    """The map leaks: something that must be inside is reachable from the void.  `report` is the
    leak report (core/compile/vis/leaks.py LeakReport: the chain, the hole, the brush nearest it)."""

    def __init__(self, report, *, hint: str | None = None):
        self.report = report
        super().__init__(report.message() + ".", hint=hint)


class InvalidCameraError(BrushbakeError):
    """A camera for the camera queries (core/runtime/camera.py) that is malformed or out of range."""


class UnknownHullError(BrushbakeError):
    """A query for a hull the level does not have; the message lists the hulls it has."""


class CancelledError(BrushbakeError):
    """The user cancelled long work; nothing was written."""

    def __init__(self, message: str = "Cancelled by the user; nothing was written."):
        super().__init__(message)


def check_cancel(cancel) -> None:
    """Raise CancelledError when the long work's cancel() callback (None: never) returns True."""
    if cancel is not None and cancel():
        raise CancelledError()


class BackendUnavailableError(BrushbakeError):
    """The C run-time (runtime_c/) cannot be built or loaded here: no C compiler, or no sources."""

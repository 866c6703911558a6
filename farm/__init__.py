"""The bake farm: many levels, or one level's long work, on a Dask distributed cluster
(docs/FARM.md).

An optional extra (`pip install brushbake[farm]`): only `brushbake farm` and `bake --scheduler`
import this package, and only it imports Dask.  The core, the exporters and the Blender extension
never need it (the extension's zip leaves it out).
"""

from __future__ import annotations

from ..core.errors import BrushbakeError


def require_dask() -> None:
    """A clear error, not an ImportError, where the [farm] extra is not installed."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as err:
        raise BrushbakeError(f"the bake farm needs Dask distributed, which is not installed ({err}).",
                             hint="Install it with: pip install 'brushbake[farm]'") from None

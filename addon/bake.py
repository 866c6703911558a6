"""Baking, as plain functions the operator and the tests share.

The bake has three steps, and only the middle one is slow:

1. :func:`gather` (main thread, reads bpy): objects -> core Scene.  Fails early, naming the object.
2. :func:`compile_level` (no bpy at all): Scene -> CompiledLevel, with progress and cancel.
3. :func:`commit` (main thread, writes bpy): the level replaces the scene's stored bake, whole.

A failure or a cancel in steps 1 or 2 never reaches step 3, so the previous bake stays untouched.
Step 2 keeps the work of the scene's last bake (core/compile/bake_cache.py BakeCache, in memory,
one per scene): a re-bake after an edit rebuilds only the brushes and regions the edit reached,
and gives the level a bake from scratch gives, byte for byte.

The modal operator runs step 2 in a :class:`BakeJob` thread and polls it from a timer (progress in
the status bar, Esc sets the cancel flag); headless code and tests call :func:`bake` directly, or
drive a BakeJob by polling, since modal operators and timers do not run without a window.
"""

import threading
from dataclasses import dataclass, field

from ..core.compile.bake_cache import BakeCache
from ..core.compile.pipeline import bake_scene
from ..core.errors import BrushbakeError, LeakError
from ..core.runtime.level import CompiledLevel
from ..core.model.scene import Scene
from . import bridge, storage, visibility


def gather(context, objects=None) -> Scene:
    """Step 1: the core Scene for the scene's bake (the selection by default), with every setting
    copied from the PropertyGroup into scene.settings on the main thread."""
    settings = context.scene.brushbake
    if objects is None:
        objects = bridge.objects_to_bake(context)
    else:
        objects = bridge.sort_objects(objects)
    core_scene = bridge.scene_from_objects(objects, settings, name=context.scene.name,
                                           depsgraph=context.evaluated_depsgraph_get())
    if settings.use_light:  # every render-visible light of the scene lights the level (addon/lightmap.py)
        from . import lightmap

        core_scene.lights.extend(lightmap.scene_lights(context.scene, core_scene.warnings))
    return core_scene


#: the last bake's work, per scene name (a re-bake takes what the edits did not reach)
_caches: dict[str, BakeCache] = {}
_caches_lock = threading.Lock()


def compile_level(core_scene: Scene, progress=None, cancel=None) -> CompiledLevel:
    """Step 2: the pipeline ``python -m brushbake bake`` runs (core.compile.pipeline.bake_scene),
    through the scene's BakeCache (a bake running already on the scene gets a cache of its own)."""
    with _caches_lock:
        cache = _caches.pop(core_scene.name, None) or BakeCache()
    try:
        return bake_scene(core_scene, progress=progress, cancel=cancel, cache=cache)
    finally:
        with _caches_lock:
            _caches[core_scene.name] = cache


def last_cache(scene_name: str) -> BakeCache | None:
    """The work the scene's last bake kept (what it built and reused: .summary())."""
    return _caches.get(scene_name)


def forget_caches() -> None:
    """Drop every scene's kept work (the add-on is switched off)."""
    with _caches_lock:
        _caches.clear()


def commit(scene, level: CompiledLevel) -> str:
    """Step 3: store the level with the scene (replacing any previous bake); returns a summary.
    A leak the user allowed is drawn (addon/visibility.py); a sealed bake clears the drawing."""
    storage.store_level(scene, level)
    show_leak_of(scene, level.stats.get("leak_report"))
    text = summary(level)
    scene.brushbake.status = text
    return text


def show_leak_of(scene, report) -> None:
    """Draw the report's chain if the map leaks, else remove any earlier drawing."""
    if report is not None and report.leaks:
        visibility.show_leak(scene, report.chain, report.hole_brush)
    else:
        visibility.clear_leak(scene)


def failed(scene, err: BrushbakeError) -> None:
    """What a failed bake leaves besides its message: the chain of a leak (the bake is not stored)."""
    if isinstance(err, LeakError):
        show_leak_of(scene, err.report)


def summary(level: CompiledLevel) -> str:
    """One line a designer reads to judge the bake (the CLI's table, shortened)."""
    s = level.stats
    seconds = sum(s.get("times", {}).values())
    solid = int((level.leaf_solid & 1).astype(bool).sum())
    light = level.stats.get("light")
    text = (f"Baked {len(level.brush_names)} brushes: {level.num_nodes} nodes, {level.num_leaves} leaves "
            f"({solid} solid), hulls {', '.join(level.hull_names)}")
    if level.has_bevel:
        beveled = len(level.bevel_node_plane)
        text += f", beveled tree {beveled} nodes ({beveled / max(level.num_nodes, 1):.2f}x)"
    else:
        text += ", no bevels"
    if light:
        text += (f", lightmap {light['luxels']} luxels, {light['bounces_done']} bounces"
                 + (f" (rays: {light['native'].partition(':')[0]})" if light.get("native") else "")
                 + (" (cancelled: light so far kept)" if light["cancelled"] else ""))
    return text + (f" in {seconds:.2f} s" if seconds else "")


def bake(context, objects=None, progress=None, cancel=None, warnings: list | None = None) -> CompiledLevel:
    """All three steps on the calling thread.  Raises BrushbakeError (including CancelledError)
    with the scene's bake untouched.  `warnings` gets what the gather warned of (an emissive
    material it cannot read, say)."""
    core_scene = gather(context, objects)
    if warnings is not None:
        warnings.extend(core_scene.warnings)
    level = compile_level(core_scene, progress=progress, cancel=cancel)
    commit(context.scene, level)
    return level


@dataclass
class BakeJob:
    """Step 2 on a worker thread.  The core never touches bpy, so this is safe; only :meth:`poll`'s
    caller (the main thread) commits the result.

    ``job.start()``, then ``job.poll()`` until it is not None: the CompiledLevel, or the
    BrushbakeError that stopped it (a CancelledError after ``job.cancel()``).  ``fraction`` and
    ``message`` follow the progress for the status bar.
    """

    core_scene: Scene
    fraction: float = 0.0
    message: str = ""
    _cancel: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _result: object = None

    def start(self) -> "BakeJob":
        self._thread = threading.Thread(target=self._run, name="brushbake bake", daemon=True)
        self._thread.start()
        return self

    def _progress(self, fraction: float, message: str = "") -> None:
        self.fraction, self.message = fraction, message

    def _run(self) -> None:
        try:
            self._result = compile_level(self.core_scene, self._progress, self._cancel.is_set)
        except BrushbakeError as err:
            self._result = err
        except Exception as err:  # a bug: hand it to the main thread rather than lose it
            self._result = err

    def cancel(self) -> None:
        self._cancel.set()

    def poll(self):
        """None while running; then the level or the exception."""
        if self._thread is None or self._thread.is_alive():
            return None
        return self._result

    def step(self, event_type: str):
        """What the modal operator does with one event: 'ESC' asks to cancel, 'TIMER' looks for the
        result.  Returns None while the bake runs, else the level or the exception (the operator
        then commits or reports it)."""
        if event_type == "ESC":
            self.cancel()
            return None
        if event_type != "TIMER":
            return None
        return self.poll()

    def status_text(self) -> str:
        """The status bar line while baking."""
        return f"brushbake: {100 * self.fraction:.0f}%  {self.message}   (Esc to cancel)"

    def wait(self, timeout: float | None = None):
        if self._thread is not None:
            self._thread.join(timeout)
        return self.poll()

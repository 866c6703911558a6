"""What every overlay is made of: triangles and lines with a colour per vertex, plain NumPy arrays
that the viewport draws, the preview objects turn into meshes and the tests check."""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class OverlayGeometry:
    """Triangles (T*3 vertices) and line segments (S*2 vertices), float32, colours RGBA per vertex.

    ``tri_leaf`` names the leaf each triangle came from (-1 when not from a leaf), for checking.
    """

    tri_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))
    tri_colors: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))
    tri_leaf: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    line_positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))
    line_colors: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))

    @property
    def num_triangles(self) -> int:
        return len(self.tri_positions) // 3


def fan(polys: list[np.ndarray]) -> np.ndarray:
    """(T, 3, 3) triangles of convex polygons, fanned from each first vertex."""
    tris = [np.stack([p[0], p[i], p[i + 1]]) for p in polys for i in range(1, len(p) - 1)]
    return np.array(tris, dtype=np.float64).reshape(-1, 3, 3)

"""What a swept query answers, one type per call shape: Hit for one segment, Hits for many.

The same types answer rays and box hulls (core/runtime/trace.py, find_first_transition) and
shapes by plane shifting (core/runtime/shift.py, HitCheck), so a caller can swap one query for
another.  Conventions:
- fraction is where along start -> end the reference point stops: 1.0 (point = end) for a miss,
  0.0 (point = start) for a start already in solid;
- normal is the hit plane's normal facing the start's side; zero for a miss or a solid start;
- plane is the index of that plane in the level's plane table (-1 for a miss or a solid start);
- impact (shapes only) is the point of the shape that touches the plane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Hit:
    """One swept segment's answer."""

    fraction: float
    point: np.ndarray  # (3,) where the reference point stops
    normal: np.ndarray  # (3,)
    plane: int
    start_solid: bool
    hit: bool
    impact: np.ndarray | None = None  # (3,) shapes only
    nodes_visited: int = 0  # plane shifting: nodes the walk visited (benchmarks)


@dataclass
class Hits:
    """Many swept segments' answers, as arrays indexed like the segments."""

    fraction: np.ndarray  # (N,)
    point: np.ndarray  # (N, 3)
    normal: np.ndarray  # (N, 3)
    plane: np.ndarray  # (N,) int64
    start_solid: np.ndarray  # (N,) bool
    hit: np.ndarray  # (N,) bool
    impact: np.ndarray | None = None  # (N, 3) shapes only
    nodes_visited: np.ndarray | None = None  # (N,) plane shifting only

    def __len__(self) -> int:
        return len(self.fraction)

    def __getitem__(self, i: int) -> Hit:
        return Hit(float(self.fraction[i]), self.point[i].copy(), self.normal[i].copy(), int(self.plane[i]),
                   bool(self.start_solid[i]), bool(self.hit[i]),
                   None if self.impact is None else self.impact[i].copy(),
                   0 if self.nodes_visited is None else int(self.nodes_visited[i]))

    def packed(self, impact: bool = False) -> np.ndarray:
        """The command line's rows: (N, 7) [fraction, point xyz, normal xyz], with impact xyz
        appended, (N, 10), when asked (shapes)."""
        cols = [self.fraction[:, None], self.point, self.normal]
        if impact:
            if self.impact is None:
                raise ValueError("these hits have no impact points (only shapes have them)")
            cols.append(self.impact)
        return np.concatenate(cols, axis=1)


@dataclass
class MoveResult:
    position: np.ndarray  # (3,) where the reference point ends
    velocity: np.ndarray  # (3,) velocity after clipping
    on_ground: bool  # the ground check at the end found walkable ground
    ground_normal: np.ndarray  # (3,) its normal, zero when not on ground
    clip_planes: int  # planes hit during the move (the seed planes not counted)
    stepped: bool  # step_slide_move took the stepped path
    blocked: bool  # hit a plane too steep to stand on, or stopped dead at a crease / plane limit
    start_solid: bool = False  # a trace started in solid: the character did not move
    reverted: bool = False  # the end was solid (a trace bug) and the move was undone


@dataclass
class MoveBatch:
    """The results of a batch move, one row per character (the fields of MoveResult)."""

    position: np.ndarray  # (N, 3)
    velocity: np.ndarray  # (N, 3)
    on_ground: np.ndarray  # (N,) bool
    ground_normal: np.ndarray  # (N, 3)
    clip_planes: np.ndarray  # (N,) int64
    stepped: np.ndarray  # (N,) bool
    blocked: np.ndarray  # (N,) bool
    start_solid: np.ndarray  # (N,) bool
    reverted: np.ndarray  # (N,) bool

    def __len__(self) -> int:
        return len(self.position)

    def row(self, i: int) -> MoveResult:
        return MoveResult(self.position[i].copy(), self.velocity[i].copy(), bool(self.on_ground[i]),
                          self.ground_normal[i].copy(), int(self.clip_planes[i]), bool(self.stepped[i]),
                          bool(self.blocked[i]), bool(self.start_solid[i]), bool(self.reverted[i]))

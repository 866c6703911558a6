"""Interest management (the thesis's chapter 7, 'Network optimization using BSP-trees'): a server
sends each client only the entities its PVS may show, instead of every entity every tick.

relevant_entities answers for all clients and entities of a tick in one batch call: each position's
leaf is found by the point tree (one vectorised walk for all of them), mapped to its visibility
cluster, and the clients' rows are read for the entities' clusters at once -- no Python loop over
clients or entities.  A position with no cluster (inside solid, outside a sealed map) is answered
conservatively (it sees and is seen by everything), so an entity the client could see is never
dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .pvs import visibility

#: the thesis's figures: 20 server updates (ticks) a second, 42 bytes an entity update
#: (movement, position and rotation vectors of three 4-byte floats, plus 6 bytes of packet overhead)
TICKS_PER_SECOND = 20
UPDATE_BYTES = 42


def relevant_entities(level, clients, entities, client_entity=None) -> np.ndarray:
    """(K, E) bool: entity e goes to client k this tick (its position's cluster is in the PVS of
    the client's).  `client_entity` (K,) optional: the entity each client controls, never sent to
    itself (-1 for none)."""
    vis = visibility(level)
    c = np.asarray(clients, dtype=np.float64).reshape(-1, 3)
    e = np.asarray(entities, dtype=np.float64).reshape(-1, 3)
    clusters = vis.clusters_of_points(np.concatenate([c, e]))
    mask = vis.see_matrix(clusters[: len(c)], clusters[len(c):])
    if client_entity is not None:
        own = np.asarray(client_entity, dtype=np.int64).ravel()
        k = np.flatnonzero(own >= 0)
        mask[k, own[k]] = False
    return mask


@dataclass
class Bandwidth:
    clients: int
    entities: int
    sent_per_tick: int  # entity updates sent this tick, all clients
    all_per_tick: int  # what sending everything to everyone would send
    bytes_per_second: float
    all_bytes_per_second: float

    @property
    def saved_bytes_per_second(self) -> float:
        return self.all_bytes_per_second - self.bytes_per_second

    @property
    def saved_fraction(self) -> float:
        return self.saved_bytes_per_second / self.all_bytes_per_second if self.all_bytes_per_second else 0.0


def bandwidth(mask: np.ndarray, client_entity=None, ticks: int = TICKS_PER_SECOND,
              update_bytes: int = UPDATE_BYTES) -> Bandwidth:
    """Bytes a second the server sends with `mask` against sending every other entity to everyone."""
    mask = np.asarray(mask, dtype=bool)
    k, e = mask.shape
    everything = k * e - (int(np.count_nonzero(np.asarray(client_entity) >= 0)) if client_entity is not None else 0)
    sent = int(mask.sum())
    return Bandwidth(k, e, sent, everything, float(sent * update_bytes * ticks),
                     float(everything * update_bytes * ticks))

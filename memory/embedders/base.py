"""The embedder interface: text in, unit-length float32 vectors out.

Every vector is stored with its embedder's ``id`` (name and dimension), and
each embedder has its own vector table, so a change of model re-embeds into a
new space instead of mixing two. Implementations are synchronous and may be
slow; the store calls them from a worker thread, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    #: stable identity of the vector space, e.g. "hashing-v1-384"; part of the vector table's name
    @property
    def id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """(len(texts), dim) unit-length float32 rows."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """(dim,) unit-length float32; may differ from a document embedding (query prefixes)."""
        ...


def normalise_rows(matrix: npt.NDArray[np.floating]) -> Vectors:
    """Scale each row to unit length; an all-zero row stays zero."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Vectors = (matrix / norms).astype(np.float32)
    return out

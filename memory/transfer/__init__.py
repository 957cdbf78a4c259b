"""Moving a whole memory between nodes or systems: ``memory export`` writes every live crystal with its
type, origin, times, lifecycle, supersession, links, derivations and attribution history, and
``memory import`` of that file restores them as they were (``records`` is the format, ``export`` and
``restore`` the two directions)."""

"""The memory services: what the node's commands (the HTTP API, the control socket, MCP, the CLI)
ask of memory, each with its typed request (``memory.service.requests``), answering JSON-shaped
dicts. One module per job:

- ``recall``: search, list, show, gaps and counts (reading only);
- ``write``: remember, capture, pin, feedback and forget;
- ``history``: retype, link, supersede and unsupersede, edit a text or a skill, unmerge;
- ``held``: the quarantine of peer content, and the person's decisions on it;
- ``hormones``: the hormonal state, and the events that move it;
- ``working``: working-memory notes, the bootstrap text, MEMORY.md and its last change.
- ``upkeep``: a consolidation cycle and the dream, now or on the daemon's timers, and what the
  last of each did;
- ``timing``: where the services' durations are observed (the node hands its histograms down).

Who asks is a ``Caller`` (``memory.service.caller``): the node resolves its caller and hands it
down, and what only the person may change is refused here, by the authority table. Nothing is
imported here, so that describing a request does not load the store.
"""

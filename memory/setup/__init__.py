"""The memory package put together from its settings: the ``[memory]``, ``[capture]``, ``[hormones]``,
``[consolidation]``, ``[dream]`` and ``[llm]`` tables (``settings``), the store opened with its
embedder and hooks (``store``), the cycles run as configured (``cycles``) and the embedding's
progress (``progress``). The node hands its config's tables here; nothing here knows the node.

A folder of its own, not modules at ``memory/``'s root: the root holds the basics every folder
imports (errors, model), and a root module that imported the folders would make them import each
other (``tests/test_import_cycles.py``).
"""

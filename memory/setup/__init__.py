"""The memory package put together from its settings: the ``[memory]``, ``[capture]``, ``[hormones]``,
``[consolidation]``, ``[dream]`` and ``[llm]`` tables (``settings``), the store opened with its
embedder and hooks (``store``), the chat endpoints (``endpoints``), search's weights
(``cycles``), and the background embedding with its progress (``embedding``). The node hands its
config's tables here; nothing here knows the node.

A folder of its own, not modules at ``memory/``'s root: the root holds the basics every folder
imports (errors, model), and a root module that imported the folders would make them import each
other (``tests/test_import_cycles.py``).
"""

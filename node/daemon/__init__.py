"""The daemon: the parts and servers assembled (``wiring``) and run until stopped (``daemon``). Nothing
below imports it: the runtime, the parts and the servers are its bricks."""

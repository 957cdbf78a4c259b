"""The person's device group (issue 51; docs/design/devices.md): the group file beside memory
(``group_file``), the keeper the node asks who is in the group and with which keys (``keeper``),
and pairing a new device by a one-time code (``wire``, ``desk`` for the inviting device,
``joining`` for the joining one). The crypto is ``crypto.device_group``, ``crypto.pairing`` and
``crypto.group_box``; nothing here dials a peer itself: the node's host is handed in."""

"""One memory on all of a person's devices (issue 51; docs/design/devices.md): the operations a
change travels as, the clock that orders them, and the merge rules that fold any set of them into
the same state on every device. Pure: nothing here reads a file or the network."""

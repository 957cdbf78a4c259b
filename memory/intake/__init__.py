"""The intake: what a new crystal goes through before the store writes it (``memory.intake.store``)."""

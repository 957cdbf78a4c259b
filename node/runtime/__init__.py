"""The daemon process: its context, the parts it starts from config, supervision and shutdown."""

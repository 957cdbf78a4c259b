"""The command groups whose commands are all generated from their declarations
(``node.cli.generated``): the groups themselves say only what they hold."""

from __future__ import annotations

import click


@click.group("skills")
def skills_group() -> None:
    """Skills: record and price your own, share, publish, buy and revoke them on the network; bounties."""


@click.group("weather")
def weather_group() -> None:
    """Network cortisol weather: signed by management nodes, obeyed by every node."""


@click.group("devices")
def devices_group() -> None:
    """Your devices: pair them into one group (the person's alone, never the agent's)."""

"""`bitterbot-node ui`: open the dashboard in a browser, signed in through a one-time URL."""

from __future__ import annotations

import json
import webbrowser
from pathlib import Path

import click

from node.cli.common import handles_errors, location_options
from node.cli.transport import run_command


@click.command("ui")
@location_options
@click.option("--print-url", is_flag=True, help="Print the one-time login URL instead of opening a browser.")
@click.option("--json", "as_json", is_flag=True, help='Print {"url": ...} instead of opening a browser.')
@handles_errors
def ui(config_path: Path | None, data_dir: Path | None, print_url: bool, as_json: bool) -> None:
    """Open the running node's dashboard (the URL works once, within a minute)."""
    url = run_command(config_path, data_dir, "ui.login")["url"]
    if as_json:
        click.echo(json.dumps({"url": url}))
        return
    if print_url or not webbrowser.open(url):
        click.echo(url)
        return
    click.echo("opened the dashboard in your browser")

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
    """Open the running node's dashboard and print a one-time code to sign in with (it works once,
    within a minute). The browser gets the login page without the code: a browser's command line
    is readable by every user of the machine, who could redeem the code first."""
    url = run_command(config_path, data_dir, "ui.login")["url"]
    if as_json:
        click.echo(json.dumps({"url": url}))
        return
    page, _, code = url.partition("?code=")
    if print_url or not webbrowser.open(page):
        click.echo(url)
        return
    click.echo(f"opened the dashboard's login page in your browser; paste this one-time code there: {code}")

"""docs/cli.md shows every command's --help as the installed `opgraph`
prints it."""

import re
import subprocess

import pytest
from conftest import ROOT

CLI_DOC = ROOT / "docs" / "cli.md"


def help_text(opgraph_cli, *command):
    return subprocess.run([opgraph_cli, *command, "--help"], capture_output=True, text=True, check=True).stdout


def commands(opgraph_cli):
    """The command names the tool's own --help lists."""
    listing = help_text(opgraph_cli).split("commands:\n")[1].split("\n\n")[0]
    return [line.split()[0] for line in listing.splitlines()]


def test_the_doc_covers_every_command(opgraph_cli):
    documented = re.findall(r"^## `opgraph ([a-z][a-z-]*)`$", CLI_DOC.read_text(), re.MULTILINE)
    assert documented == commands(opgraph_cli)


@pytest.mark.parametrize("command", ["", "run", "bench", "generate", "inspect", "ops", "profile", "test-package"])
def test_the_doc_shows_the_help_as_printed(opgraph_cli, command):
    printed = help_text(opgraph_cli, *([command] if command else []))
    assert f"```\n{printed}```" in CLI_DOC.read_text(), (
        f"docs/cli.md does not show `opgraph {command} --help` as the tool prints it:\n{printed}"
    )

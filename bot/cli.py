"""The ``mafia-bot`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rules.scenario import ScenarioError


def _simulate(args: argparse.Namespace) -> int:
    from bot.simulate import simulate

    try:
        output = simulate(Path(args.file), args.json)
    except ScenarioError as error:
        print(f"mafia-bot simulate: {args.file}: {error}", file=sys.stderr)
        return 2
    print(output)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="mafia-bot", description="Прокуратор: multi-city Mafia on Discord."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser("simulate", help="play a scenario file and print what happened")
    simulate.add_argument("file", help="the scenario file (YAML)")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.set_defaults(handler=_simulate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())

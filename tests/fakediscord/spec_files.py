"""Where the fake finds Discord's OpenAPI spec file: ``$FAKEDISCORD_OPENAPI``, else beside the
checkout (and beside the main checkout of a git worktree); re-exported by :mod:`.spec`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SPEC_ENV = "FAKEDISCORD_OPENAPI"
"""Environment variable naming the spec file (empty or ``off``: no schema check)."""


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _main_checkout(root: Path) -> Path | None:
    """The main working tree of a git worktree (``.git`` is then a file naming the gitdir)."""
    marker = root / ".git"
    if not marker.is_file():
        return None
    try:
        common = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(common).parent if common else None


def spec_candidates() -> list[Path]:
    """Where the spec is looked for, in order (the environment variable aside)."""
    root = _repo_root()
    candidates = [root.parent / "shared" / "discord-api" / "openapi.json"]
    main = _main_checkout(root)
    if main is not None and main != root:
        candidates.append(main.parent / "shared" / "discord-api" / "openapi.json")
    return candidates


def locate_spec() -> tuple[Path | None, str]:
    """The spec file to use and, when there is none, why."""
    configured = os.environ.get(SPEC_ENV)
    if configured is not None:
        if configured.strip().lower() in ("", "off", "0", "none"):
            return None, f"{SPEC_ENV}={configured!r} switches the schema check off"
        path = Path(configured).expanduser()
        if path.is_file():
            return path, ""
        return None, f"{SPEC_ENV}={configured} does not exist"
    for path in spec_candidates():
        if path.is_file():
            return path, ""
    looked = ", ".join(str(path) for path in spec_candidates())
    return None, f"no openapi.json at {looked}"

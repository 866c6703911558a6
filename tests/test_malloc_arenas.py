"""core/malloc_arenas.py: the command line's one malloc arena, asked of glibc only, never over the
user's own limit (MALLOC_ARENA_MAX, or glibc.malloc.arena_max in GLIBC_TUNABLES); each case in a
fresh interpreter (the setting is the process's)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

from brushbake import cli

ASK = "from brushbake.core.malloc_arenas import limit_arenas; print(limit_arenas())"
GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _ask(env_extra: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env.update(env_extra, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", ASK], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_glibc_takes_one_arena_and_others_are_left_alone():
    assert _ask({}) == ("True" if GLIBC else "False")


def test_the_users_malloc_arena_max_wins():
    assert _ask({"MALLOC_ARENA_MAX": "4"}) == "False"
    assert _ask({"GLIBC_TUNABLES": "glibc.malloc.check=0:glibc.malloc.arena_max=4"}) == "False"
    assert _ask({"GLIBC_TUNABLES": "glibc.malloc.check=0"}) == ("True" if GLIBC else "False")


def test_the_command_line_asks_before_it_runs_a_command(monkeypatch, tmp_path):
    """cli.main asks for the arena once its arguments parse, before the command runs (a bake's
    threads start inside it)."""
    calls = []
    monkeypatch.setattr(cli, "limit_arenas", lambda: calls.append("arenas") or True)
    parser = cli.build_parser
    monkeypatch.setattr(cli, "build_parser", lambda: _with_func(parser(), lambda args: calls.append("info") or 0))
    assert cli.main(["info", str(tmp_path / "level.bbk")]) == 0
    assert calls == ["arenas", "info"]


def _with_func(parser, func):
    parser.set_defaults(func=func)
    for action in parser._subparsers._group_actions:  # every subcommand runs func
        for sub in action.choices.values():
            sub.set_defaults(func=func)
    return parser

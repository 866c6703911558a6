"""The .map lines that carry data (plane lines, key lines), read in time linear in the line.

Why: these were regular expressions, and the plane pattern's numbers (``\\d+\\.?\\d*``) can
cut one run of digits in several ways.  On a line with junk after its texture parameters (a Valve
220 line followed by ``1234 1234 ... 1234 (``) the matcher tried every cut of every number before
failing, four times more work per extra number (issue 29: minutes for a 130-byte line).

Here no pattern can read the same characters two ways: the head of a plane line (points and
texture, _HEAD) and its parameters (_STANDARD, _VALVE) force where each of their repeats ends, and
the number pattern is written so that a run of digits has one cut only (``\\d+(?:\\.\\d*)?``, the
same language as ``\\d+\\.?\\d*``): a failed match gives back each character once, each give-back
failing at once.  Long parameters are split with str.split and checked a word at a time.  So every
character is looked at a bounded number of times, whatever the bytes (bench/fuzz_hostile.py's
'junk' class measures it on lines up to 1 MB).

The accepted syntax is exactly the old patterns' (``\\s`` and ``\\d`` in their Unicode sense, as
before: str.isspace and decimal digits, which float() reads):

* plane: ``( N N N ) ( N N N ) ( N N N ) TEXTURE PARAMS [// comment]`` where a number is
  ``[-+]?(digits[.digits] | .digits)[(e|E)[-+]digits]``, TEXTURE is ``"anything but a quote"`` or
  a run without whitespace, quotes, brackets or parentheses, followed by whitespace, and PARAMS is
  the Valve 220 form ``[ N N N N ] [ N N N N ] N N N...`` (three numbers or more after the
  brackets) or the standard form of five numbers or more (Quake 2 and 3 flags are extra numbers).
  Numbers are separated by whitespace; next to a parenthesis or a bracket it is optional.
* key: ``"key" "value" [// comment]`` where the key has no quote and the value runs to the
  line's last quote (so it may hold quotes); nothing but whitespace and a comment after it.
"""

from __future__ import annotations

import re

__all__ = ["key_fields", "plane_fields"]

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")  # one cut per digit run
_SPACE = re.compile(r"\s*")  # a greedy class with nothing after it: never backtracks
_WORD = r'[^\s"()\[\]]+'  # a number or an unquoted texture name
_POINT = rf"\(\s*({_NUMBER.pattern})\s+({_NUMBER.pattern})\s+({_NUMBER.pattern})\s*\)\s*"
#: the three points and the texture.  Each repeat is followed by a character it cannot hold
#: (a number by whitespace or ')', whitespace by a number, '(' or a name, a name by whitespace,
#: a quoted name's inside by its quote), so its end is forced: when the match fails, each
#: repeat gives its characters back one at a time and every give-back fails at the next
#: character (a number cut short is followed by the rest of its word, never by what may come
#: after a number).  At most a constant number of steps per character.
_HEAD = re.compile(rf'{_POINT}{_POINT}{_POINT}(?:"([^"]*)"|({_WORD}))\s+')
_N = _NUMBER.pattern
#: the parameters after the texture's whitespace, up to a comment: the standard form (with Quake
#: 2 / 3 flags) and Valve 220's.  Ends forced as in _HEAD (numbers are separated by whitespace,
#: which no number holds).
_STANDARD = re.compile(rf"{_N}(?:\s+{_N}){{4,}}\s*")
_VALVE = re.compile(rf"\[\s*{_N}(?:\s+{_N}){{3}}\s*\]\s*\[\s*{_N}(?:\s+{_N}){{3}}\s*\]\s*{_N}(?:\s+{_N}){{2,}}\s*")
#: parameters at most this long are matched whole (linear, one call); longer ones are split and
#: checked word by word (a long whole match keeps a stack entry per number: 2-3x the CPU per
#: byte at 1 MB).  The same language either way: tests/core/test_map_lines.py checks both.
SHORT_TAIL = 512


def _skip_space(line: str, pos: int) -> int:
    return _SPACE.match(line, pos).end()


def _all_numbers(words: list[str]) -> bool:
    """Every word is a number, each matched alone."""
    return all(map(_NUMBER.fullmatch, words))


def plane_fields(line: str) -> tuple[list[str], str] | None:
    """(the nine coordinates as written, the texture name without quotes) of a stripped plane
    line, or None when it is not one."""
    head = _HEAD.match(line)
    if head is None:
        return None
    coords = list(head.group(1, 2, 3, 4, 5, 6, 7, 8, 9))
    texture = head.group(10) if head.group(11) is None else head.group(11)
    tail = line[head.end():]
    cut = tail.find("//")  # the parameters hold no '/': the first '//' starts the comment
    if cut >= 0:
        tail = tail[:cut]
    if len(tail) <= SHORT_TAIL:  # every line an editor writes: one match
        ok = (_VALVE if tail.startswith("[") else _STANDARD).fullmatch(tail) is not None
    else:  # long: word by word (one long match keeps a backtracking stack entry per number)
        words = tail.replace("[", " [ ").replace("]", " ] ").split()  # whitespace by brackets is optional
        if words[:1] == ["["]:  # Valve 220
            ok = (len(words) >= 15 and words[5] == "]" and words[6] == "[" and words[11] == "]"
                  and _all_numbers(words[1:5] + words[7:11] + words[12:]))
        else:  # standard, with Quake 2 / 3 flags
            ok = len(words) >= 5 and _all_numbers(words)
    return (coords, texture) if ok else None


def key_fields(line: str) -> tuple[str, str] | None:
    """(key, value) of a stripped ``"key" "value"`` line, or None when it is not one."""
    if not line.startswith('"'):
        return None
    key_close = line.find('"', 1)
    if key_close < 0:
        return None
    value_open = _skip_space(line, key_close + 1)
    value_close = line.rfind('"')
    if not line.startswith('"', value_open) or value_close <= value_open:
        return None
    after = _skip_space(line, value_close + 1)
    if after < len(line) and not line.startswith("//", after):
        return None
    return line[1:key_close], line[value_open + 1:value_close]

"""The name index finds attribute writes from the dot (``fusionlint.analysis.project._attribute_writes``):
the same (object, attribute, offset) as the plain definition, a regular expression tried at every word
start, on awkward text and on every Python file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

from fusionlint.analysis import project

ROOT = Path(__file__).resolve().parent.parent
DEFINITION = re.compile(r"\b(\w+)\.(\w+)[ \t]*(?:[-+*/%@&|^]|//|\*\*|<<|>>)?=(?!=)")

AWKWARD = """
self.a = 1; self.b += 2; obj.c //= 3; x.y.z = 4; f(x).w = 5; a[0].v = 6; a . b = 7; a.b == 8; a.b <= 9
a.b >= 1; a.b != 2; a.b **= 3; a.b >>= 4; a.b <<= 5; a.b @= 6; a.b |= 7; a.b ^= 8; a.b &= 9; a.b %= 1
ünïcode.attr = 1; _x1.y_2 = 2; 1.5 = 3; .b = 4; a.\tb = 5; a.b\t= 6; a.b = = 7; a.b=8
"""


def _definition(text: str) -> list[tuple[str, str, int]]:
    return [(m.group(1), m.group(2), m.start()) for m in DEFINITION.finditer(text)]


def test_awkward_text():
    found = list(project._attribute_writes(AWKWARD))
    assert found == _definition(AWKWARD)
    assert ("ünïcode", "attr") in [(o, a) for o, a, _ in found] and ("y", "z") in [(o, a) for o, a, _ in found]


def test_every_file_of_the_repository():
    files = [p for part in ("fusionlint", "rules", "fixtures", "examples", "tests", "bench") for p in (ROOT / part).rglob("*.py")]
    assert len(files) > 200
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert list(project._attribute_writes(text)) == _definition(text), path

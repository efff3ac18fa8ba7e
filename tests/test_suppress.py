"""Inline suppression comments: every accepted form, logical-line coverage, and non-comments."""

from __future__ import annotations

import textwrap

import pytest

from fusionlint.suppress import Suppressions, parse_comment


def sup(source: str) -> Suppressions:
    return Suppressions.from_source(textwrap.dedent(source))


@pytest.mark.parametrize(
    "comment, fl101, fl301",
    [
        ("# noqa", True, True),
        ("#noqa", True, True),
        ("# NOQA", True, True),
        ("# noqa: FL101", True, False),
        ("# noqa:FL101", True, False),
        ("# noqa : fl101", True, False),
        ("# noqa: FL101, FL301", True, True),
        ("# noqa: FL101 FL301", True, True),
        ("# noqa: FL301 -- reason given", False, True),
        ("# explanation  # noqa: FL101", True, False),
        ("# fusionlint: ignore", True, True),
        ("# fusionlint:ignore", True, True),
        ("# fusionlint: ignore[FL101]", True, False),
        ("# fusionlint: ignore[FL101, FL301]", True, True),
        ("# fusionlint: ignore[fl301] because", False, True),
        # Not suppressions:
        ("# noqa: FL1011", False, False),  # exact codes, not prefixes
        ("# noqa: FL10", False, False),
        ("# noqa:", False, False),  # malformed list suppresses nothing
        ("# noqa: , ", False, False),
        ("# fusionlint: ignore[]", False, False),
        ("# fusionlint: ignore[not a code]", False, False),
        ("# noqanything", False, False),
        ("# fusionlint: ignored", False, False),
        ("# a comment", False, False),
    ],
)
def test_comment_forms(comment, fl101, fl301):
    s = sup(f"y = x.item()  {comment}\nz = x.item()\n")
    assert s.is_suppressed("FL101", 1) is fl101
    assert s.is_suppressed("FL301", 1) is fl301
    assert not s.is_suppressed("FL101", 2)  # the next statement is never covered


def test_parse_comment_values():
    assert parse_comment("# noqa") == [None]
    assert parse_comment("# noqa: fl101,FL102") == [frozenset({"FL101", "FL102"})]
    assert parse_comment("# fusionlint: ignore[FL1]  # noqa") == [None, frozenset({"FL1"})]
    assert parse_comment("# nothing") == []


def test_code_lookup_is_case_insensitive():
    s = sup("y = 1  # noqa: FL101\n")
    assert s.is_suppressed("fl101", 1)


def test_first_line_of_multiline_statement_covers_all_its_lines():
    s = sup(
        """\
        y = torch.where(  # noqa: FL101
            x.item() > 0,
            x,
            x.sum(),
        )
        z = x.item()
        """
    )
    assert [s.is_suppressed("FL101", n) for n in range(1, 7)] == [True] * 5 + [False]


def test_last_line_of_multiline_call_covers_its_arguments():
    s = sup(
        """\
        a = 1
        y = f(
            x.item(),
        )  # fusionlint: ignore[FL101]
        """
    )
    assert not s.is_suppressed("FL101", 1)
    assert s.is_suppressed("FL101", 2) and s.is_suppressed("FL101", 3)
    assert not s.is_suppressed("FL301", 3)


def test_comment_inside_brackets_covers_the_statement():
    s = sup("y = f(\n    a,  # noqa\n    b,\n)\nz = 2\n")
    assert [s.is_suppressed("FL101", n) for n in range(1, 6)] == [True, True, True, True, False]


def test_backslash_continuation_and_triple_quoted_string():
    s = sup('y = a + \\\n    b  # noqa\ns = """\nline\n"""  # noqa: FL301\nq = 1\n')
    assert s.is_suppressed("FL101", 1) and s.is_suppressed("FL101", 2)
    assert s.is_suppressed("FL301", 3) and s.is_suppressed("FL301", 5)
    assert not s.is_suppressed("FL101", 4) and not s.is_suppressed("FL301", 6)


def test_compound_statement_header_covers_header_only():
    s = sup(
        """\
        def forward(self, x):  # noqa: FL101
            return x.item()
        if x: y = x.item()  # noqa: FL101
        """
    )
    assert s.is_suppressed("FL101", 1)
    assert not s.is_suppressed("FL101", 2)  # the body is its own statement
    assert s.is_suppressed("FL101", 3)  # one-line compound statement: one logical line


def test_own_line_comment_covers_only_itself():
    s = sup("# noqa\ny = x.item()\n")
    assert s.is_suppressed("FL101", 1) and not s.is_suppressed("FL101", 2)


def test_noqa_inside_string_is_not_a_suppression():
    s = sup(
        '''\
        msg = "# noqa"
        doc = """
        # noqa: FL101
        # fusionlint: skip-file
        """
        t = f"{x} # fusionlint: ignore"
        '''
    )
    assert not s.skip_file
    assert not any(s.is_suppressed("FL101", n) for n in range(1, 8))


def test_skip_file_on_its_own_line():
    s = sup("import torch\n# fusionlint: skip-file\nx = 1\n")
    assert s.skip_file and s.is_suppressed("FL999", 3)
    s = sup("  # FUSIONLINT: skip-file\n")
    assert s.skip_file


def test_skip_file_after_code_is_not_file_level():
    s = sup("x = 1  # fusionlint: skip-file\ny = 2\n")
    assert not s.skip_file and not s.is_suppressed("FL101", 1)
    s = sup("y = f(\n    # fusionlint: skip-file\n    1)\n")  # inside a statement
    assert not s.skip_file


def test_no_comments_at_all():
    s = sup("x = 1\n")
    assert not s.skip_file and not s.is_suppressed("FL101", 1)
    assert not Suppressions.from_source("").is_suppressed("FL101", 1)


def test_source_without_trailing_newline():
    s = Suppressions.from_source("y = f(\n  1)  # noqa")
    assert s.is_suppressed("FL101", 1) and s.is_suppressed("FL101", 2)


@pytest.mark.parametrize(
    "source",
    [
        "y = f(  # noqa: FL101\n    x.item(),\n",  # unterminated bracket: TokenError
        "def f():\n        x = 1\n    y = 2  # noqa: FL101\n",  # bad dedent: IndentationError
    ],
)
def test_tokenize_failure_falls_back_to_physical_lines(source):
    s = Suppressions.from_source(source)
    assert s.fallback
    line = 1 if source.startswith("y") else 3
    assert s.is_suppressed("FL101", line)
    assert not s.is_suppressed("FL301", line)
    other = 2
    assert not s.is_suppressed("FL101", other)
    # Without statement boundaries, the finding's own span decides.
    assert s.is_suppressed("FL101", min(line, other), end_line=max(line, other))


def test_fallback_skip_file():
    s = Suppressions.from_source("# fusionlint: skip-file\nx = (\n")
    assert s.fallback and s.skip_file


def test_end_line_does_not_widen_a_tokenized_file():
    s = sup("a = 1\nb = 2  # noqa\n")
    assert not s.fallback
    assert not s.is_suppressed("FL101", 1, end_line=2)

"""The propagated facts' reasons: places named by function and call site, shown with their lines at the time."""

from fusionlint.project.reasons import BREAK, At, Reason, TwoCalls, render

LINES = {("a.py", "Net.forward", 0): 12, ("a.py", "Net.forward", 1): 12, ("b.py", "Other.forward", 2): 40,
         ("a.py", "helper", BREAK): 7}


def _line_of(at: At):
    return LINES.get((at.path, at.qualname, at.site))


def test_a_place_is_shown_with_its_path_or_as_a_line_of_its_own_file():
    assert render(Reason(("passed from Net.forward at ", At("a.py", "Net.forward", 0, True))), _line_of) == (
        "passed from Net.forward at a.py:12")
    assert render(Reason((At("a.py", "helper", BREAK, False),)), _line_of) == "line 7"
    assert render("parameter of Net.forward", _line_of) == "parameter of Net.forward"


def test_two_calls_on_one_line_show_the_line_once():
    same = TwoCalls("'sum'", At("a.py", "Net.forward", 0, True), "'max'", At("a.py", "Net.forward", 1, True))
    apart = TwoCalls("'sum'", At("a.py", "Net.forward", 0, True), "'max'", At("b.py", "Other.forward", 2, True))
    assert render(same, _line_of) == "'sum' and 'max' at a.py:12"
    assert render(apart, _line_of) == "'sum' at a.py:12, 'max' at b.py:40"
    # the lines decide, not the call sites: the same two sites on two lines after an edit
    LINES[("a.py", "Net.forward", 1)] = 13
    try:
        assert render(same, _line_of) == "'sum' at a.py:12, 'max' at a.py:13"
    finally:
        LINES[("a.py", "Net.forward", 1)] = 12


def test_nested_reasons_render_inside_out_and_an_unknown_place_says_so():
    inner = Reason(("a tensor size at ", At("b.py", "Other.forward", 2, True)))
    outer = Reason(("`n` at ", At("a.py", "Net.forward", 0, True), ", which varies: ", inner))
    assert render(outer, _line_of) == "`n` at a.py:12, which varies: a tensor size at b.py:40"
    assert render(Reason(("at ", At("c.py", "gone", 0, True))), _line_of) == "at c.py:?"


def test_call_lines_are_packed_and_read_back_whatever_their_size():
    from fusionlint.project.summary import FunctionSummary, call_line, pack_lines

    def fn(lines, first):
        return FunctionSummary("f", "f", None, None, (), None, False, (), (), frozenset(), first,
                               call_lines=pack_lines(lines, first))

    for lines, first in [([3, 3, 9], 2), ([70_000, 70_001], 69_999), ([5], 7), ([2, 200_000], 1), ([], 4)]:
        f = fn(lines, first)
        assert [call_line(f, i) for i in range(len(lines))] == lines
        assert call_line(f, len(lines)) is None and call_line(f, -1) is None
    assert len(pack_lines([3, 3, 9], 2)) == 6  # two bytes a site when each fits counted from the def line

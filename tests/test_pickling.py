"""fusionlint.pickling.by_fields: slotted dataclasses pickle as a call of their class, and come back
equal (and as hashable) as they went in; so do whole project summaries and propagated facts."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

from pathlib import Path

import pytest

from fusionlint.analysis.init_facts import InitValue, InitWrite
from fusionlint.outline import Outline, Unit
from fusionlint.pickling import by_fields
from fusionlint.project.model import FunctionFacts
from fusionlint.project.summary import AttrFact, CallSite, ClassSummary, FileSummary, FunctionSummary, Param, summarize

ROOT = Path(__file__).resolve().parent.parent

VALUES = [
    Param("x", "tensor", None),
    Param("mode", None, "literal", "'full'"),
    InitValue("call", "nn.Linear", "positional", ""),
    InitWrite("augassign", InitValue("int"), own=False),
    Outline(4, 120, (7, 12), (Unit("f", 1, 3), Unit("C", 5, 40)), "    "),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_round_trip_is_equal_and_goes_through_the_class(value):
    callable_, args = value.__reduce__()
    assert callable_ is type(value) and callable_(*args) == value
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(value, protocol=protocol))
        assert back == value and hash(back) == hash(value) and type(back) is type(value)
    assert copy.deepcopy(value) == value and copy.copy(value) == value


def test_shared_values_stay_shared_within_one_pickle():
    p = Param("x", "tensor", None)
    a, b = pickle.loads(pickle.dumps([p, p], protocol=pickle.HIGHEST_PROTOCOL))
    assert a is b


def test_a_field_outside_init_is_refused():
    with pytest.raises(TypeError, match="outside __init__"):

        @by_fields
        @dataclass(frozen=True, slots=True)
        class Derived:
            a: int
            b: int = field(init=False, default=0)


def test_project_summaries_and_facts_come_back_equal():
    classes = (Param, CallSite, AttrFact, FunctionSummary, ClassSummary, FileSummary, FunctionFacts)
    assert all("__reduce__" in cls.__dict__ for cls in classes)  # pickled as calls, not slot by slot
    sources = sorted([*ROOT.glob("fixtures/*/bad.py"), *ROOT.glob("examples/**/*.py")])
    assert len(sources) > 30
    kinds: set[str] = set()
    for path in sources:
        summary = summarize(path.read_text(encoding="utf-8"), path.name, path.stem, False)
        back = pickle.loads(pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == summary, path
        kinds.update(type(f).__name__ for f in summary.functions.values())
        kinds.update(type(c).__name__ for c in summary.classes.values())
    assert kinds == {"FunctionSummary", "ClassSummary"}
    facts = FunctionFacts(("Net.forward", "self.mix"), "helper", {"x": "annotated"}, frozenset({"self.embed"}))
    assert pickle.loads(pickle.dumps(facts)) == facts

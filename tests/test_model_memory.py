"""The project model and the name index keep one copy of what repeats across files (names, argument
values, signatures), and the answers they give do not depend on what they keep or forget."""

from __future__ import annotations

from pathlib import Path

import pytest

from fusionlint.analysis.project import ProjectIndex
from fusionlint.project import model as model_mod
from fusionlint.project.model import Project
from fusionlint.project.summary import summarize

BASE = """
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(4)
        self.scale = 2.0
"""

SUB = """
from torch import nn
from base import Base  # (module names of paths outside a package: the file name)


class Sub{n}(Base):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("mask", None)

    def forward(self, hidden_states, mask=None):
        return self.helper(hidden_states, mask=mask)

    def helper(self, hidden_states, mask=None):
        return self.proj(self.norm(hidden_states))
"""


@pytest.fixture(autouse=True)
def _empty_cwd(tmp_path, monkeypatch):
    # the relative paths below are read against the working directory (a pyproject.toml or package
    # above it would change the module names that `from base import Base` resolves through)
    monkeypatch.chdir(tmp_path)


def _project(subclasses: int) -> Project:
    project = Project()
    project.add("pkg/base.py", Path("pkg/base.py"), BASE)
    for n in range(subclasses):
        project.add(f"pkg/sub{n}.py", Path(f"pkg/sub{n}.py"), SUB.format(n=n))
    return project


def test_one_attribute_at_a_time_is_the_whole_answer_for_that_attribute():
    project = _project(3)
    for summary in project.files.values():
        for cls in summary.classes.values():
            whole = project.attributes(summary, cls)
            assert whole  # every class here has attributes, its own or its base's
            fresh = _project(3)  # nothing kept yet: computed attribute by attribute
            fresh_summary = fresh.files[summary.path]
            fresh_cls = fresh_summary.classes[cls.name]
            for attr, facts in whole.items():
                got = fresh.attribute_facts(fresh_summary, fresh_cls, attr)
                assert [(s.path, f) for s, f in got] == [(s.path, f) for s, f in facts]
            assert fresh.attribute_facts(fresh_summary, fresh_cls, "no_such_attribute") == []


def test_attributes_answers_are_the_same_after_older_ones_were_dropped(monkeypatch):
    monkeypatch.setattr(model_mod, "_ATTRIBUTES_KEPT", 2)
    project = _project(5)
    classes = [(s, c) for s in project.files.values() for c in s.classes.values()]
    first = {(s.path, c.name): project.attributes(s, c) for s, c in classes}
    assert len(project._attributes) == 2  # the others were dropped...
    for s, c in classes:  # ...and come back the same
        assert project.attributes(s, c) == first[(s.path, c.name)]
    base = project.files["pkg/base.py"]
    # the base sees its subclasses' attributes, each with the file that assigns it
    assert [s.path for s, _ in project.attributes(base, base.classes["Base"])["proj"]] == [
        f"pkg/sub{n}.py" for n in range(5)
    ]


def test_equal_names_values_and_signatures_are_one_object_across_files():
    one = summarize(SUB.format(n=1), "pkg/sub1.py", "pkg.sub1", False)
    two = summarize(SUB.format(n=2), "pkg/sub2.py", "pkg.sub2", False)
    f1, f2 = one.functions["Sub1.forward"], two.functions["Sub2.forward"]
    assert f1.params == f2.params and f1.params is f2.params
    (c1,), (c2,) = f1.calls, f2.calls
    assert (c1.target, c1.written, c1.args, c1.kwargs) == ("helper", "self.helper", c2.args, c2.kwargs)
    assert c1.target is c2.target and c1.written is c2.written
    assert c1.args is c2.args and c1.kwargs is c2.kwargs
    assert c1.kwargs == (("mask", frozenset({("param", "mask")})),)
    ctor1 = one.classes["Sub1"].attrs["proj"][0].ctor
    assert ctor1 == "torch.nn.Linear" and ctor1 is two.classes["Sub2"].attrs["proj"][0].ctor
    assert one.aliases["Base"] is two.aliases["Base"]
    assert one.compile_targets == frozenset() and one.compile_targets is two.compile_targets


def test_the_name_index_takes_a_file_back_out_exactly():
    index = ProjectIndex()
    text = "class A(Base):\n    pass\n\nobj.threshold = 1\nself.scale = 2\nself.scale += 1\n"
    index.update_file("a.py", text)
    index.update_file("b.py", text.replace("A(Base)", "B(A)"))
    assert index.self_attribute_writes["scale"] == [("a.py", 5), ("a.py", 6), ("b.py", 5), ("b.py", 6)]
    assert index.attribute_writes["threshold"] == [("a.py", 4), ("b.py", 4)]
    generation = index.generation
    index.update_file("a.py", text)  # the same facts: nothing cross-file changed
    assert index.generation == generation
    index.update_file("a.py", text.replace("self.scale += 1\n", "\nself.scale += 1\n"))  # a line moved
    assert index.generation > generation
    assert index.self_attribute_writes["scale"] == [("b.py", 5), ("b.py", 6), ("a.py", 5), ("a.py", 7)]
    index.remove_file("a.py")
    index.remove_file("b.py")
    assert not index.self_attribute_writes and not index.attribute_writes and not index.class_bases

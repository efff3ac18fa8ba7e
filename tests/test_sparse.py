"""The sparse parse (fusionlint.sparse) gives exactly the findings, errors and fixes of the full parse."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from fusionlint import engine as engine_mod
from fusionlint import outline, runner, sparse
from fusionlint.outline import first_indent
from fusionlint.config import Settings
from fusionlint.runner import RunOptions

REPO = Path(__file__).resolve().parent.parent
# tests/data holds no Python sources; tests/confirm_data holds the confirm pass's models
CORPORA = [REPO / "fixtures", REPO / "examples", REPO / "tests" / "confirm_data"]


def _finding_rows(result):
    rows = []
    for f in result.findings:
        fix = None
        if f.fix is not None:
            fix = (str(f.fix.applicability), f.fix.title,
                   tuple((e.line, e.column, e.end_line, e.end_column, e.content, e.original) for e in f.fix.edits))
        rows.append((f.path, f.line, f.column, f.end_line, f.end_column, f.code, f.message, f.context,
                     tuple(f.chain), tuple(map(str, f.effects)), str(f.severity), fix))
    errors = [(e.path, e.message, e.line, e.column, e.code, e.rule) for e in result.errors]
    return rows, errors


def _run(root: Path, monkeypatch, *, use_sparse: bool, fix: bool = False):
    engine = functools.partial(engine_mod.Engine, sparse=use_sparse)
    with monkeypatch.context() as m:
        m.setattr(engine_mod, "Engine", engine)  # the runner imports it when a run has files to analyse
        outcome = runner.run([str(root)], Settings(root=root, select=["ALL"]), RunOptions(fix=fix, diff=fix, jobs=1, unsafe_fixes=fix))
    return outcome


@pytest.mark.parametrize("root", CORPORA, ids=lambda p: p.name)
def test_sparse_parse_gives_the_full_parse_findings(root, monkeypatch):
    blanked: list[int] = []
    real_plan = sparse.plan

    def counting_plan(*args, **kwargs):
        found = real_plan(*args, **kwargs)
        if found is not None:
            blanked.append(found.blanked_lines())
        return found

    monkeypatch.setattr(sparse, "plan", counting_plan)
    sparse_run = _run(root, monkeypatch, use_sparse=True)
    full_run = _run(root, monkeypatch, use_sparse=False)
    assert _finding_rows(sparse_run.result) == _finding_rows(full_run.result)
    assert full_run.result.findings  # the corpus has findings to compare
    assert sum(blanked) > 0  # and the sparse path left something out


@pytest.mark.parametrize("root", CORPORA[:2], ids=lambda p: p.name)
def test_sparse_parse_gives_the_full_parse_fixes(root, monkeypatch):
    sparse_run = _run(root, monkeypatch, use_sparse=True, fix=True)
    full_run = _run(root, monkeypatch, use_sparse=False, fix=True)
    assert sparse_run.diffs == full_run.diffs
    assert full_run.diffs


# Each snippet has a top-level definition the sparse plan blanks and whose text the full parse's
# rules still read: the engine must notice and give the full parse's answer. Without the check
# (the "naive" run) the answer would differ, so each snippet shows that its check is needed.
GUARDED = {
    # a logger bound in a function no rule looks at (the side-effects analysis reads every Assign)
    "logger": (
        "import logging\nimport torch\nfrom torch import nn\n\n\ndef setup():\n    global log\n"
        "    log = logging.getLogger('x')\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        log.info('step')\n        return x * 2\n"
    ),
    # `model.scale = ...` outside the class: the attribute is not constant (FL201/FL901 read such writes)
    "attribute write": (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.scale = 2.0\n\n    def forward(self, x):\n"
        "        return x * self.scale\n\n\ndef tune(model):\n    model.scale = 3.0\n"
    ),
    # the first indented block (blanked) is indented by 2: libcst's default indent, used by fix texts
    "default indent": (
        "import torch\nfrom torch import nn\n\n\ndef unused(a):\n  return a\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        print(x)\n        return x.sum().item()\n"
    ),
}


def _lint_all_ways(root: Path, monkeypatch):
    out = {}
    for mode in ("full", "sparse", "naive"):
        with monkeypatch.context() as m:
            if mode == "naive":
                m.setattr(sparse, "still_exact", lambda plan, ctx: True)
                m.setattr(outline, "first_indent", lambda body, source, starts: "    ")
            run = _run(root, monkeypatch, use_sparse=mode != "full", fix=True)
        out[mode] = (_finding_rows(run.result), run.diffs)
    return out


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_sparse_parse_falls_back_where_a_blanked_definition_matters(name, tmp_path, monkeypatch):
    (tmp_path / "model.py").write_text(GUARDED[name])
    runs = _lint_all_ways(tmp_path, monkeypatch)
    assert runs["sparse"] == runs["full"]
    assert runs["naive"] != runs["full"]


def _plan_of(source: str):
    import ast

    from fusionlint.project.model import Project

    model = Project()
    model.add("m.py", Path("m.py"), source)
    return sparse.plan(source, outline.outline_of(ast.parse(source), source, 10_000), model, "m.py", ())


def test_plan_keeps_what_the_kept_code_names_and_every_definition_of_a_name():
    source = (
        "import torch\nfrom torch import nn\n\n\ndef helper(x):\n    return x\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return helper(x)\n\n\ndef helper(x):\n    return x.item()\n\n\n"
        "class Config:\n    depth = 2\n\n\ndef other():\n    return Config()\n"
    )
    plan = _plan_of(source)
    assert [u.name for u in plan.blanked] == ["Config", "other"]  # `other` names Config, nothing names `other`
    assert plan.text.splitlines()[:17] == source.splitlines()[:17]
    assert len(plan.text.splitlines()) == len(source.splitlines())
    assert plan.text.splitlines()[17:] == [""] * 6


def test_plan_keeps_definitions_holding_imports_compile_and_entry_points():
    source = (
        "import torch\n\n\ndef lazy():\n    import numpy\n    return numpy\n\n\ndef build(m):\n"
        "    return torch.compile(m)\n\n\nclass Fn(Base):\n    def forward(ctx, x):\n        return x\n\n\n"
        "def unused():\n    return 1\n"
    )
    plan = _plan_of(source)
    assert [u.name for u in plan.blanked] == ["unused"]


def test_first_indent_is_what_libcst_infers():
    import ast

    import libcst as cst

    from fusionlint.lines import line_starts

    sources = [
        "x = 1\n",
        "if x: y = 1\nelse:\n   z = 2\n",
        "def f(a,\n      b): return a\n\nclass A:\n\tdef g(self):\n\t\treturn 1\n",
        "try:\n  pass\nexcept E:\n    pass\n",
        "@dec\nclass A:\n      x = 1\n",
        "s = '''\n    not code\n'''\nwhile s:\n  break\n",
        "if a: pass\nelif b:\n     x = 1\n",
        "try: pass\nexcept* E:\n  pass\n",
    ]
    for source in sources:
        expected = cst.parse_module(source).default_indent
        assert first_indent(ast.parse(source).body, source, line_starts(source)) == expected, source
    # libcst takes a case body's indentation, not the first INDENT's: unknown, so no sparse parse
    assert first_indent(ast.parse("match p:\n case 1:\n   pass\n").body, "", [0, 9, 18]) is None


def test_libcst_parses_the_text_with_blanked_lines_cut_out_and_positions_are_the_sources(tmp_path, monkeypatch):
    # Config and other are blanked: libcst gets their 4 lines fewer, a finding below them keeps its line
    source = (
        "import torch\nfrom torch import nn\n\n\nclass Config:\n    depth = 2\n\n\ndef other():\n    return Config()\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        y = x.permute(0, 2, 1).view(-1)\n        return y.sum().item()\n"
    )
    plan = _plan_of(source)
    assert [u.name for u in plan.blanked] == ["Config", "other"]
    assert plan.parsed_text().count("\n") == source.count("\n") - 4
    assert [plan.lines.line(n) for n in (1, 4, 5, 7, 9, 12)] == [1, 4, 7, 11, 13, 16]
    parsed: list[str] = []
    real = engine_mod.cst.parse_module
    monkeypatch.setattr(engine_mod.cst, "parse_module", lambda text, *a, **k: (parsed.append(text), real(text, *a, **k))[1])
    (tmp_path / "model.py").write_text(source)
    runs = _lint_all_ways(tmp_path, monkeypatch)
    assert runs["sparse"] == runs["full"]
    assert {row[1] for row in runs["full"][0][0]} == {15, 16}  # the findings are below the cut
    assert plan.parsed_text() in parsed


def test_outline_from_each_statements_kept_shape_is_the_whole_walks(monkeypatch):
    import ast

    from fusionlint import precheck

    deep = "def f(x):\n    return " + "[" * 40 + "x" + "]" * 40 + "\n"
    sources = [p.read_text() for p in CORPORA[0].rglob("*.py")] + [deep, "", "x = 1; y = [[2]]\nclass A:\n    z = (((3)))\n"]
    for source in sources:
        tree = ast.parse(source)
        for limit in (200_000, 40):  # over the node limit, the whole walk decides
            shapes: dict = {}
            assert outline.outline_of(tree, source, limit, shapes) == outline.outline_of(tree, source, limit), source[:80]
            assert outline.outline_of(tree, source, limit, shapes) == outline.outline_of(tree, source, limit)
    walked: list = []
    real = precheck.tree_shape
    monkeypatch.setattr(precheck, "tree_shape", lambda node, **k: (walked.append(node), real(node, **k))[1])
    source = deep + "\n\nclass B:\n    pass\n"
    shapes = {}
    outline.outline_of(ast.parse(source), source, 200_000, shapes)
    edited = source.replace("pass", "y = 2")
    again = outline.outline_of(ast.parse(edited), edited, 200_000, shapes)
    assert [type(n).__name__ for n in walked] == ["ClassDef", "FunctionDef", "ClassDef"]  # f walked once
    assert again == outline.outline_of(ast.parse(edited), edited, 200_000)
    assert again.depth > 40 and again.deepest[0] == 2  # the nested lists of f, kept from the first outline


def test_plan_blanks_methods_of_a_kept_class_that_nothing_reaches(tmp_path, monkeypatch):
    source = (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.w = nn.Linear(2, 2)\n\n"
        "    def reset(self):\n        self.scale = len(self.describe())\n\n"
        "    def describe(self):\n        return 'net'\n\n"
        "    def extra_repr(self):\n        return 'Net()'\n\n"
        "    def forward(self, x):\n        return self.w(x).sum().item()\n"
    )
    plan = _plan_of(source)
    # forward is the entry point; __init__ and reset (which writes an attribute) go, described from
    # CPython's tree (sparse.method_facts), and describe, named only by reset, with them; extra_repr is
    # named by nothing and the model does not compile it
    assert [u.name for u in plan.blanked] == ["Net.__init__", "Net.reset", "Net.describe", "Net.extra_repr"]
    assert plan.parsed_text().count("\n") == source.count("\n") - sum(u.end - u.start + 1 for u in plan.blanked)
    facts = {f.name: f for f, _aliases in plan.class_facts["Net"]}
    assert sorted(facts) == ["__init__", "reset"]
    assert [(w[0], w[1], w[2], w[3].kind, w[3].name) for w in facts["__init__"].writes] == [("w", "__init__", "assign", "call", "nn.Linear")]
    assert [(w[0], w[1], w[3].kind) for w in facts["reset"].writes] == [("scale", "reset", "call")]
    (tmp_path / "model.py").write_text(source)
    runs = _lint_all_ways(tmp_path, monkeypatch)
    assert runs["sparse"] == runs["full"]
    assert [row[1] for row in runs["full"][0][0]] == [20]  # .item() below the cut, on its own line


def test_a_rule_looking_up_a_blanked_method_makes_the_file_lint_whole():
    from types import SimpleNamespace

    from fusionlint.analysis.index import Inexact

    source = (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def helper(self):\n        return 1\n\n    def forward(self, x):\n        return x\n"
    )
    plan = _plan_of(source)
    assert [u.name for u in plan.blanked] == ["Net.helper"]

    def asked(methods):
        return SimpleNamespace(asked_attrs={}, asked_kinds=set(), _memo={}, file=SimpleNamespace(aliases={}),
                               asked_methods=methods, asked_names=set(), inexact=Inexact())

    assert sparse.still_exact(plan, asked({"Net": {"forward", "__init__"}}))
    assert not sparse.still_exact(plan, asked({"Net": {"helper"}}))
    assert not sparse.still_exact(plan, asked({"Net": {sparse._EVERYTHING}}))  # iterated its methods


FL202_FORMS = (
    "import torch\nfrom torch._dynamo import mark_static as ms\nfrom torch import compile as tc\n\n\n"
    "class Block(torch.nn.Module):\n    def __init__(self, dynamic_img_size=False):\n        super().__init__()\n"
    "        self.dynamic_img_size = dynamic_img_size\n\n    def forward(self, x):\n        return x\n\n\n"
    "def pin(x):\n    ms(x, 0)\n\n\ndef build(model):\n    return tc(model,\n              dynamic = False)\n\n\n"
    "def configure():\n    torch._dynamo.config.automatic_dynamic_shapes = False\n"
)


def test_whole_file_rule_keeps_what_it_reads_and_no_more(tmp_path, monkeypatch):
    # FL202 (scope "file") pins its three forms, aliased ones too, but not timm's `dynamic_img_size=False`
    plan = _plan_of_with_rules(FL202_FORMS)
    blanked = [u.name for u in plan.blanked]
    assert "Block.__init__" in blanked and not {"pin", "build", "configure"} & set(blanked)
    (tmp_path / "model.py").write_text(FL202_FORMS)
    runs = _lint_all_ways(tmp_path, monkeypatch)
    assert runs["sparse"] == runs["full"]
    assert [row[5] for row in runs["full"][0][0]] == ["FL202", "FL202", "FL202"]


def _plan_of_with_rules(source: str):
    import ast

    from fusionlint.engine import Engine
    from fusionlint.registry import all_rules

    engine = Engine(all_rules().values())
    engine.model.add("m.py", Path("m.py"), source)
    return engine._plan(source, outline.outline_of(ast.parse(source), source, 10_000), "m.py", list(all_rules().values()))

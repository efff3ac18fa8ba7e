"""FL209 and the break summary it stands on: a decorator's wrapper shared by functions that break.

The static tests assert where FL209 reports on a project of files and when the project model says a
function breaks when called; the torch test compiles the same model (backend eager) and asserts that
every failed guard of its recompiles names a line FL209 reports.
"""

from __future__ import annotations

import re
import sys
import importlib.util

from tests.helpers import need
from tests.test_frame_split import _recompiles
from tests.test_semantic_patterns import HEAD, at, lint, project

DECORATORS = """
import functools


def renamed_kwarg(old, new):
    def wrapper(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            name = func.__name__
            if old in kwargs:
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapped

    return wrapper
"""

MODELS = HEAD + """
from deco import renamed_kwarg


class Head(nn.Module):
    @renamed_kwarg("scale", "alpha")
    def forward(self, x, alpha=2.0):
        print("head")
        return x * alpha


class Body(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()

    @renamed_kwarg("scale", "alpha")
    def forward(self, x, alpha=1.0):
        print("body")
        return self.head(x + alpha)


class Alone(nn.Module):
    @renamed_kwarg("scale", "alpha")
    def forward(self, x):
        print("alone")
        return x
"""

# `func` (line 8), `kwargs` (9), `args` (11: the first read on the path that does not rename)
EXPECTED = [("deco.py", 8), ("deco.py", 9), ("deco.py", 11)]


def test_a_wrapper_shared_by_two_breaking_functions_one_calls_is_reported_in_its_file(tmp_path):
    root = project(tmp_path, {"deco.py": DECORATORS, "models.py": MODELS})
    findings = lint(root)
    assert sorted(at(findings, "FL209")) == EXPECTED
    message = next(f for f in findings if f.code == "FL209").message
    # Body and Head run under one compiled call; Alone is compiled on its own and is not named
    assert "`Body.forward` (models.py: line 20)" in message and "`Head.forward` (models.py: line 9)" in message
    assert "Alone" not in message


def test_a_wrapper_whose_functions_never_run_together_is_not_reported(tmp_path):
    alone = MODELS.replace("        self.head = Head()\n", "").replace("self.head(x + alpha)", "x + alpha")
    root = project(tmp_path, {"deco.py": DECORATORS, "models.py": alone})
    assert at(lint(root), "FL209") == []


def test_the_wrapper_recompiles_with_a_failed_guard_on_a_line_fl209_names(tmp_path):
    root = project(tmp_path, {"deco.py": DECORATORS, "models.py": MODELS})
    sys.path.insert(0, str(root))  # models.py imports deco
    try:
        records = _recompiles(root / "models.py", {"Body": [(2, 4), (2, 4)]})
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("deco", None)
    guarded = sorted({("deco.py", int(m)) for r in records for m in re.findall(r"deco\.py:(\d+) in wrapped", r)})
    # the wrapper is compiled for Body, then again for Head (a frame of its own: Head prints)
    assert any("in wrapped" in r for r in records), records
    assert guarded and set(guarded) <= set(EXPECTED), (guarded, records)


CACHE = """
class Cache:
    def __init__(self, data=None, config=None):
        self.sizes = []
        if data is not None:
            self.sizes.append(data.max().item())


class Pair:
    def __init__(self, *caches):
        if len(caches) == 1:
            self.first = Cache(caches[0])
        else:
            self.first = caches[0]
"""


def _splits(root, path: str, qualname: str):
    from fusionlint.project.model import build

    files = [(p.relative_to(root).as_posix(), p, p.read_text()) for p in sorted(root.glob("*.py"))]
    model = build(files)
    return model.shown(model.function_facts(path, qualname).splits)


def test_a_break_in_a_branch_the_call_rules_out_does_not_split_the_caller(tmp_path):
    root = project(tmp_path, {"cache.py": CACHE, "net.py": HEAD + """
        from cache import Cache, Pair

        class Quiet(nn.Module):
            def forward(self, x):
                cache = Pair(Cache(config=1), Cache(config=2))
                return x * 2

        class Loud(nn.Module):
            def forward(self, x):
                cache = Cache(x)
                return x * 2
        """})
    # `Cache(config=1)` passes `data=None`: its `.item()` is under `if data is not None:`; `Pair(a, b)`
    # passes two caches: the `len(caches) == 1` branch that builds a Cache from data is not taken
    assert _splits(root, "net.py", "Quiet.forward") is None
    assert _splits(root, "net.py", "Loud.forward") == "`Cache` at line 12, which breaks"


def test_a_comparison_of_a_local_tensor_breaks_the_function(tmp_path):
    root = project(tmp_path, {"net.py": HEAD + """
        class Drop(nn.Module):
            def forward(self, x):
                if self.training:
                    p = torch.rand([])
                    if p < 0.1:
                        return x
                return x * 2
        """})
    assert _splits(root, "net.py", "Drop.forward") == "line 7"  # `if p < 0.1:`


CHECKED = HEAD + """
class Checked(nn.Module):
    def forward(self, x):
        assert x.abs().max() < 100
        p = torch.rand([])
        assert p < 2.0
        return x * 2
"""


def test_an_assert_on_a_tensor_does_not_break_the_function(tmp_path):
    root = project(tmp_path, {"net.py": CHECKED})
    assert _splits(root, "net.py", "Checked.forward") is None


def test_those_asserts_give_no_graph_break_on_the_installed_torch(tmp_path):
    need("torch", "the claim is about torch.compile")
    import torch

    # a module of its own: pytest rewrites the asserts of test modules into branches that do break
    path = project(tmp_path, {"net.py": CHECKED}) / "net.py"
    spec = importlib.util.spec_from_file_location("fl_checked", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    try:
        assert torch._dynamo.explain(module.Checked())(torch.randn(3)).graph_break_count == 0
    finally:
        torch._dynamo.reset()

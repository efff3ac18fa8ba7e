"""FL204 on a loop whose every iteration breaks (zoo audit round 5, pattern 3: omdet-turbo's
``get_cached_class_embeddings``). Dynamo runs such a frame eagerly instead of unrolling the loop, so
nothing recompiles per trip count; the breaking line keeps its own finding.

The static tests assert which loops keep FL204, whatever other rules are selected; the torch test
compiles the same classes and asserts the fact behind it: the breaking loops' forwards get no compiled
entry at all, the others one per batch size.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.helpers import need
from tests.test_semantic_patterns import HEAD, at, lint, project

LOOPS = HEAD + """
class Cache(nn.Module):
    @staticmethod
    def _key(ids, mask, index):
        row = ids[index]
        return tuple(row[mask[index] != 0].tolist())

    def forward(self, ids: torch.Tensor, mask: torch.Tensor):
        out = []
        for idx, _ in enumerate(ids):
            key = self._key(ids, mask, idx)
            out.append(len(key))
        return out


class Item(nn.Module):
    def forward(self, x: torch.Tensor):
        out = []
        for row in x:
            with torch.no_grad():
                scale = row.sum().item()
            out.append(row * scale)
        return torch.stack(out)


class Branch(nn.Module):
    def forward(self, x: torch.Tensor):
        out = []
        for row in x:
            if row.sum() > 3:
                row = row * 2
            out.append(row[row > 2].sum())
        return torch.stack(out)


class Plain(nn.Module):
    def forward(self, x: torch.Tensor):
        out = []
        for row in x:
            out.append(row * 2)
        return torch.stack(out)


class Conditional(nn.Module):
    def forward(self, x: torch.Tensor, flag: bool = False):
        out = []
        for row in x:
            if flag:
                row = row * row.sum().item()
            out.append(row)
        return torch.stack(out)


class AfterExit(nn.Module):
    def forward(self, x: torch.Tensor):
        out = []
        for row in x:
            out.append(row * 2)
            if len(out) > 64:
                break
            out.append(row.sum().item() * row)
        return torch.stack(out)
"""

BREAKING = ("Cache", "Item", "Branch")  # every iteration breaks
UNROLLED = ("Plain", "Conditional")  # traced and unrolled: one compiled entry per batch size


def _loop_line(text: str, name: str) -> int:
    lines = text.splitlines()
    start = lines.index(f"class {name}(nn.Module):")
    return next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith("for ")) + 1


def test_a_loop_whose_every_iteration_breaks_has_no_fl204(tmp_path):
    root = project(tmp_path, {"loops.py": LOOPS})
    text = (root / "loops.py").read_text()
    expected = sorted(("loops.py", _loop_line(text, n)) for n in (*UNROLLED, "AfterExit"))
    for select in ("ALL", "FL204", "FL204,FL102"):  # the same answer whatever else is selected
        assert sorted(at(lint(root, select=select), "FL204")) == expected, select
    # the breaks themselves are still reported
    found = lint(root)
    assert ("loops.py", text.splitlines().index("        return tuple(row[mask[index] != 0].tolist())") + 1) in at(found, "FL101")


def test_a_break_with_a_stated_condition_does_not_void_the_loop(tmp_path):
    source = HEAD + """
class Half(nn.Module):
    def forward(self, x: torch.Tensor):
        out = []
        for row in x:
            if row.dtype == torch.float16 and not torch.isfinite(row).all():
                row = row.clamp(-1, 1)
            out.append(row)
        return torch.stack(out)
"""
    root = project(tmp_path, {"half.py": source})
    loop = _loop_line((root / "half.py").read_text(), "Half")
    found = lint(root)
    assert [f.code for f in found if f.line == loop + 1] == ["FL102"]
    assert at(found, "FL204") == [("half.py", loop)]


def test_torch_runs_the_breaking_loops_eagerly_and_unrolls_the_others(tmp_path):
    torch = need("torch", "compiles the loops to measure the fact FL204's exception rests on")
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    path = tmp_path / "loops.py"
    path.write_text(LOOPS)
    spec = importlib.util.spec_from_file_location("fusionlint_test_loops", path)
    loops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loops)
    entries = {}
    for name in (*BREAKING, *UNROLLED):
        torch._dynamo.reset()
        module = getattr(loops, name)()
        compiled = torch.compile(module, backend="eager")
        for batch in (2, 3, 4, 5):
            x = torch.arange(batch * 3).reshape(batch, 3)
            compiled(x, x % 2) if name == "Cache" else compiled(x.float())
        entries[name] = len(_debug_get_cache_entry_list(type(module).forward.__code__))
    assert entries == {"Cache": 0, "Item": 0, "Branch": 0, "Plain": 4, "Conditional": 4}


# After such a loop the rest of the frame runs eagerly too (PyG 2.8.1's EdgePooling._merge_edges and
# vit-pytorch 1.26's NaViT.forward in the recall bench: the loop's break recorded, none after it)
AFTER = HEAD + """
def _width(x):
    return int(x.max())


class After(nn.Module):
    def forward(self, x: torch.Tensor):
        out = []
        for row in x:
            out.append(row * row.sum().item())
        h = torch.stack(out)
        n = int(h.max())
        return h[:, : _width(x)] * n


def example_inputs():
    return (torch.arange(12.0).reshape(4, 3),)
"""


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_findings_after_a_loop_that_breaks_on_every_iteration_say_they_run_eagerly_today(tmp_path):
    root = project(tmp_path, {"after.py": AFTER})
    text = (root / "after.py").read_text()
    loop_break, after, helper = (_line(text, s) for s in ("row.sum().item()", "n = int(h.max())", "return int(x.max())"))
    for select in ("ALL", "FL101", "FL101,FL103"):  # the same messages whatever else is selected
        found = {f.line: f.message for f in lint(root, select=select) if f.code == "FL101"}
        assert set(found) == {loop_break, after, helper}, select
        assert f"the graph break at line {loop_break} inside a loop" in found[after]
        assert "not today" not in found[loop_break]  # the loop's own break happens
        assert "not today" not in found[helper]  # a function it calls is a frame of its own


def test_torch_records_the_loops_break_and_none_after_it_in_that_frame(tmp_path):
    need("torch", "compiles the module to measure the fact the message rests on")
    from tests.test_fixture_effects import load_module, measure_module

    path = tmp_path / "after_loop.py"
    path.write_text(AFTER.replace("class After(", "class Model("), encoding="utf-8")
    text = path.read_text()
    measured = measure_module(load_module(path), path)
    assert measured.eager_ok and measured.compiled_ok, (measured.eager_error, measured.compiled_error)
    lines = {s.line for s in measured.break_sites if s.file and Path(s.file).resolve() == path.resolve()}
    assert _line(text, "row.sum().item()") in lines
    assert _line(text, "n = int(h.max())") not in lines
    assert _line(text, "return int(x.max())") in lines  # the helper is compiled as a frame of its own

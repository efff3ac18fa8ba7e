"""FL208: Python values that enter a frame a graph break starts (fusionlint.semantic.frame_split).

The static test asserts where FL208 reports on three models; the torch test compiles the same
models, calls each with three batch sizes, and asserts the fact behind every finding: a recompile
whose failed guard names exactly that line (and none that FL208 does not name, beyond the inputs'
own shapes).
"""

from __future__ import annotations

import importlib.util
import logging
import re
from pathlib import Path

from tests.helpers import need
from tests.test_semantic_patterns import HEAD, at, lint, project

MODELS = HEAD + """
def helper(x, n, mode):
    if mode == "a":
        y = x * 2
    else:
        y = x + 1
    k = int(x.max())
    return y + n + k


def noisy(x, n):
    y = x * n
    print("noisy")
    return y


def scaled(x, idx):
    y = x * idx
    print("scaled")
    return y


def densify(x, size):
    out = x.new_zeros(size)
    print("dense")
    return out + x.sum()


class Constants(nn.Module):
    def forward(self, x):
        a = helper(x, 3, "a")
        b = helper(x, 4, "b")
        return a + b + noisy(x, x.size(0))


class Carried(nn.Module):
    def forward(self, x):
        b = x.size(0)
        print("carried")
        return x.view(b, -1) * 2


class Looped(nn.Module):
    def forward(self, x):
        for i in range(3):
            x = scaled(x, i)
        return x


class Padded(nn.Module):
    def forward(self, x):
        n = x.size(0)
        return densify(x.sum(0), (n, n))


class Fresh(nn.Module):
    def forward(self, x):
        print("fresh")
        return x.view(x.size(0), -1) * 2
"""

# the lines FL208 names in MODELS: `mode`, `n` and `k` (read from a tensor) in helper, `n` in noisy, `idx` in scaled, `size` in
# densify, `b` in Carried.forward
EXPECTED = [("models.py", 4), ("models.py", 9), ("models.py", 9), ("models.py", 13), ("models.py", 19), ("models.py", 25), ("models.py", 41)]


def test_fl208_lines(tmp_path):
    root = project(tmp_path, {"models.py": MODELS})
    assert sorted(at(lint(root), "FL208")) == EXPECTED


def test_fl208_lines_are_the_guards_torch_recompiles_on(tmp_path):
    path = project(tmp_path, {"models.py": MODELS}) / "models.py"  # the text the static test lints
    inputs = {name: [(b, 4) for b in (2, 3, 4)] for name in ("Constants", "Carried", "Looped", "Padded", "Fresh")}
    records = _recompiles(path, inputs)
    # every other recompile is an input's shape ("tensor 'x' size mismatch"), which names no line
    assert _guard_lines(records) == sorted(set(EXPECTED)), records


def _recompiles(path: Path, inputs: dict) -> list[str]:
    """Compile each model class of ``path`` named in ``inputs`` (backend eager) and call it with each of
    its inputs (a shape: random values; a number: a (2, 4) tensor full of it, so that only values
    change); the recompile log's messages."""
    need("torch", "the claim is about torch.compile")
    import torch

    spec = importlib.util.spec_from_file_location(f"fl208_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            if record.name.endswith("__recompiles"):
                records.append(record.getMessage())

    handler = Keep()
    torch._logging.set_logs(recompiles=True)
    loggers = [logging.getLogger(n) for n in ("torch", "torch._dynamo")]
    saved = [logger.handlers for logger in loggers]
    for logger in loggers:
        logger.handlers = [handler]
    try:
        for name, calls in inputs.items():
            torch._dynamo.reset()
            compiled = torch.compile(getattr(module, name)(), backend="eager")
            for x in calls:
                compiled(torch.randn(*x) if isinstance(x, tuple) else torch.full((2, 4), float(x)))
    finally:
        for logger, handlers in zip(loggers, saved):
            logger.handlers = handlers
        torch._logging.set_logs()
        torch._dynamo.reset()
    return records


def _guard_lines(records: list[str]) -> list[tuple[str, int]]:
    lines = set()
    for message in records:
        for match in re.finditer(r"#.*?models\.py:(\d+) in ", message):
            lines.add(("models.py", int(match.group(1))))
    return sorted(lines)


# Values a graph break reads from a tensor (`int(x.max())`, `.item()`, `.tolist()`) and sequences of
# sizes passed to a helper that breaks: where Dynamo guards on them
HOST_MODELS = HEAD + """
def bump(x, index):
    n = int(index.max()) + 1
    return x.new_zeros(n)


class StackUse(nn.Module):
    def forward(self, x):
        return bump(x, x.long())


class HostLocal(nn.Module):
    def forward(self, x):
        s = x.max().item()
        y = x * 2
        return y * s


class Flag(nn.Module):
    def forward(self, x):
        flag = (x > 3).any().item()
        y = x * 2
        if flag:
            return y
        return y + 1


class Items(nn.Module):
    def forward(self, x):
        counts = x[0, :2].long().tolist()
        y = x * 2
        return y + counts[1]


def noisy(x, n):
    y = x * n
    print("noisy")
    return y


class HostArg(nn.Module):
    def forward(self, x):
        return noisy(x, int(x.max()))


def count(x):
    return int(x.max()) + 1


class NothingAfter(nn.Module):
    def forward(self, x):
        return x * 2 + count(x)


def densify(x, size=None):
    if size is None:
        size = (1, 1)
    if isinstance(size, (tuple, list)):
        a, b = size
        if a is None:
            a = 1
    out = x.new_zeros(a, b)
    print("dense")
    return out + x.sum()


class Sizes(nn.Module):
    def forward(self, x):
        n = x.size(0)
        return densify(x.sum(0), (n, n))


class Branches(nn.Module):
    def forward(self, x):
        n = int(x.max())
        if x.dim() == 3:
            y = x * n
        else:
            y = x + n
        return y * 2


class Experts(nn.Module):
    def forward(self, inputs, sizes):
        return inputs * sizes[0]


class Routed(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()

    def forward(self, x):
        sizes = x[0, :2].long().tolist()
        y = x * 2
        return self.experts(y, sizes)
"""
# `n + 1` right after the break in bump; `s`, `flag` and `counts[1]` where first read; `int(x.max())`
# passed on in HostArg (the caller's resumed frame) and `n` where noisy first reads it; `a`, an element
# of `size`, in densify (not `size is None`); what `count` returns where NothingAfter consumes it (count's
# own resumed frame has no tensor work: Dynamo does not compile it)
HOST_EXPECTED = [("models.py", 4), ("models.py", 17), ("models.py", 24), ("models.py", 33), ("models.py", 37),
                 ("models.py", 44), ("models.py", 53), ("models.py", 61), ("models.py", 78), ("models.py", 80)]
# ... and in Branches the first read of `n` on each arm of the `if`: the guard is on the arm taken (the
# `else` for a 2-d input)
UNTAKEN = ("models.py", 78)
# Routed passes `sizes` to a submodule Dynamo inlines: the guard is where Experts.forward reads an element
# (not reported: FL208 does not follow the value into the callee), not on the call's line (97)
INLINED = ("models.py", 86)


def test_fl208_values_read_from_tensors_and_sequences_of_sizes(tmp_path):
    root = project(tmp_path, {"models.py": HOST_MODELS})
    assert sorted(at(lint(root), "FL208")) == HOST_EXPECTED


def test_fl208_host_value_lines_are_the_guards_torch_recompiles_on(tmp_path):
    path = project(tmp_path, {"models.py": HOST_MODELS}) / "models.py"
    by_value = ("StackUse", "HostLocal", "Flag", "Items", "HostArg", "NothingAfter", "Branches", "Routed")
    inputs = {name: [2, 3, 4, 5] for name in by_value} | {"Sizes": [(2, 4), (3, 4), (4, 4)]}
    records = _recompiles(path, inputs)
    assert _guard_lines(records) == sorted([line for line in HOST_EXPECTED if line != UNTAKEN] + [INLINED]), records


def test_fl208_across_files(tmp_path):
    # the helper breaks through a helper in another file (PyG's `maybe_num_nodes`, called from every
    # conv); the caller resumes after the call in a new frame
    root = project(tmp_path, {
        "checks.py": HEAD + """
            def check(x):
                print("checked")
                return x
            """,
        "utils.py": HEAD + """
            from checks import check

            def count(x, num_nodes=None):
                if num_nodes is None:
                    num_nodes = x.size(0)
                return check(x) * num_nodes

            def maybe(x, flag):
                if flag:
                    check(x)
                return x
            """,
        "net.py": HEAD + """
            from checks import check
            from utils import count, maybe

            class Net(nn.Module):
                def forward(self, x):
                    n = x.size(0)
                    y = count(x) + count(x, 8)
                    z = maybe(x, True)
                    return check(y).view(n, -1) + z
            """,
    })
    findings = lint(root)
    # `num_nodes` where `count`'s frame first reads it, and again in the frame resumed after `check(x)`;
    # `n` in the frame `forward` resumes in after `count(x)`. `maybe` breaks on some calls only: nothing
    # is said to resume after it
    assert sorted(at(findings, "FL208")) == [("net.py", 11), ("utils.py", 6), ("utils.py", 8)]
    in_utils = next(f for f in findings if f.code == "FL208" and (f.path, f.line) == ("utils.py", 6))
    assert "`count` breaks the graph (line 8)" in in_utils.message


POOLS = HEAD + """
def pool(x, reduce):
    out = x.amax(0) if reduce == "max" else x.sum(0)
    print("pooled")
    return out


def mid(x, reduce):
    return pool(x * 2, reduce)
"""


def test_fl208_constants_count_only_between_callers_compiled_together(tmp_path):
    # `mid` passes its own `reduce` on to `pool`, which breaks: each model passes one constant, and no
    # compiled call runs both models, so each compiles `pool` once
    (tmp_path / "apart").mkdir()
    (tmp_path / "together").mkdir()
    apart = project(tmp_path / "apart", {"pools.py": POOLS, "models.py": HEAD + """
        from pools import mid

        class MaxModel(nn.Module):
            def forward(self, x):
                return mid(x, "max")

        class SumModel(nn.Module):
            def forward(self, x):
                return mid(x, "sum")
        """})
    assert at(lint(apart), "FL208") == []
    # one model calls both: `pool`'s frame is compiled for "max", then again for "sum", guarded where it
    # first reads `reduce` (measured below: the recompiles name line 4). FL208 also names `mid`'s line
    # 10, where it passes `reduce` straight on to `pool`: no failed guard is recorded there for this
    # string, but PyG's `to_undirected` recorded `num_nodes == 16` on such a line (`coalesce(..., num_nodes)`)
    together = project(tmp_path / "together", {"pools.py": POOLS, "models.py": HEAD + """
        from pools import mid

        class Both(nn.Module):
            def forward(self, x):
                return mid(x, "max") + mid(x, "sum")
        """})
    assert sorted(at(lint(together), "FL208")) == [("pools.py", 4), ("pools.py", 10)]


def test_fl208_together_lines_are_the_guards_torch_recompiles_on(tmp_path):
    need("torch", "the claim is about torch.compile")
    import sys

    root = project(tmp_path, {"pools.py": POOLS + """

class Both(nn.Module):
    def forward(self, x):
        return mid(x, "max") + mid(x, "sum")
"""})
    sys.path.insert(0, str(root))
    try:
        records = _recompiles(root / "pools.py", {"Both": [(2, 4), (2, 4)]})
    finally:
        sys.path.remove(str(root))
    assert {int(n) for r in records for n in re.findall(r"pools\.py:(\d+) in ", r)} == {4}


def test_which_functions_surely_break_on_cpython_ast():
    from fusionlint.project.summary import summarize

    source = HEAD + """
import logging
logger = logging.getLogger(__name__)


def on_some_path(index, dim_size=None):
    if dim_size is None:
        dim_size = int(index.max()) + 1
    return dim_size


def on_every_call(mask, x):
    if mask.all():
        return x
    return x * 2


def after_a_raise_only_branch(x):
    if x is None:
        raise ValueError("x")
    logger.warning("called")
    return x


def never(x):
    n = int(x.shape[0])
    if x.numel() > 0 and max(1, n) > 1:
        return x
    if not torch.compiler.is_compiling():
        print("eager only")
    return x.sum()


def after_an_early_return(x, flag):
    if flag:
        return x
    print("late")
    return x
"""
    summary = summarize(source, "m.py", "m", False)
    got = {q: (f.breaks, f.break_line) for q, f in summary.functions.items()}
    assert got == {
        "on_some_path": (1, 10), "on_every_call": (2, 15), "after_a_raise_only_branch": (2, 23), "never": (0, 0),
        "after_an_early_return": (1, 39),
    }

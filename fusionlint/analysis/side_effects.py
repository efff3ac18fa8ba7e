"""print/logging/time/warnings/debugger calls Dynamo cannot trace: the check FL104 reports in compiled
code and FL108 inside ``autograd.Function`` bodies (one construct gives one finding: FL104 skips those).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from fusionlint.semantic.is_compiling import skipped_while_compiling
from fusionlint.analysis.judge import Found
from fusionlint.project.summary import is_logger_factory as _is_logger_factory
from fusionlint.rule import Applicability

# qualified name -> (graph-break id measured on torch 2.13.0+cpu, advice)
_CALLS: dict[str, tuple[str, str]] = {
    "print": ("GB0059", "guard it with `if not torch.compiler.is_compiling():` or remove it"),
    "breakpoint": ("GB0059", "debug the eager model instead"),
    "pdb.set_trace": ("GB0007", "debug the eager model instead"),
    "warnings.warn": ("GB0007", "guard it with `if not torch.compiler.is_compiling():` or warn outside forward"),
    "sys.stdout.write": ("GB0156", "guard it with `if not torch.compiler.is_compiling():` or remove it"),
    "sys.stderr.write": ("GB0156", "guard it with `if not torch.compiler.is_compiling():` or remove it"),
    "torch.cuda.synchronize": (
        "GB0007",
        "it is also a full device sync (measured on an H200, torch 2.11); synchronize outside the compiled model",
    ),
}
_TIME = ("time", "perf_counter", "monotonic", "time_ns", "perf_counter_ns", "process_time")
for _fn in _TIME:
    _CALLS[f"time.{_fn}"] = ("GB0007", "time the compiled call from outside (the timer runs eagerly between graphs)")
_LOG_FUNCS = ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")
for _fn in _LOG_FUNCS:
    _CALLS[f"logging.{_fn}"] = ("GB4841", "guard it with `if not torch.compiler.is_compiling():` or log outside forward")
# Any method called on a logging.Logger breaks (GB0291): Dynamo's logger variable refuses every
# method, not only the logging ones. Measured on torch 2.13.0 CPU: info, warning, debug, error,
# isEnabledFor, setLevel, getEffectiveLevel, and methods patched onto Logger the way transformers
# adds `warning_once` (an lru_cache'd function) and `warning_advice` (a plain one).
def _last_name(expr: cst.BaseExpression) -> str:
    return expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""


class SideEffectChecker:
    """Finds untraceable side-effect calls; FL104 reports them outside autograd.Function bodies."""

    @staticmethod
    def loggers(ctx) -> tuple[frozenset[str], frozenset[str]]:
        """(names, self attributes) bound to ``logging.getLogger(...)`` anywhere in the file."""
        return ctx.memo("loggers", lambda: _loggers(ctx))

    def describe(self, node: cst.Call, ctx) -> Optional[tuple[str, str, str]]:
        """(label, graph-break id, advice) when ``node`` is a side-effect call Dynamo cannot trace."""
        func = node.func
        qual = ctx.qualname(func) or ""
        if qual in _CALLS:
            gb, advice = _CALLS[qual]
            return f"{qual}()", gb, advice
        if isinstance(func, cst.Attribute):
            receiver = func.value
            names, attrs = self.loggers(ctx)
            is_logger = (
                (isinstance(receiver, cst.Name) and receiver.value in names)
                or (
                    isinstance(receiver, cst.Attribute)
                    and isinstance(receiver.value, cst.Name)
                    and receiver.value.value == "self"
                    and receiver.attr.value in attrs
                )
                or (
                    isinstance(receiver, cst.Call)
                    and isinstance(receiver.func, (cst.Attribute, cst.Name))
                    and _last_name(receiver.func) in ("getLogger", "get_logger")
                    and _is_logger_factory(ctx.qualname(receiver.func) or "")
                )
            )
            if is_logger:
                label = f"{ctx.code(receiver).strip()}.{func.attr.value}()"
                if isinstance(receiver, cst.Call):
                    label = f"Logger.{func.attr.value}()"
                return label, "GB0291", "guard it with `if not torch.compiler.is_compiling():` or log outside forward"
        return None

    @staticmethod
    def guarded(node: cst.CSTNode, ctx) -> bool:
        """In code Dynamo never traces (``fusionlint.semantic.is_compiling``)."""
        return skipped_while_compiling(ctx.iter_parents(), ctx.qualname, node)

    def check_Call(self, node: cst.Call, ctx) -> list[Found]:
        described = self.describe(node, ctx)
        if described is None or self.guarded(node, ctx):
            return []
        label, gb, advice = described
        message = f"`{label}` inside compiled code: Dynamo cannot trace it: graph break ({gb}); {advice}"
        return [(node, message, self._guard_fix(node, ctx))]

    @staticmethod
    def _guard_fix(node: cst.Call, ctx):
        """Wrap the statement ``<call>`` in ``if not torch.compiler.is_compiling():``."""
        torch = ctx.alias_for("torch")
        parents = ctx.parents
        if torch is None or len(parents) < 3:
            return None
        expr, line, block = parents[0], parents[1], parents[2]
        if not (isinstance(expr, cst.Expr) and expr.value is node):
            return None
        if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(block, cst.IndentedBlock)):
            return None
        indent = ctx.indent()
        unit = ctx.module.default_indent
        # code_for_node renders continuation lines without the enclosing block's indentation: put it
        # back, one level deeper. Lines inside a multi-line string must not move: no fix for those.
        code = ctx.code(node).strip()
        if "\n" in code and ('"""' in code or "'''" in code):
            return None
        code = code.replace("\n", "\n" + indent + unit)
        text = f"if not {torch}.compiler.is_compiling():\n{indent}{unit}{code}"
        return ctx.fix(
            Applicability.UNSAFE,
            ctx.replace(expr, text),
            title="Run it only in eager mode (`if not torch.compiler.is_compiling():`)",
        )


def _loggers(ctx) -> tuple[frozenset[str], frozenset[str]]:
    names: set[str] = set()
    attrs: set[str] = set()
    for node in ctx.nodes(cst.Assign):
        if not (isinstance(node.value, cst.Call) and _is_logger_factory(ctx.qualname(node.value.func) or "")):
            continue
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Name):
                names.add(t.value)
            elif isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                attrs.add(t.attr.value)
    # `from .utils import logger`: a name another project file binds to a logger (the project model
    # resolves the import, re-exports included)
    model = ctx.model
    summary = model.files.get(ctx.path) if model is not None else None
    if summary is not None:
        for local, target in summary.aliases.items():
            if local not in names and model.binds_logger(target):
                names.add(local)
    return frozenset(names), frozenset(attrs)

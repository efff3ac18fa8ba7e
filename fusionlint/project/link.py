"""Hand the project model's facts to one parsed file's FileIndex (the libcst side the rules read).

After the per-file pass (``mark_compiled``) has done what one file shows, this adds what only the
project knows: attributes a class gets from its bases and subclasses in any file, the kind of a
class whose base lives elsewhere, functions compiled because code in another file (or a callable
attribute) reaches them, and parameters that are tensors because a compiled caller passes one.
"""

from __future__ import annotations

from fusionlint.analysis.index import FileIndex
from fusionlint.project.model import MODULE_KINDS, Project
from fusionlint.project.reasons import render


def function_view(model: Project, facts) -> dict:
    """What a compiled function's ``FunctionInfo`` takes from its propagated facts: field -> value, the
    reasons rendered with the lines of the places they name now (the facts hold none: ``reasons.At``).
    The editor's memo (``fusionlint.incremental``) compares the same values."""
    line_of = lambda at: model.site_line(at.path, at.qualname, at.site)  # noqa: E731
    entry_reason = f"parameter of {facts.chain}"
    return {
        "tensor_params": {n: render(why, line_of) for n, why in facts.tensor_params.items() if why != entry_reason},
        "tensor_calls": facts.tensor_calls,
        "item_calls": facts.item_calls,
        "passthrough_calls": facts.passthrough_calls,
        "constants": {n: c for n, c in facts.constants.items() if c is not None},
        "varying": {n: render(how, line_of) for n, how in facts.varying.items()} if facts.varying else {},
        "splits": render(facts.splits, line_of) if facts.splits is not None else None,
        "breaking_calls": facts.breaking_calls,
        "host_calls": facts.host_calls,
        "sparse_calls": facts.sparse_calls,
        "size_calls": facts.size_calls or {},
        "shared_by": tuple([(qual, where, render(why, line_of)) for qual, where, why in facts.shared_by]),
    }


def apply_project(index: FileIndex, model: Project, path: str) -> None:
    summary = model.files.get(path)
    if summary is None:
        return
    index.tensor_classes = model.tensor_classes(summary)
    for name, info in index.classes.items():
        cls = summary.classes.get(name)
        if cls is None:
            continue
        if info.kind is None:
            info.kind = model.class_kind(summary, cls)
        info.submodule_ctors = model.submodule_ctors(summary, cls)
        # asked only where a finding shows it: see Project.submodule_set_at
        info.submodule_set_at = lambda attr, ctor, summary=summary, cls=cls: model.submodule_set_at(summary, cls, attr, ctor)
        # (the facts' kinds only)
        for attr, facts in model.attributes(summary, cls).items():
            if attr in info.submodules or attr in info.params or attr in info.buffers or attr in info.tensor_attrs:
                continue  # the class's own __init__ said what it is
            for _, fact in facts:
                if fact.kind == "param":
                    info.params.add(attr)
                elif fact.kind == "buffer":
                    info.buffers.add(attr)
                elif fact.kind == "tensor" and fact.method == "__init__":
                    info.tensor_attrs.add(attr)
                elif fact.kind in MODULE_KINDS and fact.ctor:
                    info.submodules[attr] = fact.ctor
                else:
                    continue
                break
        # what unpacking each submodule's output binds (`x, mask, sizes, freqs = self.patch_embed(x)`)
        for attr in info.submodules:
            items = model.submodule_items(summary, cls, attr)
            if items is not None and items[1]:
                info.submodule_items[attr] = items
    for qual, fn in index.functions.items():
        facts = model.function_facts(path, qual)
        if facts is None:
            continue
        if fn.frames is None or facts.shared_by:
            # a wrapper shared by breaking functions: the chain from their common caller (FL209), the
            # module whose compile shows its recompiles
            fn.frames, fn.kind = facts.frames, facts.kind
        for name, value in function_view(model, facts).items():
            setattr(fn, name, value)
    # nested functions are traced with their parent
    for fn in index.functions.values():
        if fn.frames is None:
            parent = fn.parent
            while parent is not None and parent.frames is None:
                parent = parent.parent
            if parent is not None:
                fn.frames, fn.kind = parent.frames, "helper"

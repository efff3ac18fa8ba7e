"""The inputs under which a finding's break happens, as its message states them.

Three input forms exist: FL102's dtype precondition ("when `x.dtype == torch.float16` holds", from
``control_flow``), its configuration precondition ("when `self.config.rope_type != "default"` holds
(Dynamo reads the configuration...)", also ``control_flow``) and FL103's dynamic sizes ("once `n` is a
dynamic size", from ``dynamic_shapes``).
Both producers build their phrase from the helpers here, and readers (``every_iteration``; the recall
bench's per-condition passes) recognise it with ``states_condition``, so the wording lives in one place.
A fourth form is no input: a finding after a loop whose every iteration breaks, or after a break that
leaves a sparse tensor in the frame, runs eagerly today (``shadowed_condition``, from ``every_iteration``).
"""

from __future__ import annotations

import re

_DTYPE = re.compile(r"when `[^`]*\.dtype[^`]*` holds")
_CONFIG = re.compile(r"when `[^`]*` holds \(Dynamo reads the configuration")
_DYNAMIC = re.compile(r"once `[^`]+`(?:, `[^`]+`)* (?:is|are) a dynamic size")


def dtype_condition(test: str) -> str:
    """The message part for a break reached only when the dtype test ``test`` holds."""
    return (
        f" when `{test}` holds (Dynamo knows the dtype while tracing: otherwise the "
        "tensor part is never evaluated and nothing breaks)"
    )


def config_condition(test: str) -> str:
    """The message part for a break reached only when the configuration test ``test`` holds."""
    return (
        f" when `{test}` holds (Dynamo reads the configuration while tracing: otherwise the tensor part is "
        "never evaluated and nothing breaks)"
    )


def dynamic_condition(names: list[str]) -> str:
    """The message part for a break that happens only once ``names`` are dynamic sizes."""
    which = ", ".join(f"`{n}`" for n in names)
    return f"once {which} {'are' if len(names) > 1 else 'is'} a dynamic size"


# A finding in code that Dynamo runs eagerly today, because a loop before it breaks on every
# iteration, or a break before it ends the frame (``every_iteration``): it holds once that break is gone. Not an input condition:
# ``states_condition`` does not count it.
_SHADOWED = re.compile(r"not today: Dynamo runs this line eagerly")


LOOP_SKIPS_FRAME = "inside a loop before it makes Dynamo skip the rest of the frame"
SPARSE_SKIPS_FRAME = "before it leaves a sparse tensor in the frame, and Dynamo skips the rest of it"


def shadowed_condition(lines_placeholder: str, cause: str = LOOP_SKIPS_FRAME) -> str:
    """The message part for a finding after a break that makes Dynamo skip the rest of its frame (a loop
    whose every iteration breaks, or ``cause``); ``lines_placeholder`` becomes that break's line once
    positions are known."""
    return (
        f" (not today: Dynamo runs this line eagerly, since the graph break at line {lines_placeholder} "
        f"{cause}; it applies once that break is gone)"
    )


def states_shadow(message: str) -> bool:
    """Does the finding's message say that its line runs eagerly today (``shadowed_condition``)?"""
    return bool(_SHADOWED.search(message))


def states_condition(message: str) -> bool:
    """Does the finding's message say its break needs a particular input (a dtype, a dynamic size) or
    configuration?"""
    return bool(_DTYPE.search(message) or _DYNAMIC.search(message) or _CONFIG.search(message))

"""The confirm pass: run flagged modules under torch.compile and attach the measured evidence.

Importing this package does not import torch: only the worker processes
(``python -m fusionlint.confirm.worker``) and ``fusionlint.confirm.measure``'s functions do.
"""

from __future__ import annotations

from fusionlint.confirm.orchestrate import (
    INSTALL_HINT,
    ConfirmError,
    UnitResult,
    confirm_findings,
    merge_documents,
    merge_files,
    parse_shard,
)

__all__ = [
    "INSTALL_HINT",
    "ConfirmError",
    "UnitResult",
    "confirm_findings",
    "merge_documents",
    "merge_files",
    "parse_shard",
]

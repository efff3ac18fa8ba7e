"""How long does `--format sarif` take on a big run?

Synthesises 5,000 findings spread over 200 model files (written to a temporary directory, so
the line-hash fingerprints have real files to read), then times ``fusionlint.report.sarif.render``
and its parts. When ``jschema_to_python`` (the package whose ``to_json`` sarif-om's docs
recommend) is importable, it also times that generic serializer on the first 500 results for
comparison.

    python bench/sarif_bench.py [--findings 5000] [--files 200] [--repeat 3]

Target (issue 5): 5,000 results in under 1 s.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fusionlint.registry import all_rules  # noqa: E402
from fusionlint.report import sarif  # noqa: E402
from fusionlint.rule import (  # noqa: E402
    Applicability,
    Edit,
    FileError,
    Finding,
    Fix,
    RunResult,
)

BLOCK = '''\
class Block{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)
        self.threshold = 0.5

    def forward(self, x):
        b = x.shape[0]
        h = self.lin(x).permute(0, 2, 1).view(b, -1)
        if h.sum().item() > self.threshold:  # «données» ü
            h = h * 2
        return h.view(b, 32, -1)

'''


def synthesise(root: Path, n_findings: int, n_files: int) -> RunResult:
    rules = all_rules()
    codes = sorted(rules)
    per_file = -(-n_findings // n_files)
    findings: list[Finding] = []
    for f in range(n_files):
        rel = f"models/pkg{f % 10}/model_{f:03d}.py"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        header = "import torch\nfrom torch import nn\n\n\n"
        path.write_text(header + "".join(BLOCK.format(i=i) for i in range(per_file)), encoding="utf-8")
        for i in range(per_file):
            if len(findings) == n_findings:
                break
            base = 4 + i * BLOCK.count("\n")  # lines before this block
            code = codes[i % len(codes)]
            rule = rules[code]
            if i % 2:
                line, col, end = base + 9, 13, 48  # .permute(...).view(...)
                fix = Fix(Applicability.SAFE, (Edit(line, 42, line, 46, "reshape"),), "Use `.reshape()`")
            else:
                line, col, end = base + 10, 12, 28  # h.sum().item()
                fix = None
            findings.append(
                Finding(
                    path=rel, line=line, column=col, end_line=line, end_column=end, code=code,
                    name=rule.name, message=f"{rule.message} (block {i})", effects=rule.effects,
                    severity=rule.severity, context=f"Block{i}.forward", fix=fix,
                    confirmation={"status": "confirmed", "graph_breaks": 1} if i % 7 == 0 else None,
                )
            )
    errors = [FileError(path="models/broken.py", message="syntax error: invalid syntax", line=3, column=1)]
    return RunResult(findings=findings, errors=errors, files_checked=n_files + 1)


def best_of(repeat: int, fn):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--findings", type=int, default=5000)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rules = all_rules()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        result = synthesise(root, args.findings, args.files)
        kw = dict(rules=rules, root=root, tool_version="bench")

        t_render, text = best_of(args.repeat, lambda: sarif.render(result, **kw))
        t_build, log = best_of(args.repeat, lambda: sarif.build_log(result, **kw))
        t_data, data = best_of(args.repeat, lambda: sarif.to_data(log))
        t_dump, _ = best_of(args.repeat, lambda: sarif.dumps(data))

        def hash_all():
            return [sarif.line_hashes((root / p).read_text(encoding="utf-8"))
                    for p in sorted({f.path for f in result.findings})]

        t_hash, _ = best_of(args.repeat, hash_all)
        n_results = len(json.loads(text)["runs"][0]["results"])
        mb = len(text.encode()) / 1e6

        print(f"python {platform.python_version()} on {platform.machine()}, best of {args.repeat}")
        print(f"{'step':<44}{'results':>9}{'seconds':>10}{'MB':>8}")
        print(f"{'render() total':<44}{n_results:>9}{t_render:>10.3f}{mb:>8.2f}")
        print(f"{'  build_log (sarif_om objects + hashes)':<44}{n_results:>9}{t_build:>10.3f}{'':>8}")
        print(f"{'    of which line hashes, ' + str(args.files) + ' files':<44}{'':>9}{t_hash:>10.3f}{'':>8}")
        print(f"{'  to_data (our serializer)':<44}{n_results:>9}{t_data:>10.3f}{'':>8}")
        print(f"{'  dumps (JSON text, one line per result)':<44}{n_results:>9}{t_dump:>10.3f}{'':>8}")

        try:
            from jschema_to_python.to_json import to_json
        except ImportError:
            print("jschema_to_python not installed: generic to_json comparison skipped "
                  "(pip install jschema-to-python to run it)")
            return
        small = RunResult(findings=result.findings[:500], errors=result.errors)
        small_log = sarif.build_log(small, **kw)
        t_generic, generic = best_of(1, lambda: to_json(small_log))
        t_ours, ours = best_of(args.repeat, lambda: sarif.render(small, **kw))
        generic_warning = generic.count('"level": "warning"')
        ours_warning = ours.count('"level": "warning"')
        print(f"{'jschema_to_python.to_json (generic)':<44}{500:>9}{t_generic:>10.3f}{len(generic.encode()) / 1e6:>8.2f}"
              f"   'level: warning' written {generic_warning}x")
        print(f"{'render() (ours)':<44}{500:>9}{t_ours:>10.3f}{len(ours.encode()) / 1e6:>8.2f}"
              f"   'level: warning' written {ours_warning}x")


if __name__ == "__main__":
    main()

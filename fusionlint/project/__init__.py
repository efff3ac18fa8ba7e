"""The project of files: per-file summaries (CPython ``ast``), imports, classes, attribute facts,
the call graph and the compiled context that propagates along it across files.

``summary`` builds one FileSummary per file; ``model.Project`` links them.
"""

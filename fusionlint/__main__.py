"""``python -m fusionlint``: the same command line as the ``fusionlint`` script (useful where the
script is not on PATH, e.g. a device image with packages on PYTHONPATH)."""

from fusionlint.cli import entry

if __name__ == "__main__":
    entry(prog_name="fusionlint")
